package engine

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// stoppedAfter is how long a request waits for the session's answer before
// the client looks whether the session's process is stopped (Ctrl-Z on an
// "up --foreground", SIGSTOP): a stopped process takes connections, as the
// kernel queues them, and never answers.
const stoppedAfter = 2 * time.Second

// sessionStopped is the error of a request to a stopped session.
func sessionStopped(pid int) *Error {
	return errorf(KindUnavailable, "", "the session (pid %d) is stopped (Ctrl-Z or SIGSTOP) and cannot answer", pid).
		hint("resume it with: kill -CONT %d (or fg in its terminal); or end it with: kill -9 %d, then mcpctl up", pid, pid)
}

// watchStopped looks, after stoppedAfter and then every second until stop
// is called, whether the session's process is stopped, and if so cancels
// the request with sessionStopped.
func (c *Client) watchStopped(cancel context.CancelCauseFunc) (stop func()) {
	var mu sync.Mutex
	var t *time.Timer
	done := false
	traced := 0 // looks in a row that found it stopped while traced
	var check func()
	check = func() {
		pid := int(c.sessionPID.Load())
		switch state := processState(pid); {
		case pid <= 0:
		case state == 'T':
			cancel(sessionStopped(pid))
			return
		case state == 't':
			// A tracer (strace, a debugger) stops it for a moment at
			// each step; stopped at a breakpoint, it stays so.
			if traced++; traced == 3 {
				cancel(sessionStopped(pid))
				return
			}
		default:
			traced = 0
		}
		mu.Lock()
		defer mu.Unlock()
		if !done {
			t = time.AfterFunc(time.Second, check)
		}
	}
	mu.Lock()
	t = time.AfterFunc(stoppedAfter, check)
	mu.Unlock()
	return func() {
		mu.Lock()
		done = true
		t.Stop()
		mu.Unlock()
	}
}

// cancellingBody ends its request's context when it is closed: the answer
// is read after do returns. A stream's watchStopped runs until then.
type cancellingBody struct {
	io.ReadCloser
	ctx       context.Context
	cancel    context.CancelCauseFunc
	stopWatch func()
}

func (b *cancellingBody) Close() error {
	b.stopWatch()
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
}

// stopped is the error of a stream cut because the session is stopped.
func (b *cancellingBody) stopped() *Error {
	var e *Error
	if errors.As(context.Cause(b.ctx), &e) {
		return e
	}
	return nil
}
