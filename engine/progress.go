package engine

import (
	"context"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
)

// maxQueuedProgress bounds the notifications waiting for a slow OnProgress:
// beyond it the oldest plain progress is dropped (a later one says more),
// a task's status kept.
const maxQueuedProgress = 256

// A progressRelay hands a call's progress to its caller's OnProgress on a
// goroutine of its own, in order. The notifications arrive on the server's
// connection, which a callback that blocks would hold up (every other
// request to that server with it) and one that calls the same server would
// deadlock.
type progressRelay struct {
	fn  func(Progress)
	log *slog.Logger

	mu       sync.Mutex
	wake     *sync.Cond
	queue    []Progress
	closed   bool // stop was called: deliver what is queued, then end
	ended    bool // fn panicked or exited its goroutine: nothing more goes to it
	panicked any  // what fn panicked with, for stop to raise again
	didPanic bool
	done     chan struct{}
}

func newProgressRelay(fn func(Progress), log *slog.Logger) *progressRelay {
	r := &progressRelay{fn: fn, log: log, done: make(chan struct{})}
	r.wake = sync.NewCond(&r.mu)
	go r.run()
	return r
}

// send queues p; it never blocks.
func (r *progressRelay) send(p Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.ended {
		return
	}
	if len(r.queue) >= maxQueuedProgress {
		i := slices.IndexFunc(r.queue, func(q Progress) bool { return q.Status == "" })
		r.queue = slices.Delete(r.queue, max(i, 0), max(i, 0)+1)
	}
	r.queue = append(r.queue, p)
	r.wake.Signal()
}

func (r *progressRelay) run() {
	defer close(r.done)
	for {
		r.mu.Lock()
		for len(r.queue) == 0 && !r.closed {
			r.wake.Wait()
		}
		if len(r.queue) == 0 {
			r.mu.Unlock()
			return
		}
		p := r.queue[0]
		r.queue = r.queue[1:]
		r.mu.Unlock()
		if !r.deliver(p) {
			return
		}
	}
}

// deliver calls fn. A panic is kept for stop to raise again, its stack
// logged (raised again, it shows stop's); a runtime.Goexit in fn (t.FailNow)
// ends the relay too.
func (r *progressRelay) deliver(p Progress) (ok bool) {
	returned := false
	defer func() {
		if returned {
			return
		}
		v := recover()
		r.mu.Lock()
		r.ended, r.queue = true, nil
		if v != nil {
			r.panicked, r.didPanic = v, true
		}
		r.mu.Unlock()
		if v != nil {
			r.log.Error("OnProgress panicked", "panic", v, "stack", string(debug.Stack()))
		}
	}()
	r.fn(p)
	returned = true
	return true
}

// stop hands fn what is queued and waits for it, so that no progress
// comes after the call returns; once ctx has ended, what is still queued
// is dropped, and only the callback under way is waited for (a slow one
// kept the call past its deadline by the length of the queue). With
// raise, a panic of fn is raised again here, on the caller's goroutine,
// where the program can recover it: on the relay's it would end the
// program. Without (the call is itself panicking), it is not: that panic
// goes on.
func (r *progressRelay) stop(ctx context.Context, raise bool) {
	r.mu.Lock()
	r.closed = true
	r.wake.Signal()
	r.mu.Unlock()
	select {
	case <-r.done:
	case <-ctx.Done():
		r.mu.Lock()
		r.queue = nil
		r.mu.Unlock()
		<-r.done
	}
	if raise && r.didPanic {
		panic(r.panicked)
	}
}
