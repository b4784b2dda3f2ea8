package engine

import (
	"context"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/internal/fakemcp"
)

// OnProgress runs off the server's connection: a callback that calls the
// same server gets its answer (on the connection it would have deadlocked
// it, the inner call timing out), and every notification still comes, in
// order, before the call returns.
func TestProgressCallbackMayCallTheServer(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "work", Progress: 3, Sleep: "60ms"}, {Name: "echo"}}})
	var mu sync.Mutex
	var seen []float64
	var inner []error
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.work", OnProgress: func(p Progress) {
		_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo", Pairs: []string{"a=1"}, TimeoutMs: 3000})
		mu.Lock()
		seen, inner = append(seen, p.Progress), append(inner, err)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 || seen[0] != 1 || seen[2] != 3 {
		t.Errorf("progress seen: %v", seen)
	}
	for _, err := range inner {
		if err != nil {
			t.Errorf("a call from OnProgress: %v", err)
		}
	}
}

// A panic in OnProgress reaches the caller of CallTool, on its goroutine,
// where it can be recovered; on the connection's it ended the program. The
// engine goes on serving.
func TestProgressCallbackPanicReachesCaller(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "work", Progress: 2, Sleep: "40ms"}, {Name: "echo"}}})
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Errorf("recovered %v, want the callback's panic", v)
			}
		}()
		e.CallTool(ctx(t), &CallRequest{Name: "srv.work", OnProgress: func(Progress) { panic("boom") }})
		t.Error("CallTool returned after its OnProgress panicked")
	}()
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo", Pairs: []string{"a=2"}})
	if err != nil || !strings.Contains(string(res.Result), `\"a\":\"2\"`) {
		t.Errorf("a call after the panic: %s %v", res.Result, err)
	}
}

// A callback slower than the server's notifications holds at most
// maxQueuedProgress of them: the oldest plain ones go, a task's statuses
// stay, and the last one always comes.
func TestProgressRelayBounded(t *testing.T) {
	release := make(chan struct{})
	var got []Progress
	r := newProgressRelay(func(p Progress) {
		<-release
		got = append(got, p)
	}, slog.New(slog.DiscardHandler))
	r.send(Progress{Progress: 0})
	r.send(Progress{Status: "working"})
	for i := 1; i <= 10*maxQueuedProgress; i++ {
		r.send(Progress{Progress: float64(i)})
	}
	close(release)
	r.stop(context.Background(), true)
	if len(got) > maxQueuedProgress+1 {
		t.Errorf("%d delivered, more than were kept", len(got))
	}
	if !slices.ContainsFunc(got, func(p Progress) bool { return p.Status == "working" }) {
		t.Errorf("a task's status was dropped")
	}
	if last := got[len(got)-1]; last.Progress != 10*maxQueuedProgress {
		t.Errorf("the last progress delivered is %v", last.Progress)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Status == "" && got[i-1].Status == "" && got[i].Progress <= got[i-1].Progress {
			t.Fatalf("out of order at %d: %v after %v", i, got[i].Progress, got[i-1].Progress)
		}
	}
}

// Once the call's context has ended, what is still queued for a slow
// callback is dropped: the call returns when the callback under way does,
// not after the whole queue (a deadline of 300 ms kept a call 24 s).
func TestProgressRelayStopsAtTheContextsEnd(t *testing.T) {
	started, release := make(chan struct{}, 8), make(chan struct{})
	var got []Progress
	r := newProgressRelay(func(p Progress) {
		started <- struct{}{}
		<-release
		got = append(got, p)
	}, slog.New(slog.DiscardHandler))
	for i := 1; i <= 3; i++ {
		r.send(Progress{Progress: float64(i)})
	}
	<-started // the first is under way, two are queued
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stopped := make(chan struct{})
	go func() {
		r.stop(ctx, true)
		close(stopped)
	}()
	select {
	case <-stopped:
		t.Fatal("stop returned while a callback was under way")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	<-stopped
	if len(got) != 1 || got[0].Progress != 1 {
		t.Errorf("delivered %v, want only the one under way", got)
	}
}

// A call whose own time runs out (TimeoutMs) does not wait either for the
// notifications queued for a slow callback: only for the one under way.
func TestProgressQueueDroppedWhenTheCallTimesOut(t *testing.T) {
	// Ten at once, then nothing: the call's time runs out a second later
	// (each notification extends it), while the callback is at the first.
	e := startOne(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "ticks", ProgressBurst: 10, Sleep: "1h"}}})
	var mu sync.Mutex
	delivered := 0
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.ticks", TimeoutMs: 1000, OnProgress: func(Progress) {
		time.Sleep(1500 * time.Millisecond)
		mu.Lock()
		delivered++
		mu.Unlock()
	}})
	if KindOf(err) != KindTimeout {
		t.Fatalf("the call: %v, want its timeout", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if delivered > 2 {
		t.Errorf("%d notifications delivered after the call's time ran out; want the one under way", delivered)
	}
}

// A callback that ends its goroutine (t.FailNow does) ends the relay: stop
// does not wait for ever, and nothing more is queued.
func TestProgressRelayGoexit(t *testing.T) {
	r := newProgressRelay(func(Progress) { runtime.Goexit() }, slog.New(slog.DiscardHandler))
	r.send(Progress{Progress: 1})
	<-r.done
	r.send(Progress{Progress: 2})
	if len(r.queue) != 0 {
		t.Errorf("queued after the callback's goroutine ended: %v", r.queue)
	}
	r.stop(context.Background(), true)
}
