package engine

import (
	"context"
	"encoding/json"
	"errors"
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
func (h *handle) callTask(ctx context.Context, tool *Tool, args json.RawMessage, token string, req *CallRequest) (*CallResult, error) {
	e := h.s.e
	name := h.s.cfg().Name
	caller := ctx // its deadline is the caller's; TimeoutMs's is not
	if req.TimeoutMs > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMs)*time.Millisecond)
		defer cancel()
	}
	perRequest := h.s.requestTimeout(0)
	raw, err := h.do(withTask(ctx, taskTTL), "tools/call", "the call to "+tool.Name(), perRequest, func(ctx context.Context) (any, error) {
		params := &mcp.CallToolParams{Name: tool.Tool, Arguments: args}
		params.SetProgressToken(token)
		return h.cs.CallTool(ctx, params)
	})
	if err != nil {
		return nil, h.taskGaveUp(caller, ctx, err, nil, tool)
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
			return nil, h.taskGaveUp(caller, ctx, ctx.Err(), t, tool)
		case <-time.After(pollInterval(t.PollInterval)):
		}
		raw, err := h.do(ctx, "tasks/get", "polling task "+t.TaskID, perRequest, func(ctx context.Context) (any, error) {
			return mcp.CallCustomMethod[*taskParams, *anyResult](ctx, h.cs, "tasks/get", &taskParams{TaskID: t.TaskID})
		})
		if err != nil {
			return nil, h.taskGaveUp(caller, ctx, err, t, tool)
		}
		var next task
		if json.Unmarshal(raw, &next) != nil || next.Status == "" {
			return nil, errorf(KindProtocol, name, "server %s answered tasks/get for %s with no status", name, t.TaskID)
		}
		if next.Status != t.Status || next.StatusMessage != t.StatusMessage {
			t.Status, t.StatusMessage = next.Status, next.StatusMessage
			report()
		}
		t.PollInterval = next.PollInterval
	}
	if t.Status == "cancelled" {
		return nil, errorf(KindProtocol, name, "the task of %s was cancelled on the server%s", tool.Name(), trimmedPrefix(": ", t.StatusMessage))
	}
	// tasks/result blocks until the task ends: no per-request bound.
	wait := time.Duration(1<<62 - 1)
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d)
	}
	raw, err = h.do(ctx, "tasks/result", "the result of task "+t.TaskID, wait, func(ctx context.Context) (any, error) {
		return mcp.CallCustomMethod[*taskParams, *anyResult](ctx, h.cs, "tasks/result", &taskParams{TaskID: t.TaskID})
	})
	if err != nil {
		return nil, h.taskGaveUp(caller, ctx, err, t, tool)
	}
	return callResult(name, tool, raw)
}

// taskGaveUp cancels the task on the server when the caller gave up, and
// explains why.
func (h *handle) taskGaveUp(caller, ctx context.Context, err error, t *task, tool *Tool) error {
	if t != nil && ctx.Err() != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		mcp.CallCustomMethod[*taskParams, *anyResult](cctx, h.cs, "tasks/cancel", &taskParams{TaskID: t.TaskID})
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		e := errorf(KindTimeout, h.s.cfg().Name, "the task of %s did not finish in time; it was cancelled", tool.Name()).
			hint("give it longer with --timeout")
		if errors.Is(caller.Err(), context.DeadlineExceeded) {
			// errors.Is finds the caller's deadline, and only it, as
			// for a call that is no task.
			e.wrap(caller.Err())
		}
		return e
	}
	return err
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
