package fakemcp

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tasks (MCP 2025-11-25) as a receiver does them, for tools with a
// TaskSupport: a task-augmented call answers at once with the task, the
// work (Sleep, then the tool's answer) runs on, and tasks/get, tasks/result
// and tasks/cancel follow the spec. A task tool's Progress is not
// notifications but steps of its status: its statusMessage becomes "step i
// of n" at each, Sleep apart (so the work takes Progress times Sleep); a
// task without it says "started" until it ends. A task tool's Elicit is
// asked once the steps are done, with the task input_required meanwhile.

type fakeTask struct {
	id      string
	created time.Time
	status  string
	message string
	result  json.RawMessage // the CallToolResult, once done
	done    chan struct{}
	cancel  context.CancelFunc
}

func (t *fakeTask) wire() map[string]any {
	return map[string]any{
		"taskId": t.id, "status": t.status, "statusMessage": t.message,
		"createdAt": t.created.UTC().Format(time.RFC3339), "lastUpdatedAt": time.Now().UTC().Format(time.RFC3339),
		"ttl": 60000, "pollInterval": 50,
	}
}

// callAsTask answers a tools/call that is, or must be, a task; it reports
// whether it answered.
func (f *fake) callAsTask(ctx context.Context, c *conn, req *jsonrpc.Request) bool {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Task      *struct{}       `json:"task"`
	}
	json.Unmarshal(req.Params, &p)
	t, ok := f.tool(p.Name)
	switch {
	case !ok || t.TaskSupport == "" || t.TaskSupport == "forbidden":
		return false
	case p.Task == nil && t.TaskSupport == "required":
		c.reply(ctx, req.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Tool " + p.Name + " requires task augmentation"})
		return true
	case p.Task == nil:
		return false
	}
	f.logCall(map[string]any{"tool": t.Name, "arguments": p.Arguments, "task": true})
	work, cancel := context.WithCancel(context.Background())
	f.mu.Lock()
	f.taskSeq++
	task := &fakeTask{id: fmt.Sprintf("task-%d", f.taskSeq), created: time.Now(), status: "working", message: "started", done: make(chan struct{}), cancel: cancel}
	f.tasks[task.id] = task
	f.mu.Unlock()
	c.reply(ctx, req.ID, map[string]any{"task": task.wire()}, nil)
	go func() {
		d, _ := time.ParseDuration(t.Sleep)
		steps := max(t.Progress, 1)
		for i := 1; i <= steps; i++ {
			select {
			case <-time.After(d):
			case <-work.Done():
				return
			}
			if t.Progress > 0 && i < steps {
				f.mu.Lock()
				if task.status == "working" {
					task.message = fmt.Sprintf("step %d of %d", i, steps)
				}
				f.mu.Unlock()
			}
		}
		answer := string(p.Arguments)
		if t.Elicit != nil {
			// input_required while the client answers, over the
			// session's stream, as the spec has a task ask.
			f.mu.Lock()
			task.status, task.message = "input_required", t.Elicit.Message
			f.mu.Unlock()
			var schema any
			if t.Elicit.RequestedSchema != nil {
				schema = t.Elicit.RequestedSchema
			}
			for ss := range f.srv.Sessions() {
				res, err := ss.Elicit(work, &mcp.ElicitParams{Message: t.Elicit.Message, RequestedSchema: schema})
				if err != nil {
					answer = "elicitation failed: " + err.Error()
				} else {
					out, _ := json.Marshal(res)
					answer = string(out)
				}
			}
			f.mu.Lock()
			if task.status == "input_required" {
				task.status, task.message = "working", "answered"
			}
			f.mu.Unlock()
		}
		res := map[string]any{"content": []map[string]any{{"type": "text", "text": answer}}}
		status := "completed"
		if t.Error != "" {
			res = map[string]any{"isError": true, "content": []map[string]any{{"type": "text", "text": t.Error}}}
			status = "failed"
		}
		res["_meta"] = map[string]any{"io.modelcontextprotocol/related-task": map[string]string{"taskId": task.id}}
		f.mu.Lock()
		if task.status == "working" {
			task.status, task.message = status, "done"
			task.result, _ = json.Marshal(res)
			close(task.done)
		}
		f.mu.Unlock()
	}()
	return true
}

func (f *fake) taskRequest(ctx context.Context, c *conn, req *jsonrpc.Request) {
	var p struct {
		TaskID string `json:"taskId"`
	}
	json.Unmarshal(req.Params, &p)
	f.mu.Lock()
	task := f.tasks[p.TaskID]
	f.mu.Unlock()
	if task == nil {
		c.reply(ctx, req.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found"})
		return
	}
	switch req.Method {
	case "tasks/get":
		f.mu.Lock()
		w := task.wire()
		f.mu.Unlock()
		c.reply(ctx, req.ID, w, nil)
	case "tasks/cancel":
		f.mu.Lock()
		if task.status != "working" && task.status != "input_required" {
			f.mu.Unlock()
			c.reply(ctx, req.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "task is already " + task.status})
			return
		}
		task.status, task.message = "cancelled", "cancelled by request"
		task.cancel()
		close(task.done)
		w := task.wire()
		f.mu.Unlock()
		f.logCall(map[string]any{"taskCancelled": task.id})
		c.reply(ctx, req.ID, w, nil)
	case "tasks/result":
		<-task.done
		f.mu.Lock()
		status, result := task.status, task.result
		f.mu.Unlock()
		if status == "cancelled" {
			c.reply(ctx, req.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "task was cancelled"})
			return
		}
		c.reply(ctx, req.ID, result, nil)
	}
}
