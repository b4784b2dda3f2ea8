package engine

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A captureConn sits between the SDK and a server's connection and keeps the
// raw JSON of the results mcpctl prints. The SDK decodes results into typed
// structs that drop fields it does not model (a tool's execution, unknown
// content types fail the whole call); mcpctl promises to print everything
// the server sent, so it takes the bytes from here.
//
// A tools/call is matched to its caller by the progress token the engine
// puts in its _meta; tools/list pages are handed to onToolsList whole.
type captureConn struct {
	mcp.Connection

	mu      sync.Mutex
	pending map[jsonrpc.ID]pendingCall // outgoing calls whose results we want
	slots   map[string]*rawSlot        // progress token → waiting caller

	onToolsList func(result json.RawMessage)
}

type pendingCall struct {
	method string
	slot   *rawSlot
}

// A rawSlot receives the raw outcome of one tools/call.
type rawSlot struct {
	got    bool
	result json.RawMessage
	err    error
}

func newCaptureConn(inner mcp.Connection) *captureConn {
	return &captureConn{Connection: inner, pending: map[jsonrpc.ID]pendingCall{}, slots: map[string]*rawSlot{}}
}

// expect registers a caller for the tools/call carrying token.
func (c *captureConn) expect(token string) *rawSlot {
	s := &rawSlot{}
	c.mu.Lock()
	c.slots[token] = s
	c.mu.Unlock()
	return s
}

// take returns what arrived for token and forgets it.
func (c *captureConn) take(token string) rawSlot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.slots[token]
	delete(c.slots, token)
	if s == nil {
		return rawSlot{}
	}
	return *s
}

func (c *captureConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		switch req.Method {
		case "tools/call":
			var p struct {
				Meta struct {
					ProgressToken any `json:"progressToken"`
				} `json:"_meta"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				if tok, ok := p.Meta.ProgressToken.(string); ok {
					c.mu.Lock()
					if s := c.slots[tok]; s != nil {
						c.pending[req.ID] = pendingCall{method: req.Method, slot: s}
					}
					c.mu.Unlock()
				}
			}
		case "tools/list":
			c.mu.Lock()
			c.pending[req.ID] = pendingCall{method: req.Method}
			c.mu.Unlock()
		}
	}
	return c.Connection.Write(ctx, msg)
}

func (c *captureConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return msg, err
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return msg, nil
	}
	c.mu.Lock()
	pc, found := c.pending[resp.ID]
	if found {
		delete(c.pending, resp.ID)
		if pc.slot != nil {
			pc.slot.got = true
			pc.slot.result = append(json.RawMessage(nil), resp.Result...)
			pc.slot.err = resp.Error
		}
	}
	c.mu.Unlock()
	if found && pc.method == "tools/list" && resp.Error == nil && c.onToolsList != nil {
		c.onToolsList(resp.Result)
	}
	return msg, nil
}

// A connTransport hands the SDK a connection mcpctl already made.
type connTransport struct{ conn mcp.Connection }

func (t connTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }
