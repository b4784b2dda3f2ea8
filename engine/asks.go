package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/mcpctl/mcpctl/config"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Servers ask things of their client: sampling/createMessage and
// elicitation/create. MCP does not say which of the client's requests a
// question belongs to (over stdio nothing can), so the engine asks the
// caller of the oldest request in flight on that server that answers the
// method; else the config's hook; else the engine's option; else it
// declines.

// An asker is a call in flight, and what its caller answers (maybe
// nothing).
type asker struct {
	sampling, elicitation RequestHandler
	// hold stops the request's deadline while its caller answers: a person
	// filling in a form, or a model writing, is not the server hanging.
	hold func() (resume func())
}

func (a *asker) handler(method string) RequestHandler {
	if method == MethodSampling {
		return a.sampling
	}
	return a.elicitation
}

type askers struct {
	mu   sync.Mutex
	list []*asker // oldest first
}

// add registers a; the returned function removes it.
func (as *askers) add(a *asker) (remove func()) {
	as.mu.Lock()
	as.list = append(as.list, a)
	as.mu.Unlock()
	return func() {
		as.mu.Lock()
		defer as.mu.Unlock()
		for i, x := range as.list {
			if x == a {
				as.list = append(as.list[:i:i], as.list[i+1:]...)
				return
			}
		}
	}
}

// holdAll stops the deadlines of every request in flight until resume:
// the server may be waiting on the answer for any of them.
func (as *askers) holdAll() (resume func()) {
	as.mu.Lock()
	var resumes []func()
	for _, a := range as.list {
		resumes = append(resumes, a.hold())
	}
	as.mu.Unlock()
	return func() {
		for _, r := range resumes {
			r()
		}
	}
}

func (as *askers) oldest(method string) *asker {
	as.mu.Lock()
	defer as.mu.Unlock()
	for _, a := range as.list {
		if a.handler(method) != nil {
			return a
		}
	}
	return nil
}

// answer answers a question from the server.
func (s *server) answer(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	name := s.cfg().Name
	var h RequestHandler
	by := ""
	if a := s.askers.oldest(method); a != nil {
		h, by = a.handler(method), "its caller"
	} else if hook := s.hook(method); hook != nil {
		h, by = s.runHookHandler(hook, method), "the hook at "+hook.Source
	} else if method == MethodSampling && s.e.opts.Sampling != nil {
		h, by = s.e.opts.Sampling, "the engine's handler"
	} else if method == MethodElicitation && s.e.opts.Elicitation != nil {
		h, by = s.e.opts.Elicitation, "the engine's handler"
	}
	if h == nil {
		s.log.Info("declined a request from the server: nothing answers it", "method", method)
		if method == MethodElicitation {
			return json.RawMessage(`{"action":"decline"}`), nil
		}
		return nil, &jsonrpc.Error{Code: -1, Message: fmt.Sprintf("mcpctl cannot answer %s: no sampling hook is set (sampling.command in the config, or --sampling-command)", method)}
	}
	s.log.Info("a request from the server", "method", method, "answeredBy", by)
	defer s.askers.holdAll()()
	res, err := h(ctx, name, params)
	if err != nil {
		s.log.Warn("a request from the server failed", "method", method, "answeredBy", by, "err", s.cfg().Redact(err.Error()))
	}
	return res, err
}

// answerable reports whether anything would answer method.
func (s *server) answerable(method string) bool {
	opt := s.e.opts.Elicitation
	if method == MethodSampling {
		opt = s.e.opts.Sampling
	}
	return s.askers.oldest(method) != nil || s.hook(method) != nil || opt != nil
}

// hook is the config's hook for method, or nil.
func (s *server) hook(method string) *config.Hook {
	if method == MethodSampling {
		return s.cfg().Sampling
	}
	return s.cfg().Elicitation
}

// elicitationComplete routes notifications/elicitation/complete to whoever
// waits on that elicitation.
type elicitationWaits struct {
	mu    sync.Mutex
	byID  map[string]chan struct{}
	order []string
}

type completeKey struct{}

// ElicitationCompleted returns, for a RequestHandler asked a URL-mode
// elicitation/create, a channel that closes when the server says the
// elicitation is complete (notifications/elicitation/complete); nil for
// any other request.
func ElicitationCompleted(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(completeKey{}).(chan struct{})
	return ch
}

// WithElicitationCompleted returns ctx carrying done as the channel
// [ElicitationCompleted] returns: for code that relays a URL-mode
// elicitation to another handler.
func WithElicitationCompleted(ctx context.Context, done <-chan struct{}) context.Context {
	if done == nil {
		return ctx
	}
	ch := make(chan struct{})
	go func() {
		select {
		case <-done:
			close(ch)
		case <-ctx.Done():
		}
	}()
	return context.WithValue(ctx, completeKey{}, ch)
}

// wait registers a wait for elicitation id; done closes the channel it
// returns; the returned function ends the wait.
func (w *elicitationWaits) wait(id string) (chan struct{}, func()) {
	ch := make(chan struct{})
	w.mu.Lock()
	if w.byID == nil {
		w.byID = map[string]chan struct{}{}
	}
	w.byID[id] = ch
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		if w.byID[id] == ch {
			delete(w.byID, id)
		}
		w.mu.Unlock()
	}
}

func (w *elicitationWaits) done(id string) {
	w.mu.Lock()
	ch := w.byID[id]
	delete(w.byID, id)
	w.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// askElicitation asks an elicitation/create: a URL-mode one with a channel
// in ctx that closes when the server says it is complete.
func (s *server) askElicitation(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if params.Mode == "url" && params.ElicitationID != "" {
		ch, stop := s.elicitWaits.wait(params.ElicitationID)
		defer stop()
		ctx = context.WithValue(ctx, completeKey{}, ch)
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	raw = s.withSchemaAsSent(raw, params.RequestedSchema)
	res, err := s.answer(ctx, MethodElicitation, raw)
	if err != nil {
		return nil, err
	}
	var out mcp.ElicitResult
	if err := json.Unmarshal(res, &out); err != nil {
		return nil, fmt.Errorf("the answer to elicitation/create is not an elicitation result: %w", err)
	}
	return &out, nil
}

// withSchemaAsSent puts the requestedSchema back into params as the server
// wrote it, so that a form asks its fields in the server's order.
func (s *server) withSchemaAsSent(params json.RawMessage, decoded any) json.RawMessage {
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if conn == nil || decoded == nil {
		return params
	}
	schema := conn.elicitSchema(decoded)
	if schema == nil {
		return params
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(params, &m) != nil {
		return params
	}
	m["requestedSchema"] = schema
	out, err := json.Marshal(m)
	if err != nil {
		return params
	}
	return out
}

// urlElicitations reads the elicitations of a URLElicitationRequired error
// (-32042), or returns nil when err is not one.
func urlElicitations(err error) []*mcp.ElicitParams {
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != mcp.CodeURLElicitationRequired {
		return nil
	}
	var data struct {
		Elicitations []*mcp.ElicitParams `json:"elicitations"`
	}
	json.Unmarshal(werr.Data, &data)
	return data.Elicitations
}

// satisfy asks for the URL elicitations a server requires before a
// request can proceed. It returns nil when every one was accepted (the
// request may be tried again), else an error that shows the URLs.
func (s *server) satisfy(ctx context.Context, what string, els []*mcp.ElicitParams, cause error) error {
	name := s.cfg().Name
	var urls []string
	for _, el := range els {
		urls = append(urls, el.URL)
	}
	declined := func(action string) error {
		e := errorf(KindProtocol, name, "%s needs you to open %s first; that was %s", what, strings.Join(urls, " and "), action)
		return e.hint("open it in a browser, finish there, then run the same command again").wrap(cause)
	}
	if !s.answerable(MethodElicitation) {
		e := errorf(KindProtocol, name, "%s needs you to open %s first", what, strings.Join(urls, " and "))
		return e.hint("open it in a browser, finish there, then run the same command again (on a terminal, mcpctl waits for you)").wrap(cause)
	}
	for _, el := range els {
		if el.Mode == "" {
			el.Mode = "url"
		}
		res, err := s.askElicitation(ctx, el)
		if err != nil {
			return declined("not answered: " + err.Error())
		}
		if res.Action != "accept" {
			return declined(map[string]string{"decline": "declined", "cancel": "cancelled"}[res.Action])
		}
	}
	return nil
}
