// Package wsmcp carries MCP over a WebSocket: subprotocol "mcp", one
// JSON-RPC message per text frame. The Go SDK has no WebSocket transport,
// so this package supplies one on github.com/coder/websocket, for both
// ends: ClientTransport dials a server, Handler serves an mcp.Server.
package wsmcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Subprotocol is the WebSocket subprotocol both ends must agree on. A peer
// that does not speak it is refused rather than guessed at.
const Subprotocol = "mcp"

// MaxMessage bounds one inbound message, as mcpctl bounds one stdio line:
// enough for any real answer, not enough for a runaway peer to exhaust
// memory. A longer message closes the connection with status 1009.
const MaxMessage = 64 << 20

// conn is an mcp.Connection over one WebSocket.
//
// coder/websocket closes the whole connection when the ctx of a Read or
// Write ends mid-operation. The SDK passes each caller's ctx to Write and
// expects a cancelled call not to break the session, so reads run in a
// goroutine of their own and writes never hand the caller's ctx to the
// socket.
type conn struct {
	ws   *websocket.Conn
	peer string // "server" or "client", for messages
	log  *slog.Logger
	max  int64

	incoming chan jsonrpc.Message
	readDone chan struct{} // closed once readErr is set and reading stopped
	readErr  error

	// wmu serialises frames; a channel so a writer waiting its turn can
	// give up when its ctx ends.
	wmu chan struct{}

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

func newConn(ws *websocket.Conn, peer string, log *slog.Logger, max int64) *conn {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if max <= 0 {
		max = MaxMessage
	}
	ws.SetReadLimit(max)
	c := &conn{
		ws:       ws,
		peer:     peer,
		log:      log,
		max:      max,
		incoming: make(chan jsonrpc.Message),
		readDone: make(chan struct{}),
		wmu:      make(chan struct{}, 1),
		closed:   make(chan struct{}),
	}
	go c.readLoop()
	return c
}

// readLoop reads frames until the socket fails or closes. It also keeps
// the socket's control frames (ping, close) answered, which coder/websocket
// does only while someone reads.
func (c *conn) readLoop() {
	defer close(c.readDone)
	for {
		typ, data, err := c.ws.Read(context.Background())
		if err != nil {
			c.readErr = c.readError(err)
			return
		}
		if typ != websocket.MessageText {
			c.skip(data, "binary frame; MCP over WebSocket sends each JSON-RPC message as a text frame")
			continue
		}
		msg, err := jsonrpc.DecodeMessage(data)
		if err != nil {
			// Noise, like a banner on stdout, should not end the session.
			c.skip(data, "not a JSON-RPC message: "+err.Error())
			continue
		}
		select {
		case c.incoming <- msg:
		case <-c.closed:
			c.readErr = io.EOF
			return
		}
	}
}

func (c *conn) skip(frame []byte, why string) {
	s := string(frame)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	c.log.Warn("skipped a WebSocket frame from the "+c.peer, "why", why, "frame", s)
}

// readError says why reading ended. A normal closure wraps io.EOF, which
// the SDK takes as a clean end of session; anything else is reported.
func (c *conn) readError(err error) error {
	select {
	case <-c.closed:
		return io.EOF
	default:
	}
	if errors.Is(err, websocket.ErrMessageTooBig) {
		return fmt.Errorf("a message from the %s was longer than %s, the most mcpctl reads in one message; the WebSocket was closed", c.peer, size(c.max))
	}
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		how := fmt.Sprintf("the %s closed the WebSocket (status %d", c.peer, int(ce.Code))
		if ce.Reason != "" {
			how += ": " + ce.Reason
		}
		how += ")"
		if ce.Code == websocket.StatusNormalClosure || ce.Code == websocket.StatusGoingAway {
			return fmt.Errorf("%s: %w", how, io.EOF)
		}
		return errors.New(how)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		// Not wrapped: without a close frame this is no clean end.
		return fmt.Errorf("the %s dropped the connection without closing the WebSocket (%v)", c.peer, err)
	}
	return fmt.Errorf("reading from the WebSocket: %w", err)
}

// Read implements mcp.Connection.
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case msg := <-c.incoming:
		return msg, nil
	case <-c.readDone:
		return nil, c.readErr
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write implements mcp.Connection: one message, one text frame.
//
// Once a frame starts it is finished even if ctx ends, since half a frame
// would corrupt the stream: the caller gets ctx.Err() at once and the
// frame completes in the background, holding up later writers until it
// does (Close ends it if the peer never drains).
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a JSON-RPC message: %w", err)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closed:
		return mcp.ErrConnectionClosed
	case c.wmu <- struct{}{}:
	}
	if err := ctx.Err(); err != nil {
		<-c.wmu
		return err
	}
	write := func() error {
		defer func() { <-c.wmu }()
		if err := c.ws.Write(context.Background(), websocket.MessageText, data); err != nil {
			select {
			case <-c.closed:
				return mcp.ErrConnectionClosed
			default:
			}
			return fmt.Errorf("writing to the WebSocket: %w", err)
		}
		return nil
	}
	if ctx.Done() == nil {
		return write()
	}
	done := make(chan error, 1)
	go func() { done <- write() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close implements mcp.Connection with a normal closure, so the peer sees
// a clean end rather than a dropped connection.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		err := c.ws.Close(websocket.StatusNormalClosure, "")
		// Already closed by the peer or by a failed read: nothing to report.
		if err != nil && !isClosedErr(err) {
			c.closeErr = err
		}
	})
	return c.closeErr
}

// isClosedErr reports an error that only says the peer got there first.
func isClosedErr(err error) bool {
	return websocket.CloseStatus(err) != -1 || errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF)
}

// SessionID implements mcp.Connection. A WebSocket is its own session, so
// there is no Mcp-Session-Id.
func (c *conn) SessionID() string { return "" }

func size(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
