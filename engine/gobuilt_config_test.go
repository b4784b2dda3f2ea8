package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/internal/fakemcp"
)

// newGoBuilt is New for a config built in Go, a panic in it a failure.
func newGoBuilt(t *testing.T, servers ...*config.Server) (e *Engine) {
	t.Helper()
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("New panicked: %v", r)
			}
		}()
		e = New(&config.Config{File: "mcp.json", Servers: servers}, &Options{ShutdownTimeout: 2 * time.Second})
	}()
	t.Cleanup(func() { within(t, "Close", func() { e.Close() }) })
	return e
}

// within runs f, failing the test if it takes more than 10s: without the
// check of the config, a start could wait for ever.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		f()
	}()
	select {
	case r := <-done:
		if r != nil {
			t.Fatalf("%s panicked: %v", what, r)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return within 10s", what)
	}
}

// startRefused checks that Start, StartAsync and Start of a named server
// fail at once, of kind config, saying want; a Start that does not
// return in time is a failure, not a hung test.
func startRefused(t *testing.T, e *Engine, want string, names ...string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- e.Start(context.Background(), names...) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("Start(%q) did not return within 5s", names)
	}
	var ee *Error
	if !errors.As(err, &ee) || ee.Kind != KindConfig || !strings.Contains(ee.Message, want) {
		t.Fatalf("Start(%q) = %v (kind %q), want a config error saying %q", names, err, KindOf(err), want)
	}
	go func() { done <- e.StartAsync(context.Background(), names...)() }()
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("StartAsync(%q) did not end within 5s", names)
	}
	if KindOf(err) != KindConfig || !strings.Contains(err.Error(), want) {
		t.Errorf("StartAsync(%q) = %v, want a config error saying %q", names, err, want)
	}
	if ce := e.ConfigError(); ce == nil || !strings.Contains(ce.Message, want) {
		t.Errorf("ConfigError = %v", ce)
	}
}

// A dependency cycle in a config built in Go is refused by Start at once,
// which used to wait for ever, even after Close.
func TestGoBuiltConfigCycle(t *testing.T) {
	a := fakeServer(t, "a", fakemcp.Spec{})
	b := fakeServer(t, "b", fakemcp.Spec{})
	a.DependsOn, b.DependsOn = []string{"b"}, []string{"a"}
	e := newGoBuilt(t, a, b)
	startRefused(t, e, "dependency cycle: a → b → a")
	startRefused(t, e, "dependency cycle", "a")
	// So is a request that would start one, lazy.
	a.Activation, b.Activation = "lazy", "lazy"
	e = newGoBuilt(t, a, b)
	done := make(chan error, 1)
	go func() {
		_, err := e.CallTool(context.Background(), &CallRequest{Name: "a.echo"})
		done <- err
	}()
	select {
	case err := <-done:
		if KindOf(err) != KindConfig || !strings.Contains(err.Error(), "dependency cycle") {
			t.Errorf("a call to lazy a: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a call to lazy a did not return within 5s")
	}
	within(t, "Close", func() { e.Close() })
}

// A server name with a dot is refused: its tools would be called as
// another server's ("my.q.addtool" is tool q.addtool of server my).
func TestGoBuiltConfigDottedName(t *testing.T) {
	s := fakeServer(t, "myq", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "addtool"}}})
	s.Name = "my.q"
	e := newGoBuilt(t, s)
	startRefused(t, e, `invalid server name`)
	if !strings.Contains(e.ConfigError().Message, `got "my.q"`) {
		t.Errorf("the error does not name the server: %v", e.ConfigError())
	}
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "my.q.addtool"})
	if KindOf(err) != KindConfig || !strings.Contains(err.Error(), "invalid server name") {
		t.Errorf("a call of my.q.addtool: %v", err)
	}
}

// Two servers of one name: refused, rather than both started and the
// first hidden.
func TestGoBuiltConfigDuplicateName(t *testing.T) {
	one := fakeServer(t, "a", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "one"}}})
	two := fakeServer(t, "a", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "two"}}})
	e := newGoBuilt(t, one, two)
	startRefused(t, e, `duplicate server name "a"`)
	if st := e.Status(); len(st) != 0 {
		t.Errorf("status of an engine with no usable config: %+v", st)
	}
}

// An activation or a type that is none of those known is refused, as in
// a file, with what is allowed.
func TestGoBuiltConfigUnknownValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*config.Server)
		want string
	}{
		{"activation", func(s *config.Server) { s.Activation = "sometimes" }, `servers.a.activation: expected one of "eager", "lazy", "manual", "transient", got "sometimes"`},
		{"type", func(s *config.Server) { s.Type, s.URL, s.Command = "grpc", "http://127.0.0.1:1/mcp", "" }, `servers.a.type: expected one of "stdio", "http", "sse", "ws", got "grpc"`},
		{"restart", func(s *config.Server) { s.Restart = "always" }, `servers.a.restart: expected one of "never", "on-failure", got "always"`},
		{"url", func(s *config.Server) { s.Type, s.Command, s.Source = "http", "", "" }, `servers.a.url: required, but missing`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fakeServer(t, "a", fakemcp.Spec{})
			tc.set(s)
			startRefused(t, newGoBuilt(t, s), tc.want)
		})
	}
}

// A stdio server without a command says so, not "command not found:  ".
func TestGoBuiltConfigNoCommand(t *testing.T) {
	s := fakeServer(t, "a", fakemcp.Spec{})
	s.Command = ""
	startRefused(t, newGoBuilt(t, s), `servers.a.command: required, but missing`)
}

// A nil server in Servers is refused, not a panic.
func TestGoBuiltConfigNilServer(t *testing.T) {
	e := newGoBuilt(t, fakeServer(t, "a", fakemcp.Spec{}), nil)
	startRefused(t, e, "servers[1]: is a nil *config.Server")
	startRefused(t, e, "servers[1]: is a nil *config.Server", "a")
	// Its lists say why too, where they listed nothing; its config's
	// names and files skip the nil server.
	if tools, err := e.Tools(""); KindOf(err) != KindConfig || len(tools) != 0 {
		t.Errorf("Tools: %v, %v; want the config error", tools, err)
	}
	if names := e.Config().Names(); len(names) != 1 || len(e.Config().WatchFiles()) != 0 {
		t.Errorf("names %v, files %v", names, e.Config().WatchFiles())
	}
}

// Reload refuses such a config as one that does not load: the running
// config stays, and ConfigError says why until a reload succeeds. An
// engine New refused a config to starts from a good one a reload gives.
func TestGoBuiltConfigReload(t *testing.T) {
	spec := fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}}
	a := fakeServer(t, "a", spec)
	e := newGoBuilt(t, a)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	b := fakeServer(t, "b", spec)
	b.DependsOn = []string{"b"}
	for i, bad := range [][]*config.Server{{a, b}, {a, a}, {a, nil}, {a, {Name: "my.q", Command: a.Command}}} {
		var err error
		within(t, fmt.Sprintf("reload %d", i), func() { _, err = e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: bad}) })
		if KindOf(err) != KindConfig || e.ConfigError() == nil || e.ConfigError().Message != err.Error() {
			t.Errorf("reload %d: %v (ConfigError %v)", i, err, e.ConfigError())
		}
	}
	if st := e.Status(); len(st) != 1 || st[0].Name != "a" || st[0].State != StateReady {
		t.Errorf("after refused reloads: %+v", st)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "a.echo"}); err != nil {
		t.Errorf("a call after refused reloads: %v", err)
	}
	b.DependsOn = nil
	if _, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: []*config.Server{a, b}}); err != nil || e.ConfigError() != nil {
		t.Errorf("a good reload: %v (ConfigError %v)", err, e.ConfigError())
	}

	bad := newGoBuilt(t, a, a)
	if _, err := bad.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: []*config.Server{a}}); err != nil {
		t.Fatal(err)
	}
	if err := bad.Start(ctx(t)); err != nil || bad.ConfigError() != nil {
		t.Errorf("Start after a good reload: %v (ConfigError %v)", err, bad.ConfigError())
	}
	if _, err := bad.CallTool(ctx(t), &CallRequest{Name: "a.echo"}); err != nil {
		t.Errorf("a call after a good reload: %v", err)
	}
}

// Errors of several servers are all said, one a line.
func TestGoBuiltConfigAllProblems(t *testing.T) {
	s := fakeServer(t, "a", fakemcp.Spec{})
	e := newGoBuilt(t, nil, s, &config.Server{Name: "b", Activation: "sometimes"})
	err := e.Start(ctx(t))
	msg := fmt.Sprint(err)
	for _, want := range []string{"servers[0]: is a nil", "servers.b.command: required, but missing", "servers.b.activation"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q: want %q", msg, want)
		}
	}
	if n := strings.Count(msg, "\n"); n != 2 {
		t.Errorf("error %q: %d lines, want 3", msg, n+1)
	}
}
