package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/mcpctl/mcpctl/engine"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// How serve answers its clients' requests: each is handed to the host, and
// what comes back (a result, progress, the server's questions, an error)
// is put in MCP's terms for the client. serve_hub.go keeps the offer.

// callTool calls name through the host: the client's arguments as they
// are, its progress token followed, its cancellation passed on (ctx), and
// the server's questions during the call relayed to it.
func (hb *hub) callTool(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		markReached(ctx)
		creq := &engine.CallRequest{Name: name}
		if args := req.Params.Arguments; len(args) > 0 && string(args) != "null" {
			creq.Arguments = args
		}
		if token := req.Params.GetProgressToken(); token != nil {
			creq.OnProgress = progressRelay(token, func(p *mcp.ProgressNotificationParams) { req.Session.NotifyProgress(ctx, p) })
		}
		relayQuestions(ctx, req.Session, creq)
		res, err := hb.h.CallTool(ctx, creq)
		if engine.TellsHidden(err) {
			// What the config hides stays unknown to the client: the
			// name is told as any other unknown one is, among what serve
			// offers (a different answer would tell it is there).
			err = hb.unknownTool(name)
		}
		if err != nil {
			return toolFailure(ctx, err)
		}
		return toolResult(res.Result)
	}
}

// progressRelay sends a call's progress to the client that asked with
// token. MCP wants each notification's progress above the last: a task's
// status update (progress 0, a status) counts on from the last sent, and
// one that says nothing new is not sent; a server's own value that went
// back is sent a hair above the last. Sent under the lock, in order: task
// polls and the server's notifications come from two goroutines.
func progressRelay(token any, send func(*mcp.ProgressNotificationParams)) func(engine.Progress) {
	var mu sync.Mutex
	var last float64
	var lastMsg string
	sent := false
	return func(p engine.Progress) {
		msg := p.Message
		if msg == "" {
			msg = p.Status
		}
		mu.Lock()
		defer mu.Unlock()
		n, total := p.Progress, p.Total
		if sent && n <= last {
			switch {
			case msg == lastMsg:
				return // a task polled again, no further on
			case p.Status != "" && n == 0:
				n = last + 1
			default:
				n = math.Nextafter(last, math.Inf(1))
			}
		}
		if total > 0 && n > total {
			total = 0 // past what it said: unknown now
		}
		last, lastMsg, sent = n, msg, true
		send(&mcp.ProgressNotificationParams{ProgressToken: token, Progress: n, Total: total, Message: msg})
	}
}

// relayQuestions sets creq's sampling and elicitation handlers to ask the
// client, when it declared it answers them.
func relayQuestions(ctx context.Context, ss *mcp.ServerSession, creq *engine.CallRequest) {
	// The requests of one client are one caller: its questions reach it
	// even when it has several requests in flight.
	creq.Caller = serveCaller(ss)
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil {
		return
	}
	caps := ip.Capabilities
	if caps.Sampling != nil {
		creq.Sampling = func(actx context.Context, server string, params json.RawMessage) (json.RawMessage, error) {
			var p mcp.CreateMessageWithToolsParams
			if err := json.Unmarshal(params, &p); err != nil {
				return nil, fmt.Errorf("mcpctl serve cannot read the sampling request of %s: %w", server, err)
			}
			qctx, stop := askContext(ctx, actx)
			defer stop()
			res, err := ss.CreateMessageWithTools(qctx, &p)
			if err != nil {
				return nil, err
			}
			return json.Marshal(res)
		}
	}
	if caps.Elicitation != nil {
		creq.Elicitation = func(actx context.Context, server string, params json.RawMessage) (json.RawMessage, error) {
			var p mcp.ElicitParams
			if err := json.Unmarshal(params, &p); err != nil {
				return nil, fmt.Errorf("mcpctl serve cannot read the elicitation request of %s: %w", server, err)
			}
			// A client answers the modes it declared (no mode named: form);
			// other questions go to mcpctl's other answerers.
			el := caps.Elicitation
			if (p.Mode == "url" && el.URL == nil) || (p.Mode != "url" && el.Form == nil && el.URL != nil) {
				return nil, engine.ErrNotAnswered
			}
			if schema := rawField(params, "requestedSchema"); schema != nil {
				// As the server wrote it: a form asks its fields in order.
				p.RequestedSchema = schema
			}
			if done := engine.ElicitationCompleted(actx); done != nil && p.ElicitationID != "" {
				// The server says when the user finished at the URL: so
				// is the client.
				go func() {
					select {
					case <-done:
						ss.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: p.ElicitationID})
					case <-ctx.Done():
					}
				}()
			}
			qctx, stop := askContext(ctx, actx)
			defer stop()
			res, err := ss.Elicit(qctx, &p)
			if err != nil {
				return nil, err
			}
			return json.Marshal(res)
		}
	}
}

// askContext is the context of a question relayed to the client: that of
// the client's call (the SDK sends the question on that call's stream),
// ended early when the server's question is (asked) gone.
func askContext(call, asked context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(call)
	stop := context.AfterFunc(asked, cancel)
	return ctx, func() { stop(); cancel() }
}

// toolResult is the server's tools/call result as the SDK's type: content
// blocks, structuredContent (byte for byte), isError and _meta.
func toolResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	raw = withoutHop(raw)
	var res mcp.CallToolResult
	if err := decodeServed(raw, &res); err != nil {
		return lenientResult(raw)
	}
	if sc := rawField(raw, "structuredContent"); sc != nil {
		res.StructuredContent = sc
	}
	return &res, nil
}

// lenientResult reads a result the SDK's type refuses as a whole (a
// content block of a type it does not know): every block it knows goes on
// as it is, any other becomes a text block that holds its JSON.
func lenientResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	var wire struct {
		Content []json.RawMessage `json:"content"`
		IsError bool              `json:"isError"`
		Meta    map[string]any    `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "mcpctl serve cannot read the server's result: " + err.Error()}
	}
	res := &mcp.CallToolResult{IsError: wire.IsError, Meta: wire.Meta, Content: []mcp.Content{}}
	for _, block := range wire.Content {
		var one mcp.CallToolResult
		if decodeServed(fmt.Appendf(nil, `{"content":[%s]}`, block), &one) == nil && len(one.Content) == 1 {
			res.Content = append(res.Content, one.Content[0])
			continue
		}
		res.Content = append(res.Content, &mcp.TextContent{Text: fmt.Sprintf("(a content block of type %q, which mcpctl serve passes on as JSON) %s", rawString(block, "type"), block)})
	}
	if sc := rawField(raw, "structuredContent"); sc != nil {
		res.StructuredContent = sc
	}
	return res, nil
}

// hopMeta are the _meta keys of a result that describe the connection it
// came on (MCP 2026-07-28), not the answer.
var hopMeta = []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyServerInfo, mcp.MetaKeyClientCapabilities, mcp.MetaKeyLogLevel, mcp.MetaKeySubscriptionID}

// withoutHop returns a server's result without what belongs to its own
// connection to mcpctl (resultType, the cache hints ttlMs and cacheScope,
// the server's info in _meta): the client gets serve's own.
func withoutHop(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	changed := false
	for _, k := range []string{"resultType", "ttlMs", "cacheScope"} {
		if _, ok := m[k]; ok {
			delete(m, k)
			changed = true
		}
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(m["_meta"], &meta) == nil && meta != nil {
		for _, k := range hopMeta {
			if _, ok := meta[k]; ok {
				delete(meta, k)
				changed = true
			}
		}
		if len(meta) == 0 {
			delete(m, "_meta")
		} else {
			m["_meta"], _ = json.Marshal(meta)
		}
	}
	if !changed {
		return raw
	}
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return out
}

func rawString(raw json.RawMessage, name string) string {
	var s string
	json.Unmarshal(rawField(raw, name), &s)
	return s
}

// errServeStopped is why a request ends when serve is stopped.
var errServeStopped = errors.New("mcpctl serve was stopped")

// errInputClosed is why a request still under way ends when serve's stdin
// closed a while before (stdinGrace).
var errInputClosed = errors.New("its input closed, and the request was still under way 5s later")

// servingEnded is the answer to a request that serve's end cut short
// (a signal, stdin closed, its session gone): a JSON-RPC error that says
// so, rather than the bare "context canceled". nil when ctx ended
// otherwise (the client cancelled it: no answer is sent).
func servingEnded(ctx context.Context) error {
	cause := context.Cause(ctx)
	if ctx.Err() == nil || cause == nil || errors.Is(cause, context.Canceled) {
		return nil
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("mcpctl serve is ending (%v): the request was cancelled on its server", cause)}
}

// endedError is the answer to a request whose context ended (its client
// cancelled it), with a JSON-RPC code: the SDK sent the context's error
// with code 0, which JSON-RPC does not define. Over stdio the answer to a
// cancelled request is not sent at all (drainingConn); over HTTP the SDK
// sends it.
func endedError(err error) error {
	msg := "the request was cancelled"
	if errors.Is(err, context.DeadlineExceeded) {
		msg = "the request timed out"
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
}

// requestError is err, the host's answer to a request, as serve's client
// is told it.
func requestError(ctx context.Context, err error) error {
	if ended := servingEnded(ctx); ended != nil {
		return ended
	}
	return rpcError(err)
}

// toolFailure answers a call the host could not make. What the client or
// model can act on (the server is unavailable, the call timed out, the
// arguments break the schema) is a result marked isError, so a model sees
// why; a bad request (an unknown tool) and a server's own protocol error
// are JSON-RPC errors.
func toolFailure(ctx context.Context, err error) (*mcp.CallToolResult, error) {
	if ctx.Err() != nil {
		if ended := servingEnded(ctx); ended != nil {
			return nil, ended
		}
		return nil, endedError(ctx.Err())
	}
	var ee *engine.Error
	if errors.As(err, &ee) && (ee.Kind == engine.KindProtocol || (ee.Kind == engine.KindUsage && len(ee.Violations) == 0)) {
		return nil, requestError(ctx, err)
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: describe(err)}}}, nil
}

// rpcError is err as a JSON-RPC error: a server's own error answer goes
// on as the server sent it (its data too: a -32042's elicitations, a
// retry hint); a request mcpctl finds wrong is invalid params; other
// errors keep a code where one is known.
func rpcError(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return endedError(err)
	}
	if answer := engine.ServerAnswer(err); answer != nil {
		return answer
	}
	code := int64(jsonrpc.CodeInternalError)
	var werr *jsonrpc.Error
	switch {
	case errors.As(err, &werr):
		code = werr.Code
	case engine.KindOf(err) == engine.KindUsage:
		code = jsonrpc.CodeInvalidParams
	}
	return &jsonrpc.Error{Code: code, Message: describe(err)}
}

// describe is an error's message with its hints, for serve's client: the
// parts of a hint that tell what to type at mcpctl's command line are left
// out, as that client has no command line (see clientHint).
func describe(err error) string {
	msg := err.Error()
	var h interface{ Hints() []string }
	if errors.As(err, &h) {
		dropped := false
		for _, l := range h.Hints() {
			if l = clientHint(l); l != "" {
				if dropped {
					// The alternative to advice left out stands alone
					// ("or raise requestTimeout ...").
					l = strings.TrimPrefix(l, "or ")
				}
				msg += "\nhint: " + l
			}
			dropped = l == ""
		}
	}
	return msg
}

// cliAdvice matches advice to run an mcpctl command or give it a flag.
var cliAdvice = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\bmcpctl [a-z]|(^|[\s(])--[a-z]`) })

// clientHint is hint without its parts ("; "-separated) that advise a
// command line ("see the tool's input schema: mcpctl tools x", "add --retry
// 1"); "" when nothing is left. serve's own advice (mcpctl serve, its
// mcpctl.restart tool) stays.
func clientHint(hint string) string {
	parts := strings.Split(hint, "; ")
	kept := parts[:0]
	for _, p := range parts {
		if !cliAdvice().MatchString(p) || strings.Contains(p, "mcpctl serve") {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "; ")
}

func (hb *hub) getPrompt(name string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		markReached(ctx)
		res, err := hb.h.GetPrompt(ctx, &engine.PromptRequest{Name: name, Arguments: req.Params.Arguments, Caller: serveCaller(req.Session)})
		if err != nil {
			return nil, requestError(ctx, err)
		}
		var out mcp.GetPromptResult
		if err := decodeServed(withoutHop(res.Result), &out); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("mcpctl serve cannot read the prompt %s from %s: %v", name, res.Server, err)}
		}
		return &out, nil
	}
}

func (hb *hub) readResource(server string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		markReached(ctx)
		res, err := hb.h.ReadResource(ctx, &engine.ResourceRequest{URI: req.Params.URI, Server: server, Caller: serveCaller(req.Session)})
		if err != nil {
			return nil, requestError(ctx, err)
		}
		var out mcp.ReadResourceResult
		if err := decodeServed(withoutHop(res.Result), &out); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("mcpctl serve cannot read the resource %s from %s: %v", req.Params.URI, server, err)}
		}
		return &out, nil
	}
}

// complete asks the server of a prompt or a template for completions.
func (hb *hub) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := req.Params
	creq := &engine.CompleteRequest{Argument: p.Argument.Name, Value: p.Argument.Value, Caller: serveCaller(req.Session)}
	if p.Context != nil {
		creq.Context = p.Context.Arguments
	}
	switch p.Ref.Type {
	case "ref/prompt":
		if hb.offersNot("prompt", p.Ref.Name) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", p.Ref.Name)}
		}
		creq.Ref = p.Ref.Name
	case "ref/resource":
		creq.Ref = p.Ref.URI
		hb.mu.Lock()
		creq.Server = hb.tmplServer[p.Ref.URI]
		hiddenTmpl := slices.ContainsFunc(hb.hiddenTmpls, func(t *engine.Template) bool { return t.URITemplate == p.Ref.URI })
		hb.mu.Unlock()
		if creq.Server == "" && hiddenTmpl {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown resource template %q", p.Ref.URI)}
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown reference type %q", p.Ref.Type)}
	}
	res, err := hb.h.Complete(ctx, creq)
	if err != nil {
		return nil, requestError(ctx, err)
	}
	var out mcp.CompleteResult
	if err := json.Unmarshal(withoutHop(res.Result), &out); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("mcpctl serve cannot read the completion from %s: %v", res.Server, err)}
	}
	return &out, nil
}

// serveCaller names the client of ss as the caller of its requests.
func serveCaller(ss *mcp.ServerSession) string { return fmt.Sprintf("serve-%p", ss) }

// unknownTool is the error of a tool name of a server serve does not
// offer, told among the tools it offers of that server.
func (hb *hub) unknownTool(name string) error {
	server, _, _ := strings.Cut(name, ".")
	var known []string
	hb.mu.Lock()
	for n := range hb.tools {
		if strings.HasPrefix(n, server+".") {
			known = append(known, n)
		}
	}
	hb.mu.Unlock()
	slices.Sort(known)
	return engine.UnknownName("tool", name, server, known)
}
