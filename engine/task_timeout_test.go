package engine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/internal/fakemcp"
)

// taskSpec is a fake server that runs tasks: steps changes its
// statusMessage every 300ms and ends after 1.5s; forever stays "working"
// with nothing new to say.
func taskSpec(callLog string) fakemcp.Spec {
	return fakemcp.Spec{ProtocolVersion: "2025-11-25", Tasks: true, CallLog: callLog, Tools: []fakemcp.Tool{
		{Name: "steps", TaskSupport: "required", Progress: 5, Sleep: "300ms"},
		{Name: "forever", TaskSupport: "required", Sleep: "1h"},
	}}
}

// A task's timeout counts from its last sign of life, as a call's does: a
// status message that changes every 300ms keeps a task with a 700ms
// timeout going to its end at 1.5s.
func TestTaskTimeoutFromLastStatusChange(t *testing.T) {
	e := startOne(t, "srv", taskSpec(""))
	var mu sync.Mutex
	var seen []string
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.steps", TimeoutMs: 700, OnProgress: func(p Progress) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, p.Status+" "+p.Message)
	}})
	if err != nil {
		t.Fatalf("a task whose status changes every 300ms timed out with a 700ms timeout: %v", err)
	}
	if res.IsError || !strings.Contains(string(res.Result), "related-task") {
		t.Errorf("result: %s", res.Result)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(strings.Join(seen, "\n"), "working step 4 of 5") || seen[len(seen)-1] != "completed done" {
		t.Errorf("statuses shown: %q", seen)
	}
}

// A task stuck "working" times out though polling answers all along: the
// same status again is no sign of life. It is cancelled on the server,
// and the hint gives a timeout to try, as a call's does.
func TestTaskTimeoutStuckWorking(t *testing.T) {
	callLog := filepath.Join(t.TempDir(), "calls.log")
	e := startOne(t, "srv", taskSpec(callLog))
	t0 := time.Now()
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.forever", TimeoutMs: 500})
	if ran := time.Since(t0); ran > 15*time.Second {
		t.Errorf("the stuck task ran %s with a 500ms timeout", ran)
	}
	if KindOf(err) != KindTimeout {
		t.Fatalf("a stuck task: %v (kind %q), want a timeout", err, KindOf(err))
	}
	if !strings.Contains(err.Error(), "the task of srv.forever did not finish in time; it was cancelled after 500ms without a sign of life") {
		t.Errorf("message: %v", err)
	}
	var ee *Error
	if !errors.As(err, &ee) || !strings.Contains(strings.Join(ee.Hint, "\n"), "give it longer with --timeout, e.g. --timeout 1s") {
		t.Errorf("hint: %+v", ee)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Errorf("the call's own timeout reads as the caller's context ending: %v", err)
	}
	if data, _ := os.ReadFile(callLog); !strings.Contains(string(data), `"taskCancelled":"task-1"`) {
		t.Errorf("the task was not cancelled on the server; calls:\n%s", data)
	}
	// The server stays usable.
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.steps", TimeoutMs: 700}); err != nil {
		t.Errorf("a task after the timeout: %v", err)
	}
}

// A progress notification for a task is a sign of life too, up to 10
// times the timeout in all, as for a call; the caller still gets each.
func TestTaskTimeoutProgressNotifications(t *testing.T) {
	e := startOne(t, "srv", taskSpec(""))
	var mu sync.Mutex
	got := 0
	done := make(chan struct{})
	defer close(done)
	go func() {
		// The server's notifications, as they arrive, for the call's
		// token (the only one registered).
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			e.progressMu.Lock()
			var tokens []string
			for tok := range e.progressFn {
				tokens = append(tokens, tok)
			}
			e.progressMu.Unlock()
			if len(tokens) == 1 {
				e.progress("srv", tokens[0], Progress{Progress: 1, Message: "still here"})
			}
		}
	}()
	t0 := time.Now()
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.forever", TimeoutMs: 300, OnProgress: func(p Progress) {
		if p.Message == "still here" {
			mu.Lock()
			got++
			mu.Unlock()
		}
	}})
	ran := time.Since(t0)
	if KindOf(err) != KindTimeout {
		t.Fatalf("a task that reports progress forever: %v (kind %q), want a timeout at the cap", err, KindOf(err))
	}
	if ran < time.Second || ran > 20*time.Second {
		t.Errorf("the task ran %s: progress every 50ms should keep a 300ms timeout going to its cap of 3s", ran)
	}
	if !strings.Contains(err.Error(), "the longest progress keeps a task with a 300ms timeout going (10 times it)") {
		t.Errorf("message: %v", err)
	}
	var ee *Error
	if !errors.As(err, &ee) || !strings.Contains(strings.Join(ee.Hint, "\n"), "e.g. --timeout 600ms for 6s") {
		t.Errorf("hint: %+v", ee)
	}
	mu.Lock()
	defer mu.Unlock()
	if got == 0 {
		t.Error("the caller got none of the task's progress notifications")
	}
}

// Time spent answering a task's question is not counted toward its
// timeout, as for a call: a person takes 1.2s over a form in a task with
// a 500ms timeout, and the task ends with their answer.
func TestTaskTimeoutHeldWhileAnswering(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25", Tasks: true, Tools: []fakemcp.Tool{
		{Name: "ask", TaskSupport: "required", Sleep: "10ms", Elicit: formAsk}}})
	slow := func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
		select {
		case <-time.After(1200 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return json.RawMessage(`{"action":"accept","content":{"name":"ann"}}`), nil
	}
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.ask", TimeoutMs: 500, Elicitation: slow})
	if err != nil {
		t.Fatalf("a task timed out while its caller answered its question: %v", err)
	}
	if text := resultText(t, res); !strings.Contains(text, `"ann"`) {
		t.Errorf("the task's result is not the answer: %s", text)
	}
}
