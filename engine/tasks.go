package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tasks (MCP 2025-11-25, experimental) are not in the SDK. A task-augmented
// tools/call goes through the SDK with its params rewritten by the capture
// connection (see [withTask]); tasks/get, tasks/result and tasks/cancel are
// sent as the SDK's custom methods, which it allows because it does not
// know them.

// taskParams are the params of tasks/get, tasks/result and tasks/cancel.
type taskParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

// anyResult accepts any result; mcpctl reads the raw one from the capture.
type anyResult struct{ mcp.ResultBase }

// A task is the state of a task as the server reports it.
type task struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
	PollInterval  int64  `json:"pollInterval"`
}

func (t *task) terminal() bool {
	return t.Status == "completed" || t.Status == "failed" || t.Status == "cancelled"
}

// taskTTL is the lifetime mcpctl asks for its tasks: long enough to poll a
// long job to its end, short enough that an abandoned one is cleaned up.
const taskTTL = int64(time.Hour / time.Millisecond)

func registerTaskMethods(c *mcp.Client) {
	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		mcp.AddSendingCustomMethod[*taskParams, *anyResult](c, m)
	}
}

// callTask runs a tool as a task: it creates the task, polls it (reporting
// its status as progress) until it ends, and returns tasks/result. When the
// caller gives up, the task is cancelled on the server.
//
// TimeoutMs counts from the task's last sign of life, as a call's timeout
// does from its last progress, up to progressCap times it in all: a change
// of its status or statusMessage, or a progress notification for it. A
// poll that finds it as it was is none: a task stuck "working" times out.
// Time its caller spends answering its questions (call's) counts toward
// neither.
func (h *handle) callTask(ctx context.Context, tool *Tool, args json.RawMessage, token string, req *CallRequest, call *asker) (*CallResult, error) {
	e := h.s.e
	name := h.s.cfg().Name
	caller := ctx      // its deadline is the caller's; TimeoutMs's is not
	var life *deadline // TimeoutMs's; nil without one (extend is then a no-op)
	if req.TimeoutMs > 0 {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		life = newDeadline(time.Duration(req.TimeoutMs)*time.Millisecond, func() { cancel(errTimedOut) })
		defer life.stop()
		defer e.alsoOnProgress(token, func(Progress) { life.extend() })()
		call.hold = func() (resume func()) {
			request, task := h.holdDeadline(), life.hold()
			return func() { task(); request() }
		}
	}
	defer h.s.askers.add(call)()
	perRequest := h.s.requestTimeout(0)
	raw, err := h.do(withTask(ctx, taskTTL), "tools/call", "the call to "+tool.Name(), perRequest, func(ctx context.Context) (any, error) {
		params := &mcp.CallToolParams{Name: tool.Tool, Arguments: args}
		params.SetProgressToken(token)
		return h.cs.CallTool(ctx, params)
	})
	if err != nil {
		return nil, h.taskGaveUp(caller, ctx, err, nil, tool, life)
	}
	var created struct {
		Task *task `json:"task"`
	}
	if json.Unmarshal(raw, &created) != nil || created.Task == nil || created.Task.TaskID == "" {
		// The server ran it as a plain call (it may ignore task params).
		return callResult(name, tool, raw)
	}
	t := created.Task
	report := func() {
		p := Progress{Status: t.Status, Message: t.StatusMessage, TaskID: t.TaskID}
		if req.OnProgress != nil {
			req.OnProgress(p)
		}
		e.bus.publish(Event{Type: EventProgress, Server: name, Token: t.TaskID, Message: t.Status + trimmedPrefix(": ", t.StatusMessage)})
	}
	report()
	// Poll until the task ends. On input_required the spec says to ask for
	// the result at once; tasks/result then blocks until the task ends.
	for !t.terminal() && t.Status != "input_required" {
		select {
		case <-ctx.Done():
			return nil, h.taskGaveUp(caller, ctx, ctx.Err(), t, tool, life)
		case <-time.After(pollInterval(t.PollInterval)):
		}
		raw, err := h.do(ctx, "tasks/get", "polling task "+t.TaskID, perRequest, func(ctx context.Context) (any, error) {
			return mcp.CallCustomMethod[*taskParams, *anyResult](ctx, h.cs, "tasks/get", &taskParams{TaskID: t.TaskID})
		})
		if err != nil {
			return nil, h.taskGaveUp(caller, ctx, err, t, tool, life)
		}
		var next task
		if json.Unmarshal(raw, &next) != nil || next.Status == "" {
			return nil, errorf(KindProtocol, name, "server %s answered tasks/get for %s with no status", name, t.TaskID)
		}
		if next.Status != t.Status || next.StatusMessage != t.StatusMessage {
			t.Status, t.StatusMessage = next.Status, next.StatusMessage
			life.extend() // a sign of life; the same status again is none
			report()
		}
		t.PollInterval = next.PollInterval
	}
	if t.Status == "cancelled" {
		return nil, errorf(KindProtocol, name, "the task of %s was cancelled on the server%s", tool.Name(), trimmedPrefix(": ", t.StatusMessage))
	}
	// tasks/result blocks until the task ends: no per-request bound (life
	// still ends it, unless progress keeps it going).
	wait := time.Duration(1<<62 - 1)
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d)
	}
	raw, err = h.do(ctx, "tasks/result", "the result of task "+t.TaskID, wait, func(ctx context.Context) (any, error) {
		return mcp.CallCustomMethod[*taskParams, *anyResult](ctx, h.cs, "tasks/result", &taskParams{TaskID: t.TaskID})
	})
	if err != nil {
		return nil, h.taskGaveUp(caller, ctx, err, t, tool, life)
	}
	return callResult(name, tool, raw)
}

// taskGaveUp cancels the task on the server when the caller gave up, and
// explains why. life is the task's timeout (TimeoutMs), or nil.
func (h *handle) taskGaveUp(caller, ctx context.Context, err error, t *task, tool *Tool, life *deadline) error {
	var e *Error
	switch {
	case life != nil && context.Cause(ctx) == errTimedOut:
		// Worded as a call's timeout is (see explain), before the
		// cancellation below is sent (it may take up to 5 s).
		timeout := life.timeout
		gone := fmt.Sprintf("the task of %s did not finish in time; it was cancelled", tool.Name())
		switch capped, ran := life.reachedCap(); {
		case capped:
			e = errorf(KindTimeout, h.s.cfg().Name, "%s after %s, the longest progress keeps a task with a %s timeout going (%d times it)", gone, ran.Round(100*time.Millisecond), timeout, progressCap).
				hint("give it longer with --timeout: progress keeps it going up to %d times that, e.g. --timeout %s for %s", progressCap, 2*timeout, 2*progressCap*timeout)
		case life.extended():
			e = errorf(KindTimeout, h.s.cfg().Name, "%s %s after its last sign of life", gone, timeout).
				hint("give it longer with --timeout, e.g. --timeout %s", 2*timeout)
		default:
			e = errorf(KindTimeout, h.s.cfg().Name, "%s after %s without a sign of life", gone, timeout).
				hint("give it longer with --timeout, e.g. --timeout %s", 2*timeout)
		}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		e = errorf(KindTimeout, h.s.cfg().Name, "the task of %s did not finish in time; it was cancelled", tool.Name()).
			hint("give it longer with --timeout")
		if errors.Is(caller.Err(), context.DeadlineExceeded) {
			// errors.Is finds the caller's deadline, and only it, as
			// for a call that is no task.
			e.wrap(caller.Err())
		}
	}
	if t != nil && ctx.Err() != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		mcp.CallCustomMethod[*taskParams, *anyResult](cctx, h.cs, "tasks/cancel", &taskParams{TaskID: t.TaskID})
	}
	if e != nil {
		return e
	}
	return err
}

// alsoOnProgress has the progress notifications for token call fn too,
// before what they did, until stop; stop gives back what they did (unless
// that was taken away meanwhile).
func (e *Engine) alsoOnProgress(token string, fn func(Progress)) (stop func()) {
	e.progressMu.Lock()
	prev := e.progressFn[token]
	e.progressFn[token] = func(p Progress) {
		fn(p)
		if prev != nil {
			prev(p)
		}
	}
	e.progressMu.Unlock()
	return func() {
		e.progressMu.Lock()
		defer e.progressMu.Unlock()
		if _, ok := e.progressFn[token]; !ok {
			return
		}
		if prev != nil {
			e.progressFn[token] = prev
		} else {
			delete(e.progressFn, token)
		}
	}
}

// pollInterval follows the server's suggestion, within reason.
func pollInterval(ms int64) time.Duration {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d <= 0:
		return time.Second
	case d < 100*time.Millisecond:
		return 100 * time.Millisecond
	case d > 5*time.Second:
		return 5 * time.Second
	}
	return d
}

func trimmedPrefix(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}
