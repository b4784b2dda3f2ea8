package commands

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
)

// A hint to serve's client keeps what it can act on, not what to type at
// mcpctl's command line, which it has not.
func TestClientHint(t *testing.T) {
	tests := []struct{ in, want string }{
		{"did you mean fake.echo?", "did you mean fake.echo?"},
		{"see the tool's input schema: mcpctl tools fake.echo", ""},
		{"give it longer with --timeout, e.g. --timeout 2s", ""},
		{"see the resources with: mcpctl resources; or name the server: --server SERVER", ""},
		{"server fake restarts by itself (restart: on-failure); try again, or add --retry 1", "server fake restarts by itself (restart: on-failure)"},
		{"the other servers' items are listed; see their states with: mcpctl status", "the other servers' items are listed"},
		{"check the server's command and arguments (mcp.json:1:14)", "check the server's command and arguments (mcp.json:1:14)"},
		{"it stays down until mcpctl serve starts again (with serve --manage, the mcpctl.restart tool restarts it)", "it stays down until mcpctl serve starts again (with serve --manage, the mcpctl.restart tool restarts it)"},
	}
	for _, tt := range tests {
		if got := clientHint(tt.in); got != tt.want {
			t.Errorf("clientHint(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A request cut short by serve's end is told why; one its client
// cancelled gets no answer (nil here).
func TestServingEnded(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	if servingEnded(ctx) != nil {
		t.Error("a request under way was taken for ended")
	}
	cancel(Signaled{Signal: os.Signal(syscall.SIGTERM)})
	if err := servingEnded(ctx); err == nil || !strings.Contains(err.Error(), "mcpctl serve is ending (interrupted by terminated): the request was cancelled on its server") {
		t.Errorf("after SIGTERM: %v", err)
	}
	byClient, cancelClient := context.WithCancel(context.Background())
	cancelClient()
	if err := servingEnded(byClient); err != nil {
		t.Errorf("cancelled by its client: %v", err)
	}
	stopped, stop := context.WithCancelCause(context.Background())
	stop(errServeStopped)
	if err := servingEnded(stopped); err == nil || !errors.Is(context.Cause(stopped), errServeStopped) {
		t.Errorf("serve stopped: %v", err)
	}
}
