package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/config"
)

// A nil *Error in an error variable (ConfigError when all is well) is safe
// to ask about: it is of no kind, and not ErrNoSession.
func TestNilErrorSafe(t *testing.T) {
	e := New(nil, nil)
	defer e.Close()
	var err error = e.ConfigError()
	if KindOf(err) != "" || errors.Is(err, ErrNoSession) || errors.Unwrap(err) != nil || err.Error() != "<nil>" {
		t.Errorf("nil *Error: kind %q, is %v", KindOf(err), errors.Is(err, ErrNoSession))
	}
}

// ReloadFailed keeps the config's error as its cause, with file and line,
// makes any error it is given of kind config, and takes nil as no failure.
func TestReloadFailedKeepsCause(t *testing.T) {
	e := New(nil, nil)
	defer e.Close()
	_, perr := config.Parse("m.json", []byte(`{"servers": {"a": {"command": "x", "startupTimeout": "abc"}}}`), "", nil)
	if perr == nil {
		t.Fatal("the config parsed")
	}
	got := e.ReloadFailed(perr)
	var ce *config.Error
	if got.Kind != KindConfig || !errors.As(error(got), &ce) || !strings.HasPrefix(got.Message, "m.json:1:") {
		t.Errorf("config error: %+v (as *config.Error: %v)", got, ce != nil)
	}
	if e.ConfigError() != got {
		t.Error("ConfigError is not the recorded error")
	}
	other := &Error{Kind: KindAuth, Message: "m"}
	if got := e.ReloadFailed(other); got.Kind != KindConfig || !errors.Is(got, other) || other.Kind != KindAuth {
		t.Errorf("an *Error of kind auth: %+v, given %+v", got, other)
	}
	if got := e.ReloadFailed(nil); got != nil || e.ConfigError() == nil {
		t.Errorf("ReloadFailed(nil) = %v; ConfigError %v", got, e.ConfigError())
	}
	var typedNil *Error
	if got := e.ReloadFailed(typedNil); got != nil || e.ConfigError() == nil || e.ConfigError().Message == "<nil>" {
		t.Errorf("ReloadFailed of a nil *Error = %v; ConfigError %v", got, e.ConfigError())
	}
}

// A nil *Client, and a Watch without its func, are usage errors, with no
// panic later from the stopped-session watch.
func TestClientMisuse(t *testing.T) {
	var c *Client
	if _, err := c.Status(context.Background()); KindOf(err) != KindUsage {
		t.Errorf("nil client: %v", err)
	}
	c = &Client{Socket: "/nonexistent/s.sock"}
	if err := c.Watch(context.Background(), nil, nil); KindOf(err) != KindUsage || !strings.Contains(err.Error(), "nil func(Event) error") {
		t.Errorf("nil func: %v", err)
	}
	if _, err := c.Servers(context.Background(), "explode", "a"); KindOf(err) != KindUsage || !strings.Contains(err.Error(), `act "explode"`) {
		t.Errorf("unknown act: %v", err)
	}
	time.Sleep(stoppedAfter + 100*time.Millisecond) // a stray watch would panic here
}

// The SDK's errors name the streamable HTTP session; mcpctl's do not.
func TestWithoutSessionID(t *testing.T) {
	for in, want := range map[string]string{
		"standalone SSE stream: failed to reconnect (session ID: 86ff30b6-b8c0): connection failed": "standalone SSE stream: failed to reconnect: connection failed",
		"calling \"tools/call\": exceeded 5 retries without progress (session ID: abc)":             "calling \"tools/call\": exceeded 5 retries without progress",
		"no session here": "no session here",
	} {
		if got := withoutSessionID(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
