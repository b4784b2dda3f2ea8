package engine

// Requests made through the Go API that are malformed, or cut short by
// the caller's context: a clear error, never a panic or a silent no-op.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/internal/fakemcp"
)

func TestNilRequests(t *testing.T) {
	e := New(nil, nil)
	t.Cleanup(func() { e.Close() })
	bg := context.Background()
	if err := e.Start(bg); KindOf(err) != KindUsage || !strings.Contains(err.Error(), "nil *config.Config") {
		t.Errorf("Start with a nil config: %v", err)
	}
	_, err := e.CallTool(bg, nil)
	checkNil(t, err, "CallTool was called with a nil *CallRequest")
	_, err = e.GetPrompt(bg, nil)
	checkNil(t, err, "GetPrompt was called with a nil *PromptRequest")
	_, err = e.ReadResource(bg, nil)
	checkNil(t, err, "ReadResource was called with a nil *ResourceRequest")
	_, err = e.Complete(bg, nil)
	checkNil(t, err, "Complete was called with a nil *CompleteRequest")
	checkNil(t, e.WatchFrom(bg, nil, &WatchRequest{}, func(Event) error { return nil }), "WatchFrom was called with a nil *Subscription")
	_, err = e.Reload(bg, nil)
	checkNil(t, err, "Reload was called with a nil *config.Config")
	// A nil watch request is a zero one: every event.
	stop := errors.New("stop")
	if err := e.Watch(bg, nil, func(ev Event) error { return stop }); err != stop {
		t.Errorf("Watch with a nil request: %v", err)
	}
	var c Client
	_, err = c.CallTool(bg, nil)
	checkNil(t, err, "CallTool was called with a nil *CallRequest")
	// A zero Engine says it is one; its calls panicked.
	var zero Engine
	for what, err := range map[string]error{
		"CallTool":    func() error { _, err := zero.CallTool(bg, &CallRequest{Name: "a.b"}); return err }(),
		"GetPrompt":   func() error { _, err := zero.GetPrompt(bg, &PromptRequest{Name: "a.b"}); return err }(),
		"Start":       zero.Start(bg, "a"),
		"Start all":   zero.Start(bg),
		"Tools":       func() error { _, err := zero.Tools(""); return err }(),
		"Inspect":     func() error { _, err := zero.Inspect(""); return err }(),
		"SetLogLevel": func() error { _, err := zero.SetLogLevel(bg, "info"); return err }(),
	} {
		if KindOf(err) != KindUsage || !strings.Contains(err.Error(), "not made with engine.New") {
			t.Errorf("%s on a zero Engine: %v", what, err)
		}
	}
	// Stop, as Restart, names its servers; it did nothing without.
	if err := e.Stop(); KindOf(err) != KindUsage || !strings.Contains(err.Error(), "name the servers to stop") {
		t.Errorf("Stop with no names: %v", err)
	}
	if m := zero.Metrics(); m != nil {
		t.Errorf("metrics of a zero Engine: %v", m)
	}
	// Close is safe on a zero Engine and on a nil one.
	if err := zero.Close(); err != nil {
		t.Errorf("Close of a zero Engine: %v", err)
	}
	var none *Engine
	if err := none.Close(); err != nil {
		t.Errorf("Close of a nil *Engine: %v", err)
	}
}

// A negative TimeoutMs or Retry is refused; it used to mean the defaults.
func TestNegativeTimeoutOrRetry(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{}))
	c := ctx(t)
	_, err := e.CallTool(c, &CallRequest{Name: "srv.echo", TimeoutMs: -5})
	checkNil(t, err, "CallTool was called with TimeoutMs -5")
	_, err = e.CallTool(c, &CallRequest{Name: "srv.echo", Retry: -1})
	checkNil(t, err, "CallTool was called with Retry -1")
	_, err = e.GetPrompt(c, &PromptRequest{Name: "srv.p", TimeoutMs: -1})
	checkNil(t, err, "GetPrompt was called with TimeoutMs -1")
	_, err = e.ReadResource(c, &ResourceRequest{URI: "file:///x", TimeoutMs: -1})
	checkNil(t, err, "ReadResource was called with TimeoutMs -1")
	_, err = e.Complete(c, &CompleteRequest{Ref: "srv.p", TimeoutMs: -1})
	checkNil(t, err, "Complete was called with TimeoutMs -1")
}

func checkNil(t *testing.T, err error, want string) {
	t.Helper()
	if KindOf(err) != KindUsage || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want a usage error saying %q", err, want)
	}
}

// SetLogLevel, as a watch's --server does, refuses a server that does not
// exist rather than set the level on nothing.
func TestSetLogLevelUnknownServer(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{}))
	set, err := e.SetLogLevel(ctx(t), "debug", "nosuch")
	if KindOf(err) != KindUsage || !strings.Contains(err.Error(), "unknown server nosuch") || set != nil {
		t.Fatalf("set = %v, err = %v", set, err)
	}
}

// A watch of an event type that does not exist would wait in silence.
func TestWatchUnknownType(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{}))
	called := false
	err := e.Watch(ctx(t), &WatchRequest{Filter: EventFilter{Types: []string{"progres"}}}, func(Event) error {
		called = true
		return errors.New("stop")
	})
	var ee *Error
	if !errors.As(err, &ee) || ee.Kind != KindUsage || ee.Message != `unknown event type "progres"` ||
		len(ee.Candidates) == 0 || ee.Candidates[0] != EventProgress || called {
		t.Fatalf("err = %#v, fn called: %v", err, called)
	}
}

// Close ends a Watch under way and every subscription, after the events
// of the servers' stop; a subscription taken after Close is already ended.
func TestCloseEndsWatches(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	var seen []State
	watched := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		watched <- e.Watch(context.Background(), &WatchRequest{Filter: EventFilter{Types: []string{EventState}}}, func(ev Event) error {
			if ev.Type == EventReady {
				close(ready)
			} else {
				seen = append(seen, ev.To)
			}
			return nil
		})
	}()
	<-ready
	sub := e.Events(EventFilter{})
	e.Close()
	select {
	case err := <-watched:
		if err != nil {
			t.Errorf("watch ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Watch still runs 10s after Close")
	}
	if !slices.Contains(seen, StateStopped) {
		t.Errorf("the watch saw %v, not the stop", seen)
	}
	deadline := time.After(10 * time.Second)
drain:
	for {
		select {
		case _, ok := <-sub.C:
			if !ok {
				break drain
			}
		case <-deadline:
			t.Fatal("a subscription's channel is still open 10s after Close")
		}
	}
	sub.Close()
	late, ok := <-e.Events(EventFilter{}).C
	if ok {
		t.Errorf("a subscription after Close got %+v", late)
	}
}

// A call before Start says Start was never called, as a listing does
// (it said "server srv is stopped", with a hint to run mcpctl up).
func TestCallBeforeStart(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}}))
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo"})
	var ee *Error
	if !errors.As(err, &ee) || ee.Kind != KindUsage || ee.Message != "server srv is stopped: Engine.Start was never called, and servers start on use only with activation lazy or transient" ||
		!slices.Equal(ee.Hint, []string{"call Engine.Start before using its servers"}) {
		t.Fatalf("err = %#v", err)
	}
	// After Close, Start cannot help.
	e.Close()
	_, err = e.CallTool(ctx(t), &CallRequest{Name: "srv.echo"})
	if !errors.As(err, &ee) || ee.Message != "server srv is stopped: the engine is closed" || len(ee.Hint) > 0 {
		t.Errorf("a call after Close: %#v", err)
	}
}

// Arguments of null are no arguments, as empty ones are.
func TestCallNullArguments(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo", InputSchema: schemaPinN}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo", Arguments: json.RawMessage(" null "), Pairs: []string{"pin=1"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Result), `{\"pin\":\"1\"}`) {
		t.Errorf("result = %s", res.Result)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo", Arguments: json.RawMessage(`[]`)}); KindOf(err) != KindUsage {
		t.Errorf("an array of arguments: %v", err)
	}
}

// The caller's context deadline ends a start or a call as a timeout that
// names the server and what was under way, and is still
// context.DeadlineExceeded to errors.Is.
func TestCallerDeadline(t *testing.T) {
	slow := fakeServer(t, "slow", fakemcp.Spec{StartDelay: "20s"})
	e := newEngine(t, slow)
	err := e.Start(cutAfter(t, 200*time.Millisecond))
	checkDeadline(t, err, "slow", "the start of server slow did not finish before the deadline of its context")

	e = newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "wait", Sleep: "20s"}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	_, err = e.CallTool(cutAfter(t, 200*time.Millisecond), &CallRequest{Name: "srv.wait"})
	checkDeadline(t, err, "srv", "the call to srv.wait did not finish before the deadline of its context")

	// The same through a session.
	c := serveDaemon(t, e)
	_, err = c.CallTool(cutAfter(t, 200*time.Millisecond), &CallRequest{Name: "srv.wait"})
	checkDeadline(t, err, "srv", "the call to srv.wait did not finish before the deadline of its context")
	_, err = c.CallTool(cutAfter(t, 200*time.Millisecond), &CallRequest{Name: "srv.wait", OnProgress: func(Progress) {}})
	checkDeadline(t, err, "srv", "the call to srv.wait did not finish before the deadline of its context")

	// A subscription and a log level a server is slow to take. The level
	// is a request only before MCP 2026-07-28.
	slow = fakeServer(t, "slow", fakemcp.Spec{Subscribe: true, MethodDelay: map[string]string{"resources/subscribe": "20s", "logging/setLevel": "20s"},
		Resources: []fakemcp.Resource{{URI: "file:///a", Name: "a", Text: "a"}}})
	slow.ProtocolVersion = "2025-11-25"
	e = newEngine(t, slow)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	_, err = e.SubscribeResource(cutAfter(t, 200*time.Millisecond), "file:///a", "")
	checkDeadline(t, err, "slow", "subscribing to file:///a did not finish before the deadline of its context")
	_, err = e.SetLogLevel(cutAfter(t, 200*time.Millisecond), "debug")
	checkDeadline(t, err, "slow", "setting the log level of server slow did not finish before the deadline of its context")
}

// A call that starts a server on use returns at its context's deadline;
// the start goes on, and a transient server started for nobody stops.
func TestCallerDeadlineLazyStart(t *testing.T) {
	lazy := fakeServer(t, "lazy", fakemcp.Spec{StartDelay: "20s", Tools: []fakemcp.Tool{{Name: "echo"}}})
	lazy.Activation = "lazy"
	brief := fakeServer(t, "brief", fakemcp.Spec{StartDelay: "500ms", Tools: []fakemcp.Tool{{Name: "echo"}}})
	brief.Activation = "transient"
	top := fakeServer(t, "top", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	top.Activation, top.DependsOn = "lazy", []string{"lazy"}
	e := newEngine(t, lazy, brief, top)
	sub := e.Events(EventFilter{Types: []string{EventState}, Servers: []string{"brief"}})
	defer sub.Close()

	dctx := cutAfter(t, 200*time.Millisecond)
	t0 := time.Now()
	_, err := e.CallTool(dctx, &CallRequest{Name: "lazy.echo"})
	checkDeadline(t, err, "lazy", "the call to lazy.echo did not finish before the deadline of its context")
	if took := time.Since(t0); took > 10*time.Second {
		t.Errorf("the call returned after %s, with the start (20s), not at its deadline", took)
	}
	if st := e.Status()[0]; st.State != StateStarting {
		t.Errorf("lazy is %s after its caller gave up, want starting on", st.State)
	}
	// A server that depends on it: the dependency's start is what the
	// deadline cut short, not a dependency "not running".
	_, err = e.CallTool(cutAfter(t, 200*time.Millisecond), &CallRequest{Name: "top.echo"})
	checkDeadline(t, err, "lazy", "the start of server lazy (which top depends on) did not finish before the deadline of its context")

	_, err = e.CallTool(cutAfter(t, 100*time.Millisecond), &CallRequest{Name: "brief.echo"})
	checkDeadline(t, err, "brief", "the call to brief.echo did not finish before the deadline of its context")
	var states []State
	deadline := time.After(15 * time.Second)
	for !slices.Contains(states, StateStopped) {
		select {
		case ev := <-sub.C:
			states = append(states, ev.To)
		case <-deadline:
			t.Fatalf("brief went %v and was not stopped after starting for nobody", states)
		}
	}
	if !slices.Contains(states, StateReady) {
		t.Errorf("brief went %v", states)
	}
}

// A restart whose caller gives up once the server is stopped still starts
// it: the server is not left stopped.
func TestRestartCutShort(t *testing.T) {
	e := newEngine(t, fakeServer(t, "slow", fakemcp.Spec{StartDelay: "1s"}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	err := e.Restart(cutAfter(t, 200*time.Millisecond), "slow")
	checkDeadline(t, err, "slow", "the restart of slow (its start goes on) did not finish before the deadline of its context")
	waitState(t, e, "slow", StateReady)
}

// A request made while a server is restarted waits for the restart, as for
// a server starting; it used to fail, as if the server were stopped by hand,
// when it looked between the stop and the start.
func TestRequestDuringRestartWaits(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}, IgnoreStdinEOF: true}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		restarted := make(chan error, 1)
		go func() { restarted <- e.Restart(ctx(t), "srv") }()
		waitState(t, e, "srv", StateStopping)
		if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo"}); err != nil {
			t.Fatalf("call during the restart: %v", err)
		}
		if err := <-restarted; err != nil {
			t.Fatal(err)
		}
	}
	// Stopped by hand, it stays refused.
	if err := e.Stop("srv"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo"}); err == nil || !strings.Contains(err.Error(), "was stopped") {
		t.Errorf("call after Stop: %v", err)
	}
}

// Restarts of one server that overlap take turns: each succeeds, a request
// made meanwhile waits for the restart under way, and the server ends ready. Overlapping,
// one's stop cut another's start short ("stopped during startup"), and a
// request in a gap failed as if the server were stopped by hand.
func TestOverlappingRestarts(t *testing.T) {
	e := newEngine(t, fakeServer(t, "f", fakemcp.Spec{StartDelay: "300ms", Tools: []fakemcp.Tool{{Name: "echo"}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i := range errs {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * 100 * time.Millisecond)
				errs[i] = e.Restart(ctx(t), "f")
			})
		}
		time.Sleep(150 * time.Millisecond)
		_, reqErr := e.CallTool(ctx(t), &CallRequest{Name: "f.echo"})
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("restarts: %v", err)
		}
		// The next restart may stop it mid-call, as a restart does
		// (stopped, or killed, during the call); it must not find the
		// server stopped by hand, or still starting.
		if reqErr != nil && (strings.Contains(reqErr.Error(), "mcpctl stop") || strings.Contains(reqErr.Error(), "is starting")) {
			t.Fatalf("request: %v", reqErr)
		}
		if st := e.Status()[0]; st.State != StateReady {
			t.Fatalf("after the restarts: %+v", st)
		}
	}
}

// cutAfter is a context that ends after d, for a request to be cut short.
func cutAfter(t *testing.T, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(ctx(t), d)
	t.Cleanup(cancel)
	return c
}

func checkDeadline(t *testing.T, err error, server, want string) {
	t.Helper()
	var ee *Error
	if !errors.As(err, &ee) || ee.Kind != KindTimeout || ee.Server != server || ee.Message != want || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %#v, want a timeout of server %s saying %q", err, server, want)
	}
}

// Listing before Start said nothing: an empty list, no error. It says
// Start was never called; after Start, and for a server stopped by hand
// after it, a listing is as it was.
func TestListBeforeStart(t *testing.T) {
	lazy := fakeServer(t, "lazy", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	lazy.Activation = "lazy"
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}}), lazy)
	// With a lazy server it listed that one alone, no error: the other was
	// left out unsaid.
	tools, err := e.Tools("")
	if KindOf(err) != KindUsage || !strings.Contains(err.Error(), "Engine.Start was never called") || tools != nil {
		t.Fatalf("Tools before Start: %v, %v", tools, err)
	}
	if _, err := e.Prompts(""); !strings.Contains(fmt.Sprint(err), "Engine.Start was never called") {
		t.Errorf("Prompts before Start: %v", err)
	}
	// A Start that failed was called all the same.
	failed := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{}))
	failed.Start(ctx(t), "nosuch")
	if _, err := failed.Tools(""); strings.Contains(fmt.Sprint(err), "never called") {
		t.Errorf("Tools after a failed Start: %v", err)
	}
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if tools, err := e.Tools(""); err != nil || len(tools) != 2 {
		t.Fatalf("Tools after Start: %v, %v", tools, err)
	}
	if err := e.Stop("srv"); err != nil {
		t.Fatal(err)
	}
	if tools, err := e.Tools(""); err != nil || len(tools) != 1 {
		t.Errorf("Tools with the only server stopped by hand: %v, %v", tools, err)
	}
}

// A watch with --subscribe follows the updates of its URIs and of their
// sub-resources (the spec lets a server name file:///dir/a.txt to a client
// that subscribed to file:///dir), on the server it subscribed on.
func TestWatchFollowsItsSubscriptions(t *testing.T) {
	req := &WatchRequest{Subscribe: []string{"file:///dir", "mem://x/"}}
	for uri, want := range map[string]bool{
		"file:///dir": true, "file:///dir/a.txt": true, "file:///dir#frag": true, "file:///dir?q=1": true,
		"file:///directory": false, "file:///other": false, "mem://x/a": true, "mem://y": false,
	} {
		if got := req.follows(Event{URI: uri, Server: "s"}); got != want {
			t.Errorf("an update of %s: followed %v, want %v", uri, got, want)
		}
	}
	req.SubscribeServer = "s"
	if req.follows(Event{URI: "file:///dir", Server: "t"}) || !req.follows(Event{URI: "file:///dir", Server: "s"}) {
		t.Error("an update of another server than the one subscribed on was followed, or its own was not")
	}
}
