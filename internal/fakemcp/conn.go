package fakemcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// transport is stdio with a connection that does what the SDK's typed
// server cannot: raw results and errors, extra fields in listings, a legacy
// protocol version, and tasks.
type transport struct{ f *fake }

func (t *transport) Connect(ctx context.Context) (mcp.Connection, error) {
	// The SDK reads stdin in a goroutine of its own; to play a server that
	// stops reading, the gate sits below it.
	inner, err := (&mcp.IOTransport{Reader: &gatedStdin{f: t.f}, Writer: stdout}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &conn{Connection: inner, f: t.f}, nil
}

type conn struct {
	mcp.Connection
	f *fake
	// discover is the server/discover under way (Spec.DiscoverFirst),
	// discovered closed once it is answered; only Read sets them.
	mu         sync.Mutex
	discover   jsonrpc.ID
	discovered chan struct{}
}

// gatedStdin reads stdin until stopReading is closed, then blocks for
// good, and waits out a pause: the pipe fills and the client's writes
// block.
type gatedStdin struct{ f *fake }

func (g *gatedStdin) Read(p []byte) (int, error) {
	select {
	case <-g.f.stopReading:
		select {}
	default:
	}
	time.Sleep(time.Until(time.Unix(0, g.f.pausedUntil.Load())))
	n, err := os.Stdin.Read(p)
	if err != nil && g.f.stdinClosed.Load() {
		select {} // closed on purpose: the server lives on, deaf
	}
	return n, err
}

func (g *gatedStdin) Close() error { return os.Stdin.Close() }

func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	c.mu.Lock()
	discovered := c.discovered
	c.mu.Unlock()
	if discovered != nil {
		select {
		case <-discovered:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	for {
		msg, err := c.Connection.Read(ctx)
		req, ok := msg.(*jsonrpc.Request)
		if err != nil || !ok {
			return msg, err
		}
		if c.answer(ctx, req) {
			continue // answered here; the SDK never sees it
		}
		if code := c.f.spec.ExitOnInitialize; code != nil && (req.Method == "initialize" || req.Method == "server/discover") {
			fmt.Fprintf(os.Stderr, "mcp-fake: exiting during %s\n", req.Method)
			os.Exit(*code)
		}
		switch req.Method {
		case "server/discover":
			if c.f.spec.DiscoverFirst {
				c.mu.Lock()
				c.discover, c.discovered = req.ID, make(chan struct{})
				c.mu.Unlock()
			}
		case "notifications/cancelled":
			var p struct {
				RequestID any `json:"requestId"`
			}
			json.Unmarshal(req.Params, &p)
			c.f.logCall(map[string]any{"notified": "cancelled", "requestId": p.RequestID})
		case "initialize":
			c.f.mu.Lock()
			c.f.initID = req.ID
			c.f.mu.Unlock()
		case "tools/call":
			var p struct {
				Name string `json:"name"`
			}
			json.Unmarshal(req.Params, &p)
			if t, ok := c.f.tool(p.Name); ok && (t.Result != nil || t.RPCError != nil || t.ResultBytes > 0) {
				c.f.mu.Lock()
				c.f.raw[req.ID] = t
				c.f.mu.Unlock()
			}
		}
		return msg, nil
	}
}

// answerOnce counts an Answers entry given for method, and reports whether
// it is still to be given (AnswerTimes).
func (f *fake) answerOnce(method string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	limit, limited := f.spec.AnswerTimes[method]
	if limited && f.answered[method] >= limit {
		return false
	}
	if f.answered == nil {
		f.answered = map[string]int{}
	}
	f.answered[method]++
	return true
}

// answer handles the requests the SDK's server cannot, and reports whether
// it did.
func (c *conn) answer(ctx context.Context, req *jsonrpc.Request) bool {
	f := c.f
	if raw, ok := f.spec.Answers[req.Method]; ok && req.IsCall() && f.answerOnce(req.Method) {
		var a struct {
			Result json.RawMessage `json:"result"`
			Error  *jsonrpc.Error  `json:"error"`
		}
		if err := json.Unmarshal(raw, &a); err != nil {
			a.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "mcp-fake: bad answers entry: " + err.Error()}
		}
		if a.Error != nil {
			c.reply(ctx, req.ID, nil, a.Error)
		} else {
			c.reply(ctx, req.ID, a.Result, nil)
		}
		return true
	}
	switch {
	case req.Method == "server/discover" && f.spec.IgnoreDiscover:
		f.logCall(map[string]any{"ignored": req.Method})
		return true
	case req.Method == "server/discover" && f.spec.ProtocolVersion != "" && f.spec.ProtocolVersion < "2026-07-28":
		c.reply(ctx, req.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"})
		return true
	case req.Method == "tools/call":
		return f.spec.Tasks && f.callAsTask(ctx, c, req)
	case req.Method == "tasks/get" || req.Method == "tasks/result" || req.Method == "tasks/cancel":
		go f.taskRequest(ctx, c, req)
		return true
	}
	return false
}

func (c *conn) reply(ctx context.Context, id jsonrpc.ID, result any, rerr *jsonrpc.Error) {
	resp := &jsonrpc.Response{ID: id}
	if rerr != nil {
		resp.Error = rerr
	} else {
		resp.Result, _ = json.Marshal(result)
	}
	c.Connection.Write(ctx, resp)
}

func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return c.Connection.Write(ctx, msg)
	}
	c.mu.Lock()
	if c.discovered != nil && resp.ID == c.discover {
		// Read goes on once the answer is out.
		defer close(c.discovered)
		c.discover, c.discovered = jsonrpc.ID{}, nil
	}
	c.mu.Unlock()
	f := c.f
	f.mu.Lock()
	t, found := f.raw[resp.ID]
	delete(f.raw, resp.ID)
	isInit := f.initID.IsValid() && resp.ID == f.initID
	f.mu.Unlock()
	switch {
	case found && t.ResultBytes > 0:
		// Written here, not by the SDK: encoding megabytes of text costs
		// seconds under the race detector.
		id, _ := json.Marshal(resp.ID.Raw())
		msg := make([]byte, 0, t.ResultBytes+100)
		msg = fmt.Appendf(msg, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, id)
		msg = append(msg, bytes.Repeat([]byte("x"), t.ResultBytes)...)
		msg = append(msg, "\"}]}}\n"...)
		_, err := stdout.Write(msg)
		return err
	case found && t.RPCError != nil:
		resp = &jsonrpc.Response{ID: resp.ID, Error: t.RPCError}
	case found:
		resp = &jsonrpc.Response{ID: resp.ID, Result: t.Result}
	case isInit && f.spec.AnswerVersion != "":
		var r map[string]json.RawMessage
		json.Unmarshal(resp.Result, &r)
		r["protocolVersion"], _ = json.Marshal(f.spec.AnswerVersion)
		result, _ := json.Marshal(r)
		resp = &jsonrpc.Response{ID: resp.ID, Result: result}
	case isInit && f.spec.Tasks:
		resp = &jsonrpc.Response{ID: resp.ID, Result: withTasksCapability(resp.Result)}
	default:
		if extra := f.withExtras(resp.Result); extra != nil {
			resp = &jsonrpc.Response{ID: resp.ID, Result: extra}
		}
	}
	return c.Connection.Write(ctx, resp)
}

func withTasksCapability(result json.RawMessage) json.RawMessage {
	var r map[string]json.RawMessage
	var caps map[string]json.RawMessage
	if json.Unmarshal(result, &r) != nil || json.Unmarshal(r["capabilities"], &caps) != nil {
		return result
	}
	caps["tasks"] = json.RawMessage(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)
	r["capabilities"], _ = json.Marshal(caps)
	out, _ := json.Marshal(r)
	return out
}

// withExtras adds each tool's Extra fields and execution.taskSupport to a
// tools/list result, or returns nil when result is not one or nothing
// needs adding.
func (f *fake) withExtras(result json.RawMessage) json.RawMessage {
	var page map[string]json.RawMessage
	if json.Unmarshal(result, &page) != nil || page["tools"] == nil {
		return nil
	}
	var tools []map[string]json.RawMessage
	if json.Unmarshal(page["tools"], &tools) != nil {
		return nil
	}
	changed := false
	for _, obj := range tools {
		var name string
		json.Unmarshal(obj["name"], &name)
		t, ok := f.tool(name)
		if !ok {
			continue
		}
		for k, v := range t.Extra {
			obj[k] = v
			changed = true
		}
		if t.TaskSupport != "" {
			obj["execution"], _ = json.Marshal(map[string]string{"taskSupport": t.TaskSupport})
			changed = true
		}
	}
	if !changed {
		return nil
	}
	page["tools"], _ = json.Marshal(tools)
	out, _ := json.Marshal(page)
	return out
}
