package engine

import (
	"context"
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
	var check func()
	check = func() {
		if pid := int(c.sessionPID.Load()); pid > 0 && processStopped(pid) {
			cancel(sessionStopped(pid))
			return
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
// is read after do returns.
type cancellingBody struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (b *cancellingBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
}
