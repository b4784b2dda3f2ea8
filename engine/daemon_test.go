package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/internal/fakemcp"
)

// serveDaemon runs a daemon over an httptest server and returns a client
// dialling it.
func serveDaemon(t *testing.T, e *Engine) *Client {
	t.Helper()
	d := NewDaemon(e, SessionInfo{Name: "test", PID: os.Getpid()}, nil)
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	return &Client{Socket: "test.sock", Dial: func(ctx context.Context) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "tcp", addr)
	}}
}

func TestDaemonRoundTrip(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo", InputSchema: schemaPinN}, {Name: "fail", Error: "nope"}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	c := serveDaemon(t, e)
	st, err := c.Status(ctx(t))
	if err != nil || st.Session.Name != "test" || len(st.Servers) != 1 || st.Servers[0].State != StateReady {
		t.Fatalf("status: %v %+v", err, st)
	}
	tools, err := c.Tools(ctx(t), "srv.echo")
	if err != nil || len(tools) != 1 || tools[0].Name() != "srv.echo" || !strings.Contains(string(tools[0].Field("inputSchema")), `"pin"`) {
		t.Fatalf("tools: %v %v", err, tools)
	}
	res, err := c.CallTool(ctx(t), &CallRequest{Name: "srv.echo", Pairs: []string{"pin=007"}})
	if err != nil || !strings.Contains(string(res.Result), `\"pin\":\"007\"`) {
		t.Fatalf("call: %v %s", err, res.Result)
	}
	res, err = c.CallTool(ctx(t), &CallRequest{Name: "srv.fail"})
	if err != nil || !res.IsError {
		t.Errorf("isError must arrive as a result: %v %+v", err, res)
	}
	// Errors keep their kind, violations and candidates across the wire.
	_, err = c.CallTool(ctx(t), &CallRequest{Name: "srv.echo", Pairs: []string{"n=x"}})
	var ee *Error
	if !errors.As(err, &ee) || ee.Kind != KindUsage || len(ee.Violations) != 2 || ee.Server != "srv" {
		t.Errorf("usage error over the wire: %#v", err)
	}
	_, err = c.Tools(ctx(t), "sr")
	if !errors.As(err, &ee) || ee.Kind != KindUsage || len(ee.Candidates) != 1 || ee.Candidates[0] != "srv" {
		t.Errorf("unknown server over the wire: %#v", err)
	}
	st, err = c.Shutdown(ctx(t))
	if err != nil || st.Servers[0].State != StateStopped {
		t.Errorf("shutdown: %v %+v", err, st)
	}
}

// A request that reaches a session as it stops (its engine closed) is told
// so, not how a Go program makes another engine ("make a new one with
// engine.New", which a CLI user was shown).
func TestDaemonStoppingSaysSo(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}}))
	c := serveDaemon(t, e)
	e.Close()
	rec := httptest.NewRecorder()
	writeError(rec, e.open()) // a request begun before the session began to stop
	var body struct{ Error *Error }
	json.Unmarshal(rec.Body.Bytes(), &body)
	if ee := body.Error; ee == nil || ee.Kind != KindUnavailable || ee.Message != "the session is stopping" || !strings.Contains(strings.Join(ee.Hint, " "), "mcpctl up") {
		t.Errorf("a request to a session stopping: %s", rec.Body)
	}
	_, err := c.CallTool(ctx(t), &CallRequest{Name: "srv.echo"})
	if err == nil || err.Error() != "the session is stopping" {
		t.Errorf("a request begun as it stops: %v", err)
	}
	// In Go, the engine's own words stay.
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo"}); err == nil || !strings.Contains(err.Error(), "the engine is closed") {
		t.Errorf("in Go: %v", err)
	}
}

// A call under way when the session stops (its engine closes, its server
// stopped under the call) is told the session is stopping, not that its
// server was stopped with a hint to see status, which then has no session
// (QA). In Go, the engine says it was closed.
func TestCallUnderWayWhenSessionStops(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "slow", Sleep: "30s"}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	c := serveDaemon(t, e)
	through, inProcess := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx(t), &CallRequest{Name: "srv.slow"})
		through <- err
	}()
	go func() {
		_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.slow"})
		inProcess <- err
	}()
	s, _ := e.lookup("srv")
	for len(s.askers.all()) < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	e.Close()
	if err := <-through; err == nil || err.Error() != "the session is stopping" {
		t.Errorf("through the session: %v", err)
	}
	if err := <-inProcess; err == nil || !strings.Contains(err.Error(), "the engine was closed") {
		t.Errorf("in-process: %v", err)
	}
}

// StartTimedOut reads the same through a session as in-process: a call
// and a listing that start a server that does not finish starting in time.
func TestStartTimedOutThroughSession(t *testing.T) {
	slow := fakeServer(t, "slow", fakemcp.Spec{StartDelay: "10s", Tools: []fakemcp.Tool{{Name: "echo"}}})
	slow.Activation, slow.StartupTimeout = "lazy", 300*time.Millisecond
	top := fakeServer(t, "top", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	top.Activation, top.DependsOn = "lazy", []string{"slow"}
	e := newEngine(t, slow, top)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	_, inProcess := e.CallTool(ctx(t), &CallRequest{Name: "slow.echo"})
	_, dependentInProcess := e.CallTool(ctx(t), &CallRequest{Name: "top.echo"}) // wraps slow's timeout
	c := serveDaemon(t, e)
	_, called := c.CallTool(ctx(t), &CallRequest{Name: "slow.echo"})
	_, dependent := c.CallTool(ctx(t), &CallRequest{Name: "top.echo"})
	_, listed := c.Tools(ctx(t), "slow")
	for what, err := range map[string]error{"in-process": inProcess, "a call through the session": called, "a listing through the session": listed,
		"a dependent's call": dependentInProcess, "a dependent's call through the session": dependent} {
		if !StartTimedOut(err) {
			t.Errorf("%s: StartTimedOut false for %v", what, err)
		}
		// The package's word: DeadlineExceeded is the caller's own.
		if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: a startupTimeout run out reads as the caller's deadline: %v", what, err)
		}
	}
	// A listing of all that leaves it out, alone.
	alone := newEngine(t, slow)
	alone.Start(ctx(t))
	if _, err := serveDaemon(t, alone).Tools(ctx(t), ""); !StartTimedOut(err) {
		t.Errorf("a listing of all: StartTimedOut false for %v", err)
	}
}

func TestClientVersionMismatch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(VersionHeader) != Version() {
			t.Errorf("client sent version %q", r.Header.Get(VersionHeader))
		}
		w.Header().Set(VersionHeader, "v0.0.1-old")
		writeJSON(w, http.StatusOK, &Status{Session: &SessionInfo{Name: "old"}})
	}))
	defer srv.Close()
	var got []string
	c := &Client{OnVersionMismatch: func(v string) { got = append(got, v) }, Dial: func(ctx context.Context) (net.Conn, error) {
		return net.Dial("tcp", srv.Listener.Addr().String())
	}}
	for range 3 {
		if _, err := c.Status(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 1 || got[0] != "v0.0.1-old" {
		t.Errorf("mismatch reported %v, want once with the session's version", got)
	}
}

func TestClientNoSession(t *testing.T) {
	dir := t.TempDir()
	c := &Client{Socket: filepath.Join(dir, "none.sock")}
	if _, err := c.Status(context.Background()); !errors.Is(err, ErrNoSession) {
		t.Errorf("missing socket: %v", err)
	}
	// A socket file nobody listens on is no session either.
	l, err := net.Listen("unix", filepath.Join(dir, "stale.sock"))
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	c = &Client{Socket: filepath.Join(dir, "stale.sock")}
	if _, err := c.Status(context.Background()); !errors.Is(err, ErrNoSession) {
		t.Errorf("stale socket: %v", err)
	}
	// A Client without a Socket is the program's mistake, not no session.
	if _, err := (&Client{}).Status(context.Background()); KindOf(err) != KindUsage || !strings.Contains(err.Error(), "has no Socket") {
		t.Errorf("zero Client: %v", err)
	}
}

func TestSessionListen(t *testing.T) {
	dir, err := os.MkdirTemp("", "mcs")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	env := func(k string) string {
		if k == "MCPCTL_RUNTIME_DIR" {
			return filepath.Join(dir, "rt")
		}
		return ""
	}
	s, err := SessionFor([]string{"/work/proj/mcp.json"}, "", env)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Name, "proj-") || len(s.Name) != len("proj-")+8 {
		t.Errorf("session name %q", s.Name)
	}
	if s2, _ := SessionFor([]string{"/work/proj/.vscode/mcp.json"}, "", env); s2.Name == s.Name || !strings.HasPrefix(s2.Name, "proj-") {
		t.Errorf(".vscode config: name %q", s2.Name)
	}
	// Two files are one session in either order: they run the same servers.
	ab, _ := SessionFor([]string{"/work/proj/a.json", "/work/proj/b.json"}, "", env)
	ba, _ := SessionFor([]string{"/work/proj/b.json", "/work/proj/a.json"}, "", env)
	if ab.Name != ba.Name || ab.Name == s.Name {
		t.Errorf("a and b: %q; b and a: %q", ab.Name, ba.Name)
	}
	// Every spelling of a file is its session, as the CLI names it: a
	// Go program's relative path found a session of its own.
	proj := filepath.Join(dir, "proj")
	os.Mkdir(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "mcp.json"), []byte(`{"servers": {}}`), 0o644)
	os.Symlink("mcp.json", filepath.Join(proj, "link.json"))
	t.Chdir(proj)
	want, _ := SessionFor([]string{CanonicalPath(filepath.Join(proj, "mcp.json"))}, "", env)
	for _, p := range []string{"mcp.json", "./mcp.json", proj + "/./mcp.json", proj + "/../proj/mcp.json", "link.json"} {
		if got, _ := SessionFor([]string{p}, "", env); got.Name != want.Name {
			t.Errorf("SessionFor(%q) is %q, not %q", p, got.Name, want.Name)
		}
	}
	ln, release, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(s.Socket)
	dst, _ := os.Stat(s.Dir)
	if st.Mode().Perm() != 0o600 || dst.Mode().Perm() != 0o700 {
		t.Errorf("socket %v, dir %v", st.Mode().Perm(), dst.Mode().Perm())
	}
	if !s.Running() {
		t.Errorf("Running() is false while the lock is held")
	}
	if _, _, err := s.Listen(); !errors.Is(err, ErrSessionRunning) {
		t.Errorf("second Listen: %v", err)
	}
	go http.Serve(ln, http.NotFoundHandler())
	if c, err := net.Dial("unix", s.Socket); err != nil {
		t.Errorf("own uid refused: %v", err)
	} else {
		c.Close()
	}
	ln.Close()
	release()
	if s.Running() {
		t.Errorf("Running() after release")
	}
	if _, err := SessionFor([]string{"/x/mcp.json"}, "bad/name", env); KindOf(err) != KindUsage {
		t.Errorf("bad session name: %v", err)
	}
	long := func(k string) string {
		if k == "MCPCTL_RUNTIME_DIR" {
			return "/tmp/" + strings.Repeat("d", 100)
		}
		return ""
	}
	// A path too long is a session no one can start, not an error of
	// the commands that only look for one.
	ls, err := SessionFor([]string{"/x/mcp.json"}, "", long)
	if err != nil {
		t.Fatalf("long socket path: %v", err)
	}
	if err := ls.CheckSocket(); err == nil || !strings.Contains(err.Error(), "too long") {
		t.Errorf("long socket path: %v", err)
	}
	if _, _, err := ls.Listen(); err == nil || !strings.Contains(err.Error(), "too long") {
		t.Errorf("listening on a long socket path: %v", err)
	}
}

func TestDaemonServeStopsEngine(t *testing.T) {
	dir := t.TempDir()
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{PIDFile: filepath.Join(dir, "p"), IgnoreStdinEOF: true}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	pid := readPID(t, filepath.Join(dir, "p"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := NewDaemon(e, SessionInfo{}, nil)
	c, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Serve(c, ln) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return")
	}
	if alive(pid) {
		t.Errorf("server survived the end of Serve")
	}
}

// Every kind of request through the session, by a pooled client and an
// Unpooled one; the Unpooled one leaves no connection open.
func TestDaemonSurface(t *testing.T) {
	for _, unpooled := range []bool{false, true} {
		t.Run(fmt.Sprintf("unpooled=%v", unpooled), func(t *testing.T) { daemonSurface(t, unpooled) })
	}
}

func daemonSurface(t *testing.T, unpooled bool) {
	spec := surface
	spec.ProtocolVersion = "2025-11-25"
	spec.Subscribe = true
	spec.Tools = []fakemcp.Tool{{Name: "work", Progress: 3, Sleep: "150ms", Log: "busy", Touch: "file:///notes.txt"}}
	e := newEngine(t, fakeServer(t, "srv", spec))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	c := serveDaemon(t, e)
	c.Unpooled = unpooled
	dial := c.Dial
	var dials, open atomic.Int64
	c.Dial = func(ctx context.Context) (net.Conn, error) {
		conn, err := dial(ctx)
		if err == nil {
			dials.Add(1)
			open.Add(1)
			conn = &countedConn{Conn: conn, open: &open}
		}
		return conn, err
	}
	if unpooled {
		defer func() {
			if n := open.Load(); n != 0 {
				t.Errorf("%d of the %d connections an Unpooled client dialled are still open", n, dials.Load())
			}
		}()
	}
	if ps, err := c.Prompts(ctx(t), ""); err != nil || len(ps) != 1 || ps[0].Name() != "srv.greet" {
		t.Errorf("prompts: %v %v", err, ps)
	}
	if pr, err := c.GetPrompt(ctx(t), &PromptRequest{Name: "srv.greet", Pairs: []string{"name=Ann"}}); err != nil || !strings.Contains(string(pr.Result), "Hello Ann") {
		t.Errorf("prompt: %v %+v", err, pr)
	}
	// A failure gives no result, as the engine's methods do.
	if pr, err := c.GetPrompt(ctx(t), &PromptRequest{Name: "srv.greet"}); KindOf(err) != KindUsage || pr != nil {
		t.Errorf("prompt without its argument: %v %+v", err, pr)
	}
	if rr, err := c.ReadResource(ctx(t), &ResourceRequest{URI: "nope://x"}); err == nil || rr != nil {
		t.Errorf("read of a resource no server has: %v %+v", err, rr)
	}
	if cr, err := c.Complete(ctx(t), &CompleteRequest{Ref: "srv.nope", Argument: "name"}); err == nil || cr != nil {
		t.Errorf("completing a prompt there is not: %v %+v", err, cr)
	}
	if rs, err := c.Resources(ctx(t), ""); err != nil || len(rs.Resources) != 2 || len(rs.Templates) != 1 {
		t.Errorf("resources: %v %+v", err, rs)
	}
	if rr, err := c.ReadResource(ctx(t), &ResourceRequest{URI: "db://tables/x"}); err != nil || rr.Server != "srv" {
		t.Errorf("read: %v %+v", err, rr)
	}
	if cr, err := c.Complete(ctx(t), &CompleteRequest{Ref: "srv.greet", Argument: "name", Value: "B"}); err != nil || !strings.Contains(string(cr.Result), "Bob") {
		t.Errorf("complete: %v %+v", err, cr)
	}
	if in, err := c.Inspect(ctx(t), "srv"); err != nil || len(in) != 1 || in[0].Instructions == "" {
		t.Errorf("inspect: %v %+v", err, in)
	}

	// A watch holds its subscription and log level, and streams events.
	wctx, cancel := context.WithCancel(ctx(t))
	defer cancel()
	events := make(chan Event, 100)
	watchErr := make(chan error, 1)
	go func() {
		watchErr <- c.Watch(wctx, &WatchRequest{Subscribe: []string{"file:///notes.txt"}, LogLevel: "info"}, func(ev Event) error {
			events <- ev
			return nil
		})
	}()
	if ev := <-events; ev.Type != EventReady {
		t.Fatalf("first event %+v", ev)
	}
	var progress []Progress
	res, err := c.CallTool(ctx(t), &CallRequest{Name: "srv.work", OnProgress: func(p Progress) { progress = append(progress, p) }})
	if err != nil || res == nil || len(progress) < 2 {
		t.Fatalf("streamed call: %v %+v %v", err, res, progress)
	}
	seen := map[string]bool{}
	for !(seen[EventLog] && seen[EventResourceUpdated] && seen[EventProgress]) {
		select {
		case ev := <-events:
			seen[ev.Type] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("events seen: %v", seen)
		}
	}
	cancel()
	if err := <-watchErr; err != nil {
		t.Errorf("watch ended with %v", err)
	}
	// A watch its caller stops ends at once.
	enough := errors.New("enough")
	stopped := make(chan error, 1)
	go func() { stopped <- c.Watch(ctx(t), &WatchRequest{}, func(Event) error { return enough }) }()
	select {
	case err := <-stopped:
		if !errors.Is(err, enough) {
			t.Errorf("a watch stopped by its caller ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a watch stopped by its caller did not end")
	}
	// A watch that cannot be set up fails before it streams.
	err = c.Watch(ctx(t), &WatchRequest{Subscribe: []string{"nope://x"}}, func(Event) error { return nil })
	if KindOf(err) != KindUsage {
		t.Errorf("watch with a bad subscription: %v", err)
	}
}

// A countedConn counts itself out of open when first closed.
type countedConn struct {
	net.Conn
	open   *atomic.Int64
	closed sync.Once
}

func (c *countedConn) Close() error {
	c.closed.Do(func() { c.open.Add(-1) })
	return c.Conn.Close()
}

// A Client used from many goroutines at once keeps the connections a burst
// needed for the next one, instead of dialling nearly every call afresh.
func TestClientReusesConnections(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo", Sleep: "50ms"}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	c := serveDaemon(t, e)
	dial := c.Dial
	var dials atomic.Int64
	c.Dial = func(ctx context.Context) (net.Conn, error) {
		dials.Add(1)
		return dial(ctx)
	}
	const n = 40
	burst := func() {
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				if _, err := c.CallTool(ctx(t), &CallRequest{Name: "srv.echo"}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	burst()
	first := dials.Load()
	burst()
	if again := dials.Load() - first; again > n/4 {
		t.Errorf("the second burst of %d calls dialled %d new connections (the first %d)", n, again, first)
	}
}

// A pooled Client holds at most MaxConns connections to the session (64
// when unset): a burst's other calls wait for one, and are all answered.
func TestClientHoldsAtMostMaxConns(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo", Sleep: "30ms"}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ maxConns, calls, want int }{{4, 40, 4}, {0, 100, 64}} {
		c := serveDaemon(t, e)
		c.MaxConns = tc.maxConns
		dial := c.Dial
		var open, most atomic.Int64
		c.Dial = func(ctx context.Context) (net.Conn, error) {
			conn, err := dial(ctx)
			if err == nil {
				n := open.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				conn = &countedConn{Conn: conn, open: &open}
			}
			return conn, err
		}
		var wg sync.WaitGroup
		for range tc.calls {
			wg.Go(func() {
				if _, err := c.CallTool(ctx(t), &CallRequest{Name: "srv.echo"}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if m := most.Load(); m > int64(tc.want) {
			t.Errorf("MaxConns %d: %d calls at once held %d connections at once", tc.maxConns, tc.calls, m)
		}
	}
}

// Streams and answers are not held back by MaxConns: with the one
// connection taken by a slow call, a watch starts and a call's question is
// answered.
func TestClientStreamsPassMaxConns(t *testing.T) {
	// Two servers: a question goes to its call's caller only when no
	// other call to that server is under way.
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25", Tools: []fakemcp.Tool{{Name: "ask", Elicit: formAsk}}}),
		fakeServer(t, "busy", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "slow", Sleep: "3s"}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	c := serveDaemon(t, e)
	c.MaxConns = 1
	slow := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx(t), &CallRequest{Name: "busy.slow"})
		slow <- err
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s never happened", what)
			}
		}
	}
	waitFor("the slow call", func() bool {
		s := e.all()[1]
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.lc.inflight == 1
	})

	wctx, cancel := context.WithCancel(ctx(t))
	defer cancel()
	ready := make(chan struct{})
	go c.Watch(wctx, &WatchRequest{}, func(ev Event) error {
		if ev.Type == EventReady {
			close(ready)
			return errors.New("enough")
		}
		return nil
	})
	select {
	case <-ready:
	case err := <-slow:
		t.Fatalf("the watch waited for the slow call (%v)", err)
	}
	res, err := c.CallTool(ctx(t), &CallRequest{Name: "srv.ask", Elicitation: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`), nil
	}})
	if err != nil || !strings.Contains(string(res.Result), "Ada") {
		t.Fatalf("the asking call: %v %+v", err, res)
	}
	select {
	case err := <-slow:
		t.Fatalf("the asking call waited for the slow call (%v)", err)
	default:
	}
}

// Close closes the connections a pooled Client keeps; the Client still
// works after it.
func TestClientClose(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{}))
	c := serveDaemon(t, e)
	var mu sync.Mutex
	var conns []*closeNotingConn
	dial := c.Dial
	c.Dial = func(ctx context.Context) (net.Conn, error) {
		conn, err := dial(ctx)
		if err != nil {
			return nil, err
		}
		nc := &closeNotingConn{Conn: conn}
		mu.Lock()
		conns = append(conns, nc)
		mu.Unlock()
		return nc, nil
	}
	if _, err := c.Status(ctx(t)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(conns) != 1 || conns[0].closed.Load() {
		t.Fatalf("after a request, %d connections, the first closed: %v", len(conns), len(conns) > 0 && conns[0].closed.Load())
	}
	mu.Unlock()
	c.Close()
	mu.Lock()
	if !conns[0].closed.Load() {
		t.Error("the kept connection is open after Close")
	}
	mu.Unlock()
	if _, err := c.Status(ctx(t)); err != nil {
		t.Fatalf("a request after Close: %v", err)
	}
	c.Close()
	(&Client{Socket: "never.sock"}).Close() // a Client never used
}

type closeNotingConn struct {
	net.Conn
	closed atomic.Bool
}

func (c *closeNotingConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

// A request its caller gave up on while dialling says so, not that no
// session runs (which would send the CLI off to start the servers itself).
func TestUnpooledCancelledDial(t *testing.T) {
	c := &Client{Socket: "test.sock", Unpooled: true, Dial: func(ctx context.Context) (net.Conn, error) {
		<-ctx.Done()
		return nil, &net.OpError{Op: "dial", Net: "unix", Err: ctx.Err()}
	}}
	cctx, cancel := context.WithCancel(ctx(t))
	cancel()
	if _, err := c.Status(cctx); !errors.Is(err, context.Canceled) || errors.Is(err, ErrNoSession) {
		t.Fatalf("a status given up on while dialling: %v", err)
	}
}

// A call's answer carries its result as the server sent it (not checked
// and compacted again), and the client reads it back as encoding/json
// would.
func TestCallResultJSON(t *testing.T) {
	for _, res := range []*CallResult{
		{Server: "fs", Tool: "read", Result: json.RawMessage(`{ "content" : [ {"type":"text","text":"a\u00e9 <b>\n"} ] }`)},
		{Server: `odd "name"`, Tool: "tool\twith\ttabs é", Result: json.RawMessage(`{"isError":true}`), IsError: true},
		{Server: "s", Tool: "t"},
	} {
		got := res.appendJSON(nil)
		want, _ := marshalVerbatim(res)
		var a, b any
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		json.Unmarshal(want, &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("got %s\nwant %s", got, want)
		}
		if len(res.Result) > 0 && !bytes.Contains(got, res.Result) {
			t.Errorf("%s does not carry the result as sent: %s", got, res.Result)
		}
		// What the client reads back, as encoding/json read it.
		back, err := parseCallResult(got)
		var old CallResult
		json.Unmarshal(got, &old)
		if err != nil || !reflect.DeepEqual(*back, old) {
			t.Errorf("parseCallResult(%s) = %+v, %v; want %+v", got, back, err, old)
		}
	}
	if _, err := parseCallResult([]byte(`{"server": 1}`)); err == nil {
		t.Error("a server that is not a string: no error")
	}
}

// Every kind of error the session answers with has its own HTTP status: a
// kind without one went out as 500, an internal error.
func TestErrorStatusOfEveryKind(t *testing.T) {
	for _, k := range []Kind{KindUsage, KindConfig, KindUnavailable, KindTimeout, KindProtocol, KindAuth, KindInternal} {
		rec := httptest.NewRecorder()
		writeError(rec, errorf(k, "", "test"))
		if want := statusOfKind[k]; want == 0 || rec.Code != want || (k != KindInternal && rec.Code == http.StatusInternalServerError) {
			t.Errorf("kind %s: status %d", k, rec.Code)
		}
	}
}

// A handler's panic is its request's error: the client gets an internal
// error it can show, the log the stack.
func TestRequestPanicAnswered(t *testing.T) {
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		aw := &answerWriter{ResponseWriter: w}
		redact := func(s string) string { return strings.ReplaceAll(s, "s3cret", "***") }
		defer recoverRequest(log, redact, aw, r)
		if r.URL.Path == "/v1/events" {
			aw.Write([]byte(`{"type":"ready"}` + "\n"))
			aw.Flush()
		}
		if r.URL.Path == "/v1/status" {
			panic("token s3cret")
		}
		var m map[string]int
		m["x"] = 1 // a nil map: a bug
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/v1/tools")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Error *Error }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusInternalServerError || body.Error == nil || body.Error.Kind != KindInternal ||
		!strings.HasPrefix(body.Error.Message, "the session failed on GET /v1/tools: a bug in mcpctl (assignment to entry in nil map)") {
		t.Errorf("%d %+v", resp.StatusCode, body.Error)
	}
	if !strings.Contains(logged.String(), "request failed: a bug in mcpctl") || !strings.Contains(logged.String(), "daemon_test.go") {
		t.Errorf("log: %s", logged.String())
	}
	// Begun (a stream): no error line after what was sent; it ends.
	resp, err = http.Get(srv.URL + "/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(raw) != `{"type":"ready"}`+"\n" {
		t.Errorf("stream after the panic: %q", raw)
	}
	// The panic's value is redacted in the answer and in the log.
	resp, err = http.Get(srv.URL + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(raw), "a bug in mcpctl (token ***)") || strings.Contains(string(raw)+logged.String(), "s3cret") {
		t.Errorf("secret in the panic: %s\nlog: %s", raw, logged.String())
	}
}

// Requests to a session that is ending are told so; its status still
// answers, saying it is stopping.
func TestDaemonStoppingAnswers(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	h := NewDaemon(e, SessionInfo{}, nil).Handler()
	e.Close()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/tools", nil))
	if rec.Code == http.StatusOK || !strings.Contains(rec.Body.String(), `"message":"the session is stopping"`) {
		t.Errorf("tools: %d %s", rec.Code, rec.Body)
	}
	// A second down is answered as the first.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/shutdown", strings.NewReader("{}")))
	if rec.Code != http.StatusOK {
		t.Errorf("shutdown while stopping: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/status", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"stopping":true`) {
		t.Errorf("status: %d %s", rec.Code, rec.Body)
	}
}

// A list that leaves out a server that starts on use and could not start
// is partial: the others' items and an error naming it, from the engine
// and through the session; asked again, the same, without a new start.
func TestListsLeaveOutUnstartable(t *testing.T) {
	three := 3
	broken := fakeServer(t, "broken", fakemcp.Spec{Exit: &three})
	broken.Activation = "lazy"
	e := newEngine(t, fakeServer(t, "good", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}}), broken)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	c := serveDaemon(t, e)
	check := func(via string, tools []*Tool, err error) {
		t.Helper()
		if len(tools) != 1 || tools[0].Name() != "good.echo" || KindOf(err) != KindUnavailable ||
			!strings.HasPrefix(err.Error(), "the list leaves out server broken: it could not start: server broken exited with code 3") {
			t.Errorf("%s: %v, %v", via, tools, err)
		}
	}
	tools, err := e.Tools("")
	check("engine", tools, err)
	tools, err = e.Tools("")
	check("engine again", tools, err)
	tools, err = c.Tools(ctx(t), "")
	check("client", tools, err)
	rs, err := c.Resources(ctx(t), "")
	if rs == nil || KindOf(err) != KindUnavailable {
		t.Errorf("client resources: %v, %v", rs, err)
	}
	// A hard error has no list.
	if rs, err := c.Resources(ctx(t), "nosuch"); rs != nil || KindOf(err) != KindUsage {
		t.Errorf("unknown server: %v, %v", rs, err)
	}
	if tools, err := c.Tools(ctx(t), "broken"); tools != nil || KindOf(err) != KindUnavailable {
		t.Errorf("named: %v, %v", tools, err)
	}
}

// A session that drops a request without answering (killed mid-call) is
// said so, without the HTTP of the socket (`Post "http://mcpctl/v1/…"`).
func TestClientSessionDroppedRequest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	c := &Client{Socket: "test.sock", Dial: func(ctx context.Context) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "tcp", srv.Listener.Addr().String())
	}}
	_, err := c.CallTool(ctx(t), &CallRequest{Name: "srv.echo"})
	if KindOf(err) != KindUnavailable || !strings.HasPrefix(err.Error(), "the session stopped answering (was it stopped or killed?): ") || strings.Contains(err.Error(), "http://") {
		t.Errorf("dropped: %v", err)
	}
}

// A reload that waited for another and finds the session stopped meanwhile
// (mcpctl down) says so, not the Go API's "the engine is closed".
func TestDaemonReloadAfterStop(t *testing.T) {
	srv := fakeServer(t, "srv", fakemcp.Spec{})
	e := newEngine(t, srv)
	d := NewDaemon(e, SessionInfo{}, nil)
	d.SetConfigLoader(func() (*config.Config, error) { return &config.Config{Servers: []*config.Server{srv}}, nil })
	e.reloadMu.Lock() // a reload under way
	answered := make(chan *httptest.ResponseRecorder)
	go func() {
		rec := httptest.NewRecorder()
		d.serveReload(rec, httptest.NewRequest(http.MethodPost, "/v1/reload", strings.NewReader("{}")))
		answered <- rec
	}()
	time.Sleep(50 * time.Millisecond)
	e.Close()
	e.reloadMu.Unlock()
	if rec := <-answered; !strings.Contains(rec.Body.String(), `"message":"the session stopped before it could reload"`) {
		t.Errorf("reload after stop: %d %s", rec.Code, rec.Body)
	}
}

// A transient server whose start failed is tried again by a listing, as by
// a call: the next list that can start it lists it.
func TestListsRetryTransientServer(t *testing.T) {
	three := 3
	brief := fakeServer(t, "brief", fakemcp.Spec{Exit: &three})
	brief.Activation = "transient"
	e := newEngine(t, brief)
	if tools, err := e.Tools(""); len(tools) != 0 || KindOf(err) != KindUnavailable {
		t.Fatalf("failing: %v, %v", tools, err)
	}
	data, _ := json.Marshal(fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	if err := os.WriteFile(brief.Args[0], data, 0o644); err != nil { // fixed
		t.Fatal(err)
	}
	if tools, err := e.Tools(""); err != nil || len(tools) != 1 {
		t.Errorf("fixed: %v, %v", tools, err)
	}
}
