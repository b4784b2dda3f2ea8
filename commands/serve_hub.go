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

// A hub is mcpctl serve's MCP server: it mirrors what the host offers
// (tools, prompts, resources, templates, named as the host names them)
// on an SDK server, keeps the mirror in step with the host's events, and
// hands every request to the host.
type hub struct {
	env     *Env
	h       host
	srv     *mcp.Server
	session string // the name of the session whose servers serve offers

	// ctx ends when serve ends: stopped, or the session it used is gone.
	ctx    context.Context
	cancel context.CancelCauseFunc // with why serve ends
	dirty  chan struct{}           // a resync is due
	done   chan struct{}           // the watch and the resync loop ended

	mu sync.Mutex
	// What the SDK server offers: name (or URI) → the JSON it came from,
	// to tell a changed item from an unchanged one.
	tools, prompts, resources, templates map[string]string
	tmplServer                           map[string]string // URI template → its server, for completion
	resServer                            map[string]string // resource URI → the server serve offers it from
	// What serve does not offer, for askHostUnoffered: servers it hides
	// (itself, "mcpctl" under --manage), items the SDK refused, and the
	// URIs that servers down now listed (URI → server).
	hidden, refused map[string]bool
	downURIs        map[string]string
	// The templates serve offers (the first of each), and the URIs and
	// templates of the servers it hides, for subscriptions.
	offeredTmpls, hiddenTmpls []*engine.Template
	hiddenURIs                map[string]bool
	warned                    map[string]bool
	lostErr                   error
	logLevel                  string // the most verbose a client asked for

	subs subscriptions // resource subscriptions relayed to the host

	manage manager // serve --manage: tools of serve's own (serve_manage.go)
}

func newHub(env *Env, h host, session string) *hub {
	return &hub{
		env: env, h: h, session: session,
		dirty: make(chan struct{}, 1), done: make(chan struct{}),
		tools: map[string]string{}, prompts: map[string]string{}, resources: map[string]string{}, templates: map[string]string{},
		tmplServer: map[string]string{}, resServer: map[string]string{}, warned: map[string]bool{},
	}
}

// serveProtocolVersions are the MCP versions serve speaks: those up to
// 2025-11-25. From 2026-07-28 on, a server may not ask its client anything
// while it serves a call (questions come back in the result, to be asked
// again), which a hub relaying a call in flight cannot do.
func serveProtocolVersions() []string {
	var out []string
	for _, v := range mcp.SupportedProtocolVersions() {
		if v < "2026-07-28" {
			out = append(out, v)
		}
	}
	return out
}

// start follows the host's events, mirrors its lists and builds the SDK
// server. A first error from the host is returned as it is, so that "no
// session" lets withHost start the servers itself.
func (hb *hub) start(ctx context.Context) error {
	hb.ctx, hb.cancel = context.WithCancelCause(ctx)
	ins, err := hb.inspect(hb.ctx)
	if err != nil {
		hb.cancel(nil)
		return err
	}
	var instructions []string
	for _, in := range ins {
		if in.Instructions != "" && !hb.isSelf(in) {
			instructions = append(instructions, fmt.Sprintf("Server %s (its tools and prompts are named %s.NAME):\n%s", in.Name, in.Name, in.Instructions))
		}
	}
	hb.srv = mcp.NewServer(&mcp.Implementation{Name: "mcpctl", Title: "mcpctl serve", Description: selfDescription(hb.session), Version: engine.Version()}, &mcp.ServerOptions{
		Instructions: strings.Join(instructions, "\n\n"),
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Logging:   &mcp.LoggingCapabilities{},
		},
		SubscribeHandler:          hb.subscribe,
		UnsubscribeHandler:        hb.unsubscribe,
		CompletionHandler:         hb.complete,
		SupportedProtocolVersions: serveProtocolVersions(),
	})

	hb.srv.AddReceivingMiddleware(hb.followLogLevel, hb.endWithServe, hb.askHostUnoffered)

	// Events first, then the lists: a change after the lists were read is
	// never missed.
	ready := make(chan struct{})
	watched := make(chan error, 1)
	req := &engine.WatchRequest{Filter: engine.EventFilter{Types: []string{engine.EventListChanged, engine.EventState, engine.EventConfig, engine.EventLog}}}
	go func() {
		watched <- hb.h.Watch(hb.ctx, req, func(ev engine.Event) error {
			switch ev.Type {
			case engine.EventReady:
				close(ready)
			case engine.EventLog:
				hb.forwardLog(ev)
			default: // list_changed, state, config, dropped
				hb.resyncSoon()
			}
			return nil
		})
	}()
	select {
	case <-ready:
	case err := <-watched:
		hb.cancel(nil)
		if err == nil {
			err = ctx.Err()
		}
		return err
	}
	if err := hb.sync(hb.ctx); err != nil {
		hb.cancel(nil)
		<-watched
		return err
	}
	go func() {
		defer close(hb.done)
		followed := make(chan struct{})
		go func() {
			defer close(followed)
			hb.follow()
		}()
		err := <-watched
		if hb.ctx.Err() == nil {
			// The host stopped sending events while serve runs: the
			// session it used is gone.
			hb.lose(sessionEnded(err))
		}
		<-followed
	}()
	return nil
}

// stop ends the watches and the resync loop.
func (hb *hub) stop() {
	hb.cancel(errServeStopped)
	<-hb.done
	// Their subscriptions are released before the host's servers stop.
	hb.subs.running.Wait()
}

// lose ends serve because its host is gone.
func (hb *hub) lose(err error) {
	hb.mu.Lock()
	if hb.lostErr == nil {
		hb.lostErr = err
	}
	hb.mu.Unlock()
	hb.cancel(err)
}

// sessionEnded is the error of a serve whose session went away (mcpctl
// down, or it was stopped); cause, when not nil, is how serve noticed.
func sessionEnded(cause error) error {
	msg := "the session serve used ended"
	if cause != nil {
		msg += ": " + cause.Error()
	}
	return &engine.Error{Kind: engine.KindUnavailable, Message: msg, Hint: []string{"start it again with: mcpctl up; or run serve without a session"}}
}

// lost returns why serve ended early, or nil.
func (hb *hub) lost() error {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	return hb.lostErr
}

func (hb *hub) resyncSoon() {
	select {
	case hb.dirty <- struct{}{}:
	default:
	}
}

// follow resyncs the mirror after each burst of events until serve ends.
func (hb *hub) follow() {
	for {
		select {
		case <-hb.ctx.Done():
			return
		case <-hb.dirty:
		}
		if err := hb.sync(hb.ctx); err != nil && hb.ctx.Err() == nil {
			if k := engine.KindOf(err); k == engine.KindNoSession || k == engine.KindUnavailable {
				hb.lose(sessionEnded(err))
				return
			}
			hb.env.note("warning: serve could not refresh its lists: %v", err)
		}
	}
}

// warnOnce writes a warning to stderr the first time key comes up.
func (hb *hub) warnOnce(key, format string, args ...any) {
	hb.mu.Lock()
	seen := hb.warned[key]
	hb.warned[key] = true
	hb.mu.Unlock()
	if !seen {
		hb.env.note("warning: "+format, args...)
	}
}

// inspect is what every server declared. A server that starts on use and
// could not start is left out with a warning (once per message): the
// others are served.
func (hb *hub) inspect(ctx context.Context) ([]*engine.Inspection, error) {
	ins, err := hb.h.Inspect(ctx, "")
	unlisted, err := partialList(ins != nil, err)
	if unlisted != nil {
		hb.warnOnce("unlisted "+unlisted.Error(), "%v", unlisted)
	}
	return ins, err
}

// sync makes the SDK server offer what the host offers now. Items of an
// unavailable server (its last known lists, marked stale) are not offered:
// they come back, with list_changed, when it does. Nor are those of serve
// itself, when the config runs it as a server.
func (hb *hub) sync(ctx context.Context) error {
	servers, err := hb.inspect(ctx)
	if err != nil {
		return err
	}
	var tools, prompts, resources, templates []item
	tmplServer, resServer := map[string]string{}, map[string]string{}
	hidden, refused, downURIs := map[string]bool{}, map[string]bool{}, map[string]string{}
	hiddenURIs := map[string]bool{}
	var offeredTmpls, hiddenTmpls []*engine.Template
	hide := func(in *engine.Inspection) {
		hidden[in.Name] = true
		for _, r := range in.Resources {
			hiddenURIs[r.URI] = true
		}
		hiddenTmpls = append(hiddenTmpls, in.Templates...)
	}
	for _, in := range servers {
		if hb.isSelf(in) {
			hb.warnOnce("self "+in.Name, "server %s is this mcpctl serve itself (session %s); what it offers is not offered again", in.Name, hb.session)
			hide(in)
			continue
		}
		if hb.manage != nil && in.Name == manageServer {
			hb.warnOnce("manage", "server %s is not offered: with --manage, %s.* are serve's own tools", in.Name, manageServer)
			hide(in)
			continue
		}
		if in.Stale {
			for _, r := range in.Resources {
				if _, ok := downURIs[r.URI]; !ok {
					downURIs[r.URI] = r.Server
				}
			}
			continue
		}
		for _, t := range in.Tools {
			tools = append(tools, item{key: t.Name(), server: t.Server, raw: t.Raw(), add: hb.addTool(t)})
		}
		for _, p := range in.Prompts {
			prompts = append(prompts, item{key: p.Name(), server: p.Server, raw: p.Raw(), add: hb.addPrompt(p)})
		}
		for _, r := range in.Resources {
			resources = append(resources, item{key: r.URI, server: r.Server, raw: r.Raw(), add: hb.addResource(r)})
			if _, ok := resServer[r.URI]; !ok { // the first, as mirror offers it
				resServer[r.URI] = r.Server
			}
		}
		for _, t := range in.Templates {
			templates = append(templates, item{key: t.URITemplate, server: t.Server, raw: t.Raw(), add: hb.addTemplate(t)})
			if _, ok := tmplServer[t.URITemplate]; !ok {
				tmplServer[t.URITemplate] = t.Server
				offeredTmpls = append(offeredTmpls, t)
			}
		}
	}
	if hb.manage != nil {
		tools = append(tools, hb.manageTools()...)
	}
	hb.mirror("tool", hb.tools, tools, hb.srv.RemoveTools, refused)
	hb.mirror("prompt", hb.prompts, prompts, hb.srv.RemovePrompts, refused)
	hb.mirror("resource", hb.resources, resources, hb.srv.RemoveResources, refused)
	hb.mirror("resource template", hb.templates, templates, hb.srv.RemoveResourceTemplates, refused)
	for uri := range resServer {
		delete(downURIs, uri) // offered by a server up: it is not unoffered
	}
	hb.mu.Lock()
	hb.tmplServer, hb.resServer = tmplServer, resServer
	hb.hidden, hb.refused, hb.downURIs = hidden, refused, downURIs
	hb.offeredTmpls, hb.hiddenTmpls, hb.hiddenURIs = offeredTmpls, hiddenTmpls, hiddenURIs
	hb.mu.Unlock()
	return nil
}

// selfDescription is how serve describes itself to its clients; a server
// of the session that describes itself so is serve itself (its config
// names mcpctl serve), whose lists would otherwise grow without end.
func selfDescription(session string) string {
	return "The MCP servers of mcpctl session " + session + " as one server"
}

func (hb *hub) isSelf(in *engine.Inspection) bool {
	var info struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	json.Unmarshal(in.ServerInfo, &info)
	return info.Name == "mcpctl" && info.Description == selfDescription(hb.session)
}

// An item is one tool, prompt, resource or template the host offers.
type item struct {
	key    string // its name or URI on the SDK server
	server string
	raw    json.RawMessage
	add    func() error // adds it to the SDK server
}

// mirror makes the SDK server's set of one kind (have: key → what it was
// made from) what want says: it removes what went, and adds what came or
// changed. The SDK then tells the clients (list_changed). When two servers
// offer one resource URI, the first in the config's order is offered. What
// the SDK refuses is noted in refused, as "kind key".
func (hb *hub) mirror(kind string, have map[string]string, want []item, remove func(...string), refused map[string]bool) {
	seen := map[string]string{} // key → server
	var gone []string
	wanted := map[string]bool{}
	for _, it := range want {
		wanted[it.key] = true
	}
	for key := range have {
		if !wanted[key] {
			gone = append(gone, key)
		}
	}
	if len(gone) > 0 {
		slices.Sort(gone)
		remove(gone...)
		for _, key := range gone {
			delete(have, key)
		}
	}
	for _, it := range want {
		if first, dup := seen[it.key]; dup {
			hb.warnOnce(kind+" dup "+it.key+" "+it.server, "the %s %s is offered by %s and %s; serve offers %s's", kind, it.key, first, it.server, first)
			continue
		}
		seen[it.key] = it.server
		fp := it.server + "\x00" + string(it.raw)
		if have[it.key] == fp {
			continue
		}
		if err := it.add(); err != nil {
			refused[kind+" "+it.key] = true
			hb.warnOnce(kind+" bad "+it.key+" "+fp, "%s %s of server %s is not offered: %v", kind, it.key, it.server, err)
			if _, ok := have[it.key]; ok {
				remove(it.key)
				delete(have, it.key)
			}
			continue
		}
		have[it.key] = fp
	}
}

// safely runs an SDK registration, which panics on what it finds invalid
// (an input schema that is not an object, a URI template that does not
// parse), and returns the panic as an error.
func safely(add func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	add()
	return nil
}

// rawField returns one top-level field of a JSON object, or nil.
func rawField(raw json.RawMessage, name string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	if v := m[name]; len(v) > 0 && string(v) != "null" {
		return v
	}
	return nil
}

func (hb *hub) addTool(t *engine.Tool) func() error {
	return func() error {
		var mt mcp.Tool
		if err := json.Unmarshal(t.Raw(), &mt); err != nil {
			return err
		}
		mt.Name = t.Name()
		// The schemas go on as the server wrote them, byte for byte.
		schema := rawField(t.Raw(), "inputSchema")
		var head struct {
			Type any `json:"type"`
		}
		json.Unmarshal(schema, &head)
		switch {
		case schema == nil:
			schema = json.RawMessage(`{"type":"object"}`)
		case head.Type == nil:
			// Tool arguments are an object; say so where the server did not.
			var m map[string]json.RawMessage
			if err := json.Unmarshal(schema, &m); err != nil {
				return fmt.Errorf("its inputSchema is not a JSON object")
			}
			m["type"] = json.RawMessage(`"object"`)
			schema, _ = json.Marshal(m)
		}
		mt.InputSchema = schema
		if out := rawField(t.Raw(), "outputSchema"); out != nil {
			mt.OutputSchema = out
		}
		return safely(func() { hb.srv.AddTool(&mt, hb.callTool(t.Name())) })
	}
}

func (hb *hub) addPrompt(p *engine.Prompt) func() error {
	return func() error {
		var mp mcp.Prompt
		if err := json.Unmarshal(p.Raw(), &mp); err != nil {
			return err
		}
		mp.Name = p.Name()
		return safely(func() { hb.srv.AddPrompt(&mp, hb.getPrompt(p.Name())) })
	}
}

func (hb *hub) addResource(r *engine.Resource) func() error {
	return func() error {
		var mr mcp.Resource
		if err := json.Unmarshal(r.Raw(), &mr); err != nil {
			return err
		}
		mr.URI = r.URI
		return safely(func() { hb.srv.AddResource(&mr, hb.readResource(r.Server)) })
	}
}

func (hb *hub) addTemplate(t *engine.Template) func() error {
	return func() error {
		var mt mcp.ResourceTemplate
		if err := json.Unmarshal(t.Raw(), &mt); err != nil {
			return err
		}
		mt.URITemplate = t.URITemplate
		return safely(func() { hb.srv.AddResourceTemplate(&mt, hb.readResource(t.Server)) })
	}
}

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
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil {
		return
	}
	caps := ip.Capabilities
	// The calls of one client are one caller: its questions reach it even
	// when it has several calls in flight.
	creq.Caller = fmt.Sprintf("serve-%p", ss)
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
	if err := json.Unmarshal(raw, &res); err != nil {
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
		if json.Unmarshal(fmt.Appendf(nil, `{"content":[%s]}`, block), &one) == nil && len(one.Content) == 1 {
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
		return nil, ctx.Err()
	}
	var ee *engine.Error
	if errors.As(err, &ee) && (ee.Kind == engine.KindProtocol || (ee.Kind == engine.KindUsage && len(ee.Violations) == 0)) {
		return nil, requestError(ctx, err)
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: describe(err)}}}, nil
}

// rpcError is err as a JSON-RPC error: a request mcpctl finds wrong is
// invalid params; a server's own error keeps its code where it is known.
func rpcError(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
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
		for _, l := range h.Hints() {
			if l = clientHint(l); l != "" {
				msg += "\nhint: " + l
			}
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
		res, err := hb.h.GetPrompt(ctx, &engine.PromptRequest{Name: name, Arguments: req.Params.Arguments})
		if err != nil {
			return nil, requestError(ctx, err)
		}
		var out mcp.GetPromptResult
		if err := json.Unmarshal(withoutHop(res.Result), &out); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("mcpctl serve cannot read the prompt %s from %s: %v", name, res.Server, err)}
		}
		return &out, nil
	}
}

func (hb *hub) readResource(server string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		markReached(ctx)
		res, err := hb.h.ReadResource(ctx, &engine.ResourceRequest{URI: req.Params.URI, Server: server})
		if err != nil {
			return nil, requestError(ctx, err)
		}
		var out mcp.ReadResourceResult
		if err := json.Unmarshal(withoutHop(res.Result), &out); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("mcpctl serve cannot read the resource %s from %s: %v", req.Params.URI, server, err)}
		}
		return &out, nil
	}
}

// complete asks the server of a prompt or a template for completions.
func (hb *hub) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := req.Params
	creq := &engine.CompleteRequest{Argument: p.Argument.Name, Value: p.Argument.Value}
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

// forwardLog sends a server's log message to every client, with the
// server's name as logger (the SDK drops it for a client below its level).
func (hb *hub) forwardLog(ev engine.Event) {
	var data any = ev.Data
	if len(ev.Data) == 0 {
		data = nil
	}
	params := &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(ev.Level), Logger: ev.Server, Data: data}
	for ss := range hb.srv.Sessions() {
		ss.Log(hb.ctx, params)
	}
}

// endWithServe cancels what a client asked when serve ends (a signal, or the
// session gone): a call under way is cancelled on its server, not waited
// for, as the SDK would wait before it closes the connection.
func (hb *hub) endWithServe(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		defer context.AfterFunc(hb.ctx, func() { cancel(context.Cause(hb.ctx)) })()
		return next(ctx, method, req)
	}
}

// followLogLevel passes a client's logging/setLevel on to the servers that
// log, so that they send what it asks for: the most verbose level any
// client asked for (the SDK sends each client only what it wants).
func (hb *hub) followLogLevel(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && p != nil && !slices.Contains(engine.LogLevels, string(p.Level)) {
			// The SDK takes any level, and the client would hear nothing.
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown log level %q: use one of %s", p.Level, strings.Join(engine.LogLevels, ", "))}
		}
		res, err := next(ctx, method, req)
		p, ok := req.GetParams().(*mcp.SetLoggingLevelParams)
		if err != nil || !ok || p == nil {
			return res, err
		}
		level := string(p.Level)
		hb.mu.Lock()
		if i := slices.Index(engine.LogLevels, level); i < 0 || (hb.logLevel != "" && slices.Index(engine.LogLevels, hb.logLevel) <= i) {
			hb.mu.Unlock()
			return res, err
		}
		hb.logLevel = level
		hb.mu.Unlock()
		// A watch sets the level on the servers before it is ready.
		errSet := errors.New("set")
		werr := hb.h.Watch(ctx, &engine.WatchRequest{Filter: engine.EventFilter{Types: []string{engine.EventReady}}, LogLevel: level}, func(ev engine.Event) error {
			return errSet
		})
		if werr != nil && !errors.Is(werr, errSet) && ctx.Err() == nil {
			hb.env.note("warning: could not set the servers' log level to %s: %v", level, werr)
		}
		return res, err
	}
}
