package engine

// Races and leaks of the lifecycle that a review found: each test failed
// before its fix.

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/internal/fakemcp"
)

// procTracker records OnProcess calls.
type procTracker struct {
	mu      sync.Mutex
	running map[int]bool
}

func (p *procTracker) on(pgid int, running bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if running {
		p.running[pgid] = true
	} else {
		delete(p.running, pgid)
	}
}

func (p *procTracker) live() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int
	for pg := range p.running {
		if alive(pg) {
			out = append(out, pg)
		}
	}
	return out
}

func trackedEngine(t *testing.T, servers ...*config.Server) (*Engine, *procTracker) {
	pt := &procTracker{running: map[int]bool{}}
	e := New(&config.Config{File: "mcp.json", Servers: servers}, &Options{ShutdownTimeout: 2 * time.Second, OnProcess: pt.on})
	t.Cleanup(func() {
		e.Close()
		for _, pg := range pt.live() {
			killGroup(pg)
		}
	})
	return e, pt
}

// BUG 1: a server that ran steadily (>1 min) and then keeps failing to
// start gets a fresh set of restarts on every failed start: the circuit
// never opens and it restarts every 1s forever.
func TestCircuitOpensAfterASteadyRun(t *testing.T) {
	code := 9
	srv := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "crash", Crash: &code}}})
	srv.Restart, srv.MaxRestarts = "on-failure", 1
	e, _ := trackedEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	s, _ := e.lookup("srv")
	// Pretend it has been ready for 2 minutes, and that from now on its
	// command exits at once (a broken upgrade, a lost dependency).
	bad := fakeServer(t, "srv", fakemcp.Spec{Exit: &code})
	bad.Restart, bad.MaxRestarts = "on-failure", 1
	s.mu.Lock()
	s.readyAt = time.Now().Add(-2 * time.Minute)
	s.mu.Unlock()
	s.conf.Store(bad)
	sub := e.Events(EventFilter{Types: []string{EventState}})
	defer sub.Close()
	e.CallTool(ctx(t), &CallRequest{Name: "srv.crash"})
	starts := 0
	deadline := time.After(6 * time.Second)
loop:
	for {
		select {
		case ev := <-sub.C:
			if ev.To == StateStarting {
				starts++
			}
		case <-deadline:
			break loop
		}
	}
	st := e.Status()[0]
	t.Logf("starts in 6s: %d, status: restarts=%d lastError=%q", starts, st.Restarts, st.LastError)
	if starts > 1 {
		t.Errorf("maxRestarts 1, but %d restarts in 6s: the circuit never opens", starts)
	}
}

// BUG 2: a lazy server removed by a reload while a request to it waits
// to retry is started again by that retry: a process nobody owns, which
// Close does not stop.
func TestRetryDoesNotStartRemovedServer(t *testing.T) {
	srv := fakeServer(t, "lz", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "hang", Sleep: "30s"}}})
	srv.Activation = "lazy"
	srv.RequestTimeout = 200 * time.Millisecond // a timeout that counts
	other := fakeServer(t, "ok", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	e, pt := trackedEngine(t, srv, other)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := e.CallTool(ctx(t), &CallRequest{Name: "lz.hang", TimeoutMs: 200, Retry: 1})
		done <- err
	}()
	waitState(t, e, "lz", StateDegraded) // the first try timed out; the retry waits 1s
	if _, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: []*config.Server{other}}); err != nil {
		t.Fatal(err)
	}
	<-done
	e.Close()
	time.Sleep(300 * time.Millisecond)
	if live := pt.live(); len(live) > 0 {
		t.Errorf("process groups left after Close: %v (a removed server was started by a retry)", live)
	}
}

// BUG 3: a reload that removes an on-failure server while its scheduled
// restart is starting: the interrupted start is treated as a failure and
// a new restart is scheduled, which starts a server nobody owns.
func TestNoRestartAfterReloadRemovesServer(t *testing.T) {
	code := 9
	srv := fakeServer(t, "rs", fakemcp.Spec{StartDelay: "1500ms", Tools: []fakemcp.Tool{{Name: "crash", Crash: &code}}})
	srv.Restart, srv.MaxRestarts = "on-failure", 3
	other := fakeServer(t, "ok", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	e, pt := trackedEngine(t, srv, other)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	s, _ := e.lookup("rs")
	sub := e.Events(EventFilter{Types: []string{EventState}})
	defer func() {
		sub.Close()
		for ev := range sub.C {
			t.Logf("event %s: %s -> %s %q %q", ev.Server, ev.From, ev.To, ev.Message, ev.Error)
		}
	}()
	e.CallTool(ctx(t), &CallRequest{Name: "rs.crash"})
	waitState(t, e, "rs", StateUnavailable)
	waitState(t, e, "rs", StateStarting) // the policy's restart, 1s later
	if _, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: []*config.Server{other}}); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	t.Logf("removed server after reload: state=%s restartPending=%v", s.state, s.lc.restartDone != nil)
	s.mu.Unlock()
	time.Sleep(4500 * time.Millisecond) // backoff 2s + start 1.5s
	s.mu.Lock()
	t.Logf("removed server 4.5s after the reload: state=%s proc=%v", s.state, s.proc != nil)
	s.mu.Unlock()
	e.Close()
	time.Sleep(300 * time.Millisecond)
	if live := pt.live(); len(live) > 0 {
		t.Errorf("process groups left after Close: %v (restart of a removed server)", live)
	}
}

// BUG 4: Close returns while the process of a server stopped for its
// failures (noteOutcome) is still being stopped in a goroutine; one that
// ignores SIGTERM outlives Close (and, in one-shot mode, mcpctl).
func TestCloseWaitsForThresholdStop(t *testing.T) {
	srv := fakeServer(t, "h", fakemcp.Spec{IgnoreSIGTERM: true, IgnoreStdinEOF: true, Tools: []fakemcp.Tool{{Name: "hang", Hang: true}}})
	srv.FailureThreshold = 1
	srv.RequestTimeout = 200 * time.Millisecond // a caller's shorter timeout would not count
	e, pt := trackedEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	pid := pidOf(t, e, "h")
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "h.hang"}); KindOf(err) != KindTimeout {
		t.Fatalf("err = %v", err)
	}
	if st := e.Status()[0]; st.State != StateUnavailable {
		t.Fatalf("after the failure: %+v", st)
	}
	t0 := time.Now()
	e.Close()
	t.Logf("Close took %s", time.Since(t0))
	if alive(pid) {
		t.Errorf("process %d still alive after Close returned (live groups %v)", pid, pt.live())
	}
}

// A server stopped for its failures, with restart on-failure, was started
// again after its backoff while its last run, which ignores SIGTERM, was
// still being stopped: two of it ran at once for up to shutdownTimeout,
// which breaks a server holding a lock, a port or a database.
func TestRestartWaitsForTheThresholdStop(t *testing.T) {
	srv := fakeServer(t, "h", fakemcp.Spec{IgnoreSIGTERM: true, IgnoreStdinEOF: true, Tools: []fakemcp.Tool{{Name: "hang", Hang: true}}})
	srv.FailureThreshold = 1
	srv.RequestTimeout = 200 * time.Millisecond // a caller's shorter timeout would not count
	srv.Restart, srv.MaxRestarts = "on-failure", 3
	e, pt := trackedEngine(t, srv) // shutdownTimeout 2s, over the 1s backoff
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	first := pidOf(t, e, "h")
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "h.hang"}); KindOf(err) != KindTimeout {
		t.Fatalf("err = %v", err)
	}
	if st := e.Status()[0]; st.State != StateUnavailable {
		t.Fatalf("after the failure: %+v", st)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if live := pt.live(); len(live) > 1 {
			t.Fatalf("two runs of the server at once: process groups %v", live)
		}
		if st := e.Status()[0]; st.State == StateReady && st.PID != first {
			if alive(first) {
				t.Fatalf("the new run (pid %d) is ready while the old one (%d) lives", st.PID, first)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not restarted: %+v", e.Status()[0])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var _ = context.Background

func killGroup(pg int) { syscall.Kill(-pg, syscall.SIGKILL) }
