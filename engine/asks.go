package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/mcpctl/mcpctl/config"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Servers ask things of their client: sampling/createMessage and
// elicitation/create. MCP does not say which of the client's requests a
// question belongs to (over stdio nothing can), so the engine asks a
// caller only when the question can only be theirs: every request in
// flight on that server is their call (a prompt, a read or a completion
// in flight answers no question, so it makes a question no caller's).
// Otherwise the config's hook answers, else the
// engine's option, else the question is declined. A question that comes
// as the error of one call (URL elicitation required, -32042) goes to that
// call's caller.

// ErrNotAnswered is what a caller's [RequestHandler] returns for a
// question it cannot answer after all (a client that does not do URL
// elicitation, say): the engine's other answerers get it instead.
var ErrNotAnswered = errors.New("not answered by the caller")

// An asker is a call in flight, who made it, and what its caller answers
// (maybe nothing).
type asker struct {
	caller                string // "" when the call is its own caller
	sampling, elicitation RequestHandler
	// hold stops the call's deadline while a question is answered: a
	// person filling in a form, or a model writing, is not the server
	// hanging.
	hold func() (resume func())
	// ctx is the call's: its caller giving up ends the questions its
	// handlers answer, whether or not the server withdraws them.
	ctx context.Context
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

// owner returns the caller a question must come from, and their calls in
// flight: one call, or calls that all have the same caller. Otherwise nil:
// the question could be anyone's.
func (as *askers) owner() []*asker {
	as.mu.Lock()
	defer as.mu.Unlock()
	if len(as.list) == 0 {
		return nil
	}
	first := as.list[0].caller
	if len(as.list) > 1 && first == "" {
		return nil
	}
	for _, a := range as.list[1:] {
		if a.caller != first {
			return nil
		}
	}
	return slices.Clone(as.list)
}

// all returns every call in flight.
func (as *askers) all() []*asker {
	as.mu.Lock()
	defer as.mu.Unlock()
	return slices.Clone(as.list)
}

// holding stops the deadlines of calls until resume.
func holding(calls []*asker) (resume func()) {
	var resumes []func()
	for _, a := range calls {
		if a.hold != nil {
			resumes = append(resumes, a.hold())
		}
	}
	return func() {
		for _, r := range resumes {
			r()
		}
	}
}

// answer answers a question the server asked on its own.
func (s *server) answer(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	var own RequestHandler
	var calls []*asker
	if owners := s.askers.owner(); owners != nil {
		calls = owners
		for _, a := range owners {
			if own = a.handler(method); own != nil {
				var done func()
				ctx, done = withCallEnd(ctx, a.ctx)
				defer done()
				break
			}
		}
	}
	return s.answerWith(ctx, method, params, own, calls)
}

// withCallEnd is ctx, a question's, ended also when call (the context of
// the call whose caller answers it; nil: none) ends; done releases it.
func withCallEnd(ctx, call context.Context) (_ context.Context, done func()) {
	if call == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(call, func() { cancel(context.Cause(call)) })
	return ctx, func() {
		stop()
		cancel(nil)
	}
}

// answerWith answers a question with own, the handler of the caller it
// belongs to (nil when none), else the config's hook, the engine's option,
// or a decline. The deadlines of calls stop while the caller answers; a
// hook, bounded by its own timeout, stops those of every call in flight.
func (s *server) answerWith(ctx context.Context, method string, params json.RawMessage, own RequestHandler, calls []*asker) (json.RawMessage, error) {
	if own != nil {
		s.log.Info("a request from the server", "method", method, "answeredBy", "its caller")
		res, err := func() (json.RawMessage, error) {
			defer holding(calls)()
			return s.guarded(own, ctx, method, params)
		}()
		if !errors.Is(err, ErrNotAnswered) {
			var werr *jsonrpc.Error
			if err != nil && !errors.As(err, &werr) {
				s.log.Warn("a request from the server failed", "method", method, "answeredBy", "its caller", "err", s.cfg().Redact(err.Error()))
				err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
			}
			return res, err
		}
	}
	var h RequestHandler
	by := ""
	if hook := s.hook(method); hook != nil {
		h, by = s.runHookHandler(hook, method), "the hook at "+hook.Source
	} else if method == MethodSampling && s.e.opts.Sampling != nil {
		h, by = s.e.opts.Sampling, "the engine's handler"
	} else if method == MethodElicitation && s.e.opts.Elicitation != nil {
		h, by = s.e.opts.Elicitation, "the engine's handler"
	}
	if h == nil {
		// Said for whoever reads it where the server puts it (a tool's
		// result, to a model through serve): what is missing, not only
		// the CLI's flag.
		why := "no sampling hook is set (sampling.command in the config), and its caller does not answer sampling (mcpctl call does with --sampling-command, mcpctl serve when its client does)"
		if n := len(s.askers.all()); calls == nil && n > 1 {
			// No one's for want of an owner, not of a hook: a caller who
			// would have answered was not asked.
			why = fmt.Sprintf("it could be the question of any of %d requests in flight on server %s, of different callers, so none of them was asked; and no sampling hook is set (sampling.command in the config)", n, s.cfg().Name)
		}
		s.log.Info("declined a request from the server: nothing answers it", "method", method, "why", why)
		s.unanswered.Add(1)
		if method == MethodElicitation {
			return json.RawMessage(`{"action":"decline"}`), nil
		}
		return nil, &jsonrpc.Error{Code: -1, Message: fmt.Sprintf("mcpctl cannot answer %s: %s", method, why)}
	}
	s.log.Info("a request from the server", "method", method, "answeredBy", by)
	defer holding(s.askers.all())()
	res, err := s.guarded(h, ctx, method, params)
	if err != nil {
		s.log.Warn("a request from the server failed", "method", method, "answeredBy", by, "err", s.cfg().Redact(err.Error()))
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) {
			err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
	}
	return res, err
}

// guarded runs a Go program's handler, whose panic would otherwise end the
// whole program from a goroutine it cannot recover on: it becomes the
// error the server is answered with.
func (s *server) guarded(h RequestHandler, ctx context.Context, method string, params json.RawMessage) (res json.RawMessage, err error) {
	return guard(h, ctx, s.cfg().Name, method, params, func(v any, stack []byte) {
		s.log.Error("the handler of a request from the server panicked", "method", method, "panic", fmt.Sprint(v), "stack", string(stack))
	})
}

// guard runs a handler of a Go program's, recovering its panic as the
// error the server is answered with; onPanic gets what it panicked with,
// which stays out of the answer: it may hold what the server must not see.
func guard(h RequestHandler, ctx context.Context, server, method string, params json.RawMessage, onPanic func(v any, stack []byte)) (res json.RawMessage, err error) {
	defer func() {
		if v := recover(); v != nil {
			onPanic(v, debug.Stack())
			res, err = nil, fmt.Errorf("the handler of %s panicked", method)
		}
	}()
	return h(ctx, server, params)
}

// answerable reports whether anything but a caller would answer method.
func (s *server) answerable(method string) bool {
	opt := s.e.opts.Elicitation
	if method == MethodSampling {
		opt = s.e.opts.Sampling
	}
	return s.hook(method) != nil || opt != nil
}

// hook is the config's hook for method, or nil.
func (s *server) hook(method string) *config.Hook {
	if method == MethodSampling {
		return s.cfg().Sampling
	}
	return s.cfg().Elicitation
}

// elicitationWaits routes notifications/elicitation/complete to whoever
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
func (s *server) askElicitation(ctx context.Context, params *mcp.ElicitParams, ask func(context.Context, json.RawMessage) (json.RawMessage, error)) (*mcp.ElicitResult, error) {
	if params.Mode == "" {
		// A server that left it out (before MCP 2025-11-25 there was
		// only the form): the one asked is told which, as the spec infers.
		p := *params
		p.Mode = "form"
		if p.URL != "" || p.ElicitationID != "" {
			p.Mode = "url"
		}
		params = &p
	}
	if params.Mode == "url" && params.ElicitationID != "" {
		ch, stop := s.elicitWaits.wait(params.ElicitationID)
		defer stop()
		ctx = context.WithValue(ctx, completeKey{}, ch)
	}
	raw, err := marshalVerbatim(params)
	if err != nil {
		return nil, err
	}
	raw = s.withSchemaAsSent(raw, params.RequestedSchema)
	res, err := ask(ctx, raw)
	if err != nil {
		return nil, err
	}
	var out mcp.ElicitResult
	if err := json.Unmarshal(res, &out); err != nil {
		return nil, fmt.Errorf("the answer to elicitation/create is not an elicitation result: %w", err)
	}
	switch out.Action {
	case "accept", "decline", "cancel":
	default:
		// Checked as a sampling answer is: the server would be handed it.
		return nil, fmt.Errorf("the answer to elicitation/create is not an elicitation result: its action is %q, not accept, decline or cancel", out.Action)
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
	out, err := marshalVerbatim(m)
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
func (s *server) satisfy(ctx context.Context, what string, els []*mcp.ElicitParams, cause error, own RequestHandler, call *asker) error {
	name := s.cfg().Name
	var urls []string
	for _, el := range els {
		urls = append(urls, el.URL)
	}
	// The server's own answer goes with the error, through a session too:
	// a proxy passes it on (its data names the URLs).
	declined := func(action string) error {
		e := errorf(KindProtocol, name, "%s needs you to open %s first; that was %s", what, strings.Join(urls, " and "), action)
		e.Answer = ServerAnswer(cause)
		return e.hint("open it in a browser, finish there, then run the same command again").wrap(cause)
	}
	if own == nil && !s.answerable(MethodElicitation) {
		e := errorf(KindProtocol, name, "%s needs you to open %s first", what, strings.Join(urls, " and "))
		e.Answer = ServerAnswer(cause)
		return e.hint("open it in a browser, finish there, then run the same command again (on a terminal, mcpctl waits for you)").wrap(cause)
	}
	for _, el := range els {
		if el.Mode == "" {
			el.Mode = "url"
		}
		res, err := s.askElicitation(ctx, el, func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
			return s.answerWith(ctx, MethodElicitation, params, own, []*asker{call})
		})
		if err != nil {
			return declined("not answered: " + err.Error())
		}
		if res.Action != "accept" {
			return declined(map[string]string{"decline": "declined", "cancel": "cancelled"}[res.Action])
		}
	}
	return nil
}
