package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpctl/mcpctl/engine"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// A hint that offered an alternative to advice left out stands alone.
func TestDescribeDropsTheOrOfAdviceLeftOut(t *testing.T) {
	err := &engine.Error{Kind: engine.KindTimeout, Message: "the call to f.hang did not answer within 1s",
		Hint: []string{"give it longer with --timeout, e.g. --timeout 2s", "or raise requestTimeout of server f (mcp.json:3:5) for all its requests"}}
	if got, want := describe(err), "the call to f.hang did not answer within 1s\nhint: raise requestTimeout of server f (mcp.json:3:5) for all its requests"; got != want {
		t.Errorf("describe:\n%s\nwant\n%s", got, want)
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

// A call's progress reaches the client ever increasing, as MCP asks: a
// task's status updates (progress 0) count on from the last, and one that
// says nothing new is not sent.
func TestProgressRelayIncreases(t *testing.T) {
	var sent []string
	relay := progressRelay("tok", func(p *mcp.ProgressNotificationParams) {
		sent = append(sent, fmt.Sprintf("%v/%v %s", p.Progress, p.Total, p.Message))
	})
	for _, p := range []engine.Progress{
		{Progress: 1, Total: 3, Message: "one"},
		{Status: "working", Message: "Gathering"},
		{Status: "working", Message: "Gathering"},
		{Status: "working", Message: "Analyzing"},
		{Progress: 3, Total: 3, Message: "late"},
		{Status: "completed"},
	} {
		relay(p)
	}
	want := []string{"1/3 one", "2/0 Gathering", "3/0 Analyzing", "3.0000000000000004/0 late", "4/0 completed"}
	if !slices.Equal(sent, want) {
		t.Errorf("sent %q, want %q", sent, want)
	}
	// A server's own progress from 0 goes as it is, its total kept.
	sent = nil
	relay = progressRelay("tok", func(p *mcp.ProgressNotificationParams) {
		sent = append(sent, fmt.Sprintf("%v/%v %s", p.Progress, p.Total, p.Message))
	})
	for _, p := range []engine.Progress{{Progress: 0, Total: 1, Message: "starting"}, {Progress: 0.5, Total: 1}, {Progress: 1, Total: 1}} {
		relay(p)
	}
	if want := []string{"0/1 starting", "0.5/1 ", "1/1 "}; !slices.Equal(sent, want) {
		t.Errorf("sent %q, want %q", sent, want)
	}
}

// A request its client cancelled is answered (over HTTP, where the SDK
// answers it) with a JSON-RPC error code: it was code 0.
func TestCancelledRequestHasACode(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := toolFailure(ctx, context.Canceled)
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInternalError {
		t.Errorf("toolFailure: %#v", err)
	}
	if err := rpcError(context.Canceled); !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInternalError {
		t.Errorf("rpcError: %#v", err)
	}
}
