package wsmcp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ClientTransport is an mcp.Transport that dials an MCP server over a
// WebSocket (ws:// or wss://; http:// and https:// mean the same).
type ClientTransport struct {
	URL string
	// Header is sent on the handshake, e.g. Authorization.
	Header http.Header
	// HTTPClient makes the handshake; nil means http.DefaultClient. Its
	// Timeout bounds only the handshake, not the connection.
	HTTPClient *http.Client
	// Logger is told of frames skipped as not JSON-RPC; nil discards.
	Logger *slog.Logger
	// MaxMessage bounds one message from the server; 0 means MaxMessage.
	MaxMessage int64
}

// Connect implements mcp.Transport. ctx bounds the handshake only: the
// connection lives until closed, as the SDK expects of every transport.
func (t *ClientTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	ws, resp, err := websocket.Dial(ctx, t.URL, &websocket.DialOptions{
		HTTPClient:   t.HTTPClient,
		HTTPHeader:   t.Header,
		Subprotocols: []string{Subprotocol},
	})
	if err != nil {
		return nil, fmt.Errorf("WebSocket handshake with %s: %w%s", t.URL, err, refusal(resp))
	}
	if got := ws.Subprotocol(); got != Subprotocol {
		// coder/websocket accepts a server that names no subprotocol; MCP
		// over a socket that never agreed to it would be a guess.
		ws.Close(websocket.StatusProtocolError, `subprotocol "mcp" required`)
		if got == "" {
			got = "none"
		} else {
			got = fmt.Sprintf("%q", got)
		}
		return nil, fmt.Errorf(`WebSocket server at %s did not agree to the subprotocol "mcp" (it chose %s), so it does not speak MCP over WebSocket`, t.URL, got)
	}
	return newConn(ws, "server", t.Logger, t.MaxMessage), nil
}

// refusal quotes what a server said when it refused the handshake, which
// usually says why (wrong path, missing token).
func refusal(resp *http.Response) string {
	if resp == nil || resp.Body == nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return ""
	}
	return fmt.Sprintf(" (the server said: %s)", b)
}
