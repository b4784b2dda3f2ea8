package engine

import "sync"

// A progressRelay hands a call's progress to its caller's OnProgress on a
// goroutine of its own, in order. The notifications arrive on the server's
// connection, which a callback that blocks would hold up (every other
// request to that server with it) and one that calls the same server would
// deadlock.
type progressRelay struct {
	fn       func(Progress)
	mu       sync.Mutex
	wake     *sync.Cond
	queue    []Progress
	closed   bool
	done     chan struct{}
	panicked any // what fn panicked with; nothing more is handed to it
	didPanic bool
}

func newProgressRelay(fn func(Progress)) *progressRelay {
	r := &progressRelay{fn: fn, done: make(chan struct{})}
	r.wake = sync.NewCond(&r.mu)
	go r.run()
	return r
}

// send queues p; it never blocks.
func (r *progressRelay) send(p Progress) {
	r.mu.Lock()
	if !r.closed && !r.didPanic {
		r.queue = append(r.queue, p)
		r.wake.Signal()
	}
	r.mu.Unlock()
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

// deliver calls fn, keeping a panic for stop to raise again.
func (r *progressRelay) deliver(p Progress) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			r.mu.Lock()
			r.panicked, r.didPanic, r.queue = v, true, nil
			r.mu.Unlock()
			ok = false
		}
	}()
	r.fn(p)
	return true
}

// stop hands fn what is queued and waits for it, so that no progress
// comes after the call returns. A panic of fn is raised again here, on
// the caller's goroutine, where the program can recover it: on the relay's
// it would end the program.
func (r *progressRelay) stop() {
	r.mu.Lock()
	r.closed = true
	r.wake.Signal()
	r.mu.Unlock()
	<-r.done
	if r.didPanic {
		panic(r.panicked)
	}
}
