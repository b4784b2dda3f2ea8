package commands

import "testing"

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
