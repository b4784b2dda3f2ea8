package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A captureConn sits between the SDK and a server's connection. It keeps the
// raw JSON of results: the SDK decodes them into typed structs that drop
// what they do not model (a tool's execution, a server's tasks capability)
// and fail on content types they do not know, and mcpctl prints everything
// the server sent.
//
// A caller asks for the raw results of its requests by making them with a
// context from [withCapture]; the connection matches each response to the
// request it wrote with that context.
type captureConn struct {
	mcp.Connection

	mu      sync.Mutex
	pending map[jsonrpc.ID]pendingCall

	// logLevel, when set, goes into the _meta of every request: servers on
	// protocol 2026-07-28 take the log level per request, not from
	// logging/setLevel.
	logLevel atomic.Value // string

	// onProgress gets each notifications/progress as it is read: before
	// the answer it belongs to, which the SDK's handlers do not promise.
	onProgress func(token any, p Progress)

	// trace, when set, gets every message sent and received as a JSON line.
	traceMu sync.Mutex
	trace   io.Writer

	// abortHTTP, for a remote server, ends every HTTP request of the
	// connection, under way or to come (see captureRoundTripper.abort);
	// httpAnswered is set once any request of it got an HTTP answer.
	abortHTTP    context.CancelFunc
	httpAnswered atomic.Bool
	// closeIdle closes the kept-alive connections of a remote server's
	// HTTP transport, once its MCP connection is closed: each start makes
	// a transport of its own, whose idle connections (and two goroutines
	// each) would stay 90 s.
	closeIdle func()

	// rootsAsked is the id of the server's roots/list request; the answer
	// to it closes rootsAnswered (awaitRoots).
	rootsAsked      jsonrpc.ID
	rootsAnswered   chan struct{}
	rootsAnsweredOn sync.Once

	// schemas are the requestedSchemas of the last elicitation/create
	// requests as the server wrote them: the SDK decodes them into maps,
	// which lose the order of the fields a form should ask in.
	schemas []json.RawMessage

	// owed are the requests given up on whose notifications/cancelled the
	// SDK has yet to send (it sends it from a goroutine of its own, after
	// the caller returned), with its reason: a server stopped meanwhile is
	// sent them first (flushCancels), or it would never be told.
	owed map[jsonrpc.ID]string
	// flushed are the ids flushCancels told the server of: the SDK's own
	// notice for one, coming after, is not sent again. Only a stopping
	// server's, so it stays small.
	flushed map[jsonrpc.ID]bool
	// tellingN counts the SDK's notices being written, which a flush waits
	// for: stdin closed under one would cut it.
	tellingN int
}

// owe notes that cp's requests still unanswered were given up on, for
// reason: their notifications/cancelled are owed until written.
func (c *captureConn) owe(cp *capture, reason string) {
	cp.mu.Lock()
	ids := slices.Clone(cp.ids)
	cp.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if _, unanswered := c.pending[id]; unanswered {
			if c.owed == nil {
				c.owed = map[jsonrpc.ID]string{}
			}
			c.owed[id] = reason
		}
	}
}

// flushCancels writes the notifications/cancelled still owed, all within
// wait: called as the server is stopped, before its stdin closes.
func (c *captureConn) flushCancels(wait time.Duration) {
	if c == nil || c.Connection == nil {
		return
	}
	c.mu.Lock()
	owed := c.owed
	c.owed = nil
	for id := range owed {
		if c.flushed == nil {
			c.flushed = map[jsonrpc.ID]bool{}
		}
		c.flushed[id] = true
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c.waitFor(ctx, func() bool { return c.tellingN == 0 })
	for id, reason := range owed {
		params, _ := json.Marshal(map[string]any{"requestId": id.Raw(), "reason": reason})
		msg := &jsonrpc.Request{Method: "notifications/cancelled", Params: params}
		if c.Connection.Write(ctx, c.outgoing(ctx, msg)) != nil {
			return // the server does not read: the rest would not go either
		}
	}
}

// cancelledID is the request a notifications/cancelled is about.
func cancelledID(msg jsonrpc.Message) (jsonrpc.ID, bool) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "notifications/cancelled" {
		return jsonrpc.ID{}, false
	}
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	return id, err == nil
}

// maxKeptSchemas bounds schemas: questions are few and answered soon.
const maxKeptSchemas = 16

// elicitSchema returns the requestedSchema the server sent that decodes
// to decoded, as the server wrote it, and forgets it; nil when none does.
func (c *captureConn) elicitSchema(decoded any) json.RawMessage {
	want, err := json.Marshal(decoded)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, raw := range c.schemas {
		var v any
		if json.Unmarshal(raw, &v) != nil {
			continue
		}
		if got, _ := json.Marshal(v); bytes.Equal(got, want) {
			c.schemas = slices.Delete(c.schemas, i, i+1)
			return raw
		}
	}
	return nil
}

// traced writes one message to the trace.
func (c *captureConn) traced(dir string, msg jsonrpc.Message) {
	if c.trace == nil {
		return
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return
	}
	line, _ := json.Marshal(struct {
		Time time.Time       `json:"time"`
		Dir  string          `json:"dir"`
		Msg  json.RawMessage `json:"msg"`
	}{time.Now(), dir, data})
	c.traceMu.Lock()
	c.trace.Write(append(line, '\n'))
	c.traceMu.Unlock()
}

type pendingCall struct {
	method string
	cap    *capture
}

// A capture collects the raw results of the requests made with a context
// that carries it.
type capture struct {
	mu      sync.Mutex
	results []rawResult
	ids     []jsonrpc.ID
	// sessionMissing: an HTTP server answered one of the requests with
	// 404 for its session: it did not take the request.
	sessionMissing bool
	// httpStatus and httpBody: an HTTP server answered one of the requests
	// with this status, and (the start of) this body, not a JSON-RPC
	// message; the SDK tells it as an answer of its own making (-32005).
	httpStatus int
	httpBody   string
	// refuse ends the request's wait for its answer, when the server
	// refused its POST over HTTP+SSE (errPostRefused); nil elsewhere.
	refuse func()
}

// A rawResult is one response as the server sent it.
type rawResult struct {
	method string
	result json.RawMessage
	err    error // a JSON-RPC error response
}

type captureKey struct{}

// withCapture returns a context whose requests' raw results are collected
// in the returned capture. Call release when done.
func withCapture(ctx context.Context) (context.Context, *capture) {
	c := &capture{}
	return context.WithValue(ctx, captureKey{}, c), c
}

// last returns the last raw result for method.
func (c *capture) last(method string) (rawResult, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.results) - 1; i >= 0; i-- {
		if c.results[i].method == method {
			return c.results[i], true
		}
	}
	return rawResult{}, false
}

// all returns every raw result for method, in arrival order.
func (c *capture) all(method string) []rawResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []rawResult
	for _, r := range c.results {
		if r.method == method {
			out = append(out, r)
		}
	}
	return out
}

// release forgets the requests of cp that were never answered (a server
// need not answer a cancelled request), so they do not pile up.
func (c *captureConn) release(cp *capture) {
	cp.mu.Lock()
	ids := cp.ids
	cp.ids = nil
	cp.mu.Unlock()
	c.mu.Lock()
	for _, id := range ids {
		delete(c.pending, id)
	}
	c.mu.Unlock()
}

func newCaptureConn(inner mcp.Connection) *captureConn {
	return &captureConn{Connection: inner, pending: map[jsonrpc.ID]pendingCall{}, rootsAnswered: make(chan struct{})}
}

// awaitRoots waits, when the server has asked for its roots, at most wait
// until it has been answered, then settle more for it to take them in: a
// server such as server-filesystem works in the roots it is offered
// instead of the directories its arguments name, and a request that came
// before it did would be served in the wrong ones.
func (c *captureConn) awaitRoots(ctx context.Context, wait, settle time.Duration) {
	c.mu.Lock()
	asked := c.rootsAsked.IsValid()
	c.mu.Unlock()
	if !asked {
		return // a server that asks at all asks on initialized, before it answers anything else
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-c.rootsAnswered:
	case <-t.C:
		return
	case <-ctx.Done():
		return
	}
	select {
	case <-time.After(settle):
	case <-ctx.Done():
	}
}

type taskKey struct{}

// withTask marks the tools/call made with ctx as task-augmented: the
// connection adds {"task": {"ttl": ttlMs}} to its params, which the SDK's
// typed params cannot carry.
func withTask(ctx context.Context, ttlMs int64) context.Context {
	return context.WithValue(ctx, taskKey{}, ttlMs)
}

func (c *captureConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	send, done := c.telling(msg)
	defer done()
	if !send {
		return nil
	}
	return c.Connection.Write(ctx, c.outgoing(ctx, msg))
}

// telling claims the SDK's notifications/cancelled before it is sent:
// sent once, so that a flush does not send it too; no longer owed, nor to
// be owed (it may come before owe); and the late answer is nobody's. send
// is false when a flush told it already; done ends the telling. Any other
// message is sent as it is.
func (c *captureConn) telling(msg jsonrpc.Message) (send bool, done func()) {
	id, ok := cancelledID(msg)
	if !ok {
		return true, func() {}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.flushed[id] {
		return false, func() {}
	}
	delete(c.owed, id)
	delete(c.pending, id)
	c.tellingN++
	return true, func() {
		c.mu.Lock()
		c.tellingN--
		c.mu.Unlock()
	}
}

// awaitTold waits, at most wait, until the notifications/cancelled owed
// have gone out, as the SDK sends them, from a goroutine of its own: a
// remote server's, which mcpctl does not write itself. Called as the
// server is stopped, before its connection closes.
func (c *captureConn) awaitTold(wait time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c.waitFor(ctx, func() bool { return len(c.owed) == 0 && c.tellingN == 0 })
}

// waitFor waits, until ctx ends, for done (read under c.mu) to hold: the
// SDK's notices are written from its goroutines, which say nothing when.
func (c *captureConn) waitFor(ctx context.Context, done func() bool) {
	for ctx.Err() == nil {
		c.mu.Lock()
		ok := done()
		c.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// outgoing is what the connection does to a message before it is sent:
// it adds what the SDK's types cannot carry (a task, a log level), notes
// the request for capture when ctx asks for it, and traces it. The HTTP
// transports, which must not be wrapped, call it from their round tripper.
func (c *captureConn) outgoing(ctx context.Context, msg jsonrpc.Message) jsonrpc.Message {
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID.IsValid() {
		c.mu.Lock()
		asked := c.rootsAsked
		c.mu.Unlock()
		if asked.IsValid() && resp.ID == asked {
			c.rootsAnsweredOn.Do(func() { close(c.rootsAnswered) })
		}
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		if ttl, ok := ctx.Value(taskKey{}).(int64); ok && req.Method == "tools/call" {
			req = withParam(req, "task", map[string]int64{"ttl": ttl})
			msg = req
		}
		if level, _ := c.logLevel.Load().(string); level != "" && req.Method != "initialize" && req.Method != "server/discover" {
			msg = withMeta(req, "io.modelcontextprotocol/logLevel", level)
		}
		if cp, ok := ctx.Value(captureKey{}).(*capture); ok {
			cp.mu.Lock()
			cp.ids = append(cp.ids, req.ID)
			cp.mu.Unlock()
			c.mu.Lock()
			c.pending[req.ID] = pendingCall{method: req.Method, cap: cp}
			c.mu.Unlock()
		}
	}
	c.traced("send", msg)
	return msg
}

// withParam returns req with params[key] set.
func withParam(req *jsonrpc.Request, key string, value any) *jsonrpc.Request {
	params := map[string]json.RawMessage{}
	if len(req.Params) > 0 && json.Unmarshal(req.Params, &params) != nil {
		return req
	}
	params[key], _ = json.Marshal(value)
	raw, err := json.Marshal(params)
	if err != nil {
		return req
	}
	return &jsonrpc.Request{ID: req.ID, Method: req.Method, Params: raw, Extra: req.Extra}
}

// withMeta returns req with params._meta[key] set.
func withMeta(req *jsonrpc.Request, key string, value any) *jsonrpc.Request {
	var params struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if len(req.Params) > 0 && json.Unmarshal(req.Params, &params) != nil {
		return req
	}
	if params.Meta == nil {
		params.Meta = map[string]json.RawMessage{}
	}
	params.Meta[key], _ = json.Marshal(value)
	return withParam(req, "_meta", params.Meta)
}

func (c *captureConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return msg, err
	}
	c.incoming(msg)
	return msg, nil
}

// incoming is what the connection notes of a message as it arrives: its
// trace, progress for its caller, and the raw result of a captured request.
func (c *captureConn) incoming(msg jsonrpc.Message) {
	c.traced("recv", msg)
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		if req, isReq := msg.(*jsonrpc.Request); isReq && req.Method == "roots/list" {
			c.mu.Lock()
			c.rootsAsked = req.ID
			c.mu.Unlock()
		}
		if req, isReq := msg.(*jsonrpc.Request); isReq && req.Method == "elicitation/create" {
			var p struct {
				Schema json.RawMessage `json:"requestedSchema"`
			}
			if json.Unmarshal(req.Params, &p) == nil && len(p.Schema) > 0 {
				c.mu.Lock()
				c.schemas = append(c.schemas, append(json.RawMessage(nil), p.Schema...))
				if len(c.schemas) > maxKeptSchemas {
					c.schemas = c.schemas[1:]
				}
				c.mu.Unlock()
			}
		}
		if req, isReq := msg.(*jsonrpc.Request); isReq && req.Method == "notifications/progress" && c.onProgress != nil {
			var p struct {
				Token    any     `json:"progressToken"`
				Progress float64 `json:"progress"`
				Total    float64 `json:"total"`
				Message  string  `json:"message"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				c.onProgress(p.Token, Progress{Progress: p.Progress, Total: p.Total, Message: p.Message})
			}
		}
		return
	}
	c.mu.Lock()
	pc, found := c.pending[resp.ID]
	delete(c.pending, resp.ID)
	c.mu.Unlock()
	if found {
		raw := rawResult{method: pc.method, result: resp.Result, err: resp.Error}
		if pc.method == "tools/call" && resp.Error == nil && !bytes.Contains(resp.Result, []byte(`"inputRequests"`)) {
			// The raw result is the answer (handle.do takes it from the
			// capture). The SDK would decode it into a CallToolResult
			// nobody reads, twice over, each time through a decoder with a
			// fresh 32 KiB buffer: most of what a call allocates. It is
			// told the result was kept, as an error handle.do ignores. A
			// result that asks for input is the SDK's to act on (it
			// answers and calls again), whole.
			resp.Result, resp.Error = nil, errResultKept
		} else {
			raw.result = append(json.RawMessage(nil), resp.Result...)
		}
		pc.cap.mu.Lock()
		pc.cap.results = append(pc.cap.results, raw)
		pc.cap.mu.Unlock()
	}
}

// errResultKept is what the SDK gets in place of a tools/call result the
// engine captured.
var errResultKept = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "mcpctl kept this result raw"}

// A connTransport hands the SDK a connection mcpctl already made.
type connTransport struct{ conn mcp.Connection }

func (t connTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }
