package wsmcp

import (
	"context"
	"log/slog"
	"net/http"
	"strings"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Handler serves MCP over WebSocket: each connection that offers the
// subprotocol "mcp" gets a session of the server getServer returns for its
// request (nil answers 404). A WebSocket request that does not offer "mcp"
// is answered 400 before any upgrade.
//
// Cross-origin browser requests are refused (coder/websocket's default),
// so a web page cannot drive a local server.
func Handler(getServer func(*http.Request) *mcp.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hasToken(r.Header, "Upgrade", "websocket") && !hasToken(r.Header, "Sec-WebSocket-Protocol", Subprotocol) {
			http.Error(w, `MCP over WebSocket needs the subprotocol "mcp": send Sec-WebSocket-Protocol: mcp`, http.StatusBadRequest)
			return
		}
		srv := getServer(r)
		if srv == nil {
			http.Error(w, "no MCP server here", http.StatusNotFound)
			return
		}
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{Subprotocol}})
		if err != nil {
			return // Accept has answered
		}
		c := newConn(ws, "client", slog.Default(), 0)
		// The request's ctx ends when this handler returns, so the handler
		// stays until the session does.
		ss, err := srv.Connect(context.WithoutCancel(r.Context()), serverTransport{c}, nil)
		if err != nil {
			c.Close()
			return
		}
		ss.Wait()
	})
}

// serverTransport hands an accepted socket to mcp.Server.Connect.
type serverTransport struct{ c *conn }

func (t serverTransport) Connect(context.Context) (mcp.Connection, error) { return t.c, nil }

// hasToken reports whether the comma-separated header key lists token.
func hasToken(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
