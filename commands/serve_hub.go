package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
