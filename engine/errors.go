package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpctl/mcpctl/schemas"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A Kind classifies an [Error] by what the caller should do about it. The
// CLI maps each kind to one exit code.
type Kind string

const (
	// KindUsage: the request itself is wrong (unknown server or tool,
	// arguments that break the tool's schema). Fix the request.
	KindUsage Kind = "usage"
	// KindConfig: the config cannot be used (a file that does not parse,
	// a field, a variable or input not set). Fix the config.
	KindConfig Kind = "config"
	// KindUnavailable: a server could not start or is gone.
	KindUnavailable Kind = "unavailable"
	// KindTimeout: a server did not answer in time, or the caller's
	// context deadline passed first (errors.Is finds it).
	KindTimeout Kind = "timeout"
	// KindProtocol: a server answered with a JSON-RPC error or broke the
	// protocol.
	KindProtocol Kind = "protocol"
	// KindAuth: a server needs authorization the user must give
	// (mcpctl auth login).
	KindAuth Kind = "auth"
	// KindNoSession: no session answers on the socket.
	KindNoSession Kind = "no_session"
	// KindInternal: a bug or an environment problem in mcpctl itself.
	KindInternal Kind = "internal"
)

// An Error is a failure the engine explains: what went wrong, for which
// server, and what to try. It travels unchanged from the session to the CLI.
type Error struct {
	Kind    Kind   `json:"code"`
	Message string `json:"message"`
	Server  string `json:"server,omitempty"`
	// Hint lines say what to try.
	Hint []string `json:"hints,omitempty"`
	// Violations lists what was wrong with tool arguments (KindUsage).
	Violations []schemas.Violation `json:"violations,omitempty"`
	// Candidates lists the names a misspelt one may have meant.
	Candidates []string `json:"candidates,omitempty"`
	// Stderr holds the last lines a server wrote to stderr, when they
	// explain a failure.
	Stderr []string `json:"stderr,omitempty"`
	// Stdout holds the last lines a server wrote to stdout that were not
	// JSON-RPC (a usage message, say) when it failed to start, or while a
	// request that timed out ran (its answer may be among them).
	Stdout []string `json:"stdout,omitempty"`

	// Answer is the JSON-RPC error a server answered the request with, as
	// it sent it, the secrets of its config redacted; nil when the error
	// is not a server's answer (see ServerAnswer).
	Answer *jsonrpc.Error `json:"answer,omitempty"`
	// TellsHidden: the error tells of tools the config hides (a name it
	// hides, or one near the name asked for), which a proxy keeps from
	// its clients (see TellsHidden).
	TellsHidden bool `json:"tellsHidden,omitempty"`

	err error
	// transient: trying again may work (a server killed by a signal
	// during its start).
	transient bool
	// unsent: the request never reached the server, so sending it again
	// is safe, whatever it does.
	unsent bool
	// unreachable: a remote server could not be reached for a request; it
	// counts toward failureThreshold, as a stdio server's death ends it.
	unreachable bool
	// startTimedOut: a server did not finish starting within its
	// startupTimeout (see StartTimedOut).
	startTimedOut bool
	// calledOff: a server's start cut short because another's, started
	// with it, failed: no failure of its own.
	calledOff bool
}

// ServerAnswer returns the JSON-RPC error a server answered a request
// with, as it sent it (code, message and data; the secrets of its config
// redacted), when err is a server's error answer; nil otherwise. A proxy
// passes it on as it is, where mcpctl's message is for a person.
func ServerAnswer(err error) *jsonrpc.Error {
	for ; err != nil; err = errors.Unwrap(err) {
		if e, ok := err.(*Error); ok && e.Answer != nil {
			a := *e.Answer
			return &a
		}
	}
	return nil
}

// StartTimedOut reports whether err is a server's start that ran out its
// startupTimeout, rather than one that failed for a reason of its own.
func StartTimedOut(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if e, ok := err.(*Error); ok && e != nil && e.startTimedOut {
			return true // the start's own error, or one that wraps it
		}
	}
	return false
}

// Error, Unwrap, Hints and Is work on a nil *Error too, which an error
// variable holds when given a nil *Error (as from [Engine.ConfigError]).
func (e *Error) Error() string {
	if e == nil {
		return "<nil>"
	}
	if len(e.Stderr) == 0 && len(e.Stdout) == 0 {
		return e.Message
	}
	var b strings.Builder
	b.WriteString(e.Message)
	for _, part := range []struct {
		what  string
		lines []string
	}{{"last stderr lines of ", e.Stderr}, {"last stdout lines (not JSON-RPC) of ", e.Stdout}} {
		if len(part.lines) == 0 {
			continue
		}
		b.WriteString("\n")
		b.WriteString(part.what)
		b.WriteString(e.Server)
		b.WriteString(":")
		for _, l := range part.lines {
			b.WriteString("\n  ")
			b.WriteString(l)
		}
	}
	return b.String()
}

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.err
}

// Hints implements the hint convention of mcpctl's error printer.
func (e *Error) Hints() []string {
	if e == nil {
		return nil
	}
	return e.Hint
}

// ErrNoSession is returned by a [Client] when no session answers on its
// socket. Check with errors.Is.
var ErrNoSession = &Error{Kind: KindNoSession, Message: "no session is running"}

// Is makes errors.Is(err, ErrNoSession) match any no-session error.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && e != nil && t == ErrNoSession && e.Kind == KindNoSession
}

func errorf(kind Kind, server, format string, args ...any) *Error {
	return &Error{Kind: kind, Server: server, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) hint(format string, args ...any) *Error {
	e.Hint = append(e.Hint, fmt.Sprintf(format, args...))
	return e
}

// clone is a copy of e whose hints its caller may change (rewriteHints
// does): an error kept and handed out again stays as it was.
func (e *Error) clone() *Error {
	c := *e
	c.Hint = slices.Clone(e.Hint)
	return &c
}

func (e *Error) wrap(err error) *Error {
	e.err = err
	return e
}

// KindOf returns the kind of err, or "" when err is not an engine error
// (or is a nil *Error).
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) && e != nil {
		return e.Kind
	}
	return ""
}

// callerGaveUp says whether err is the caller's own giving up (its context
// cancelled, Ctrl-C, or past its deadline), not a failure the engine
// explains: that is an *Error of its own kind, whatever it wraps.
func callerGaveUp(err error) bool {
	return KindOf(err) == "" && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// notMade is the error of a zero Engine's methods.
func notMade() *Error {
	return errorf(KindUsage, "", "the engine has no config: it was not made with engine.New").
		hint("make it with engine.New(cfg, opts)")
}

// errEngineClosed marks the error of a request to a closed engine: a
// session's says so in its own words (see writeError).
var errEngineClosed = errors.New("the engine is closed")

// open refuses a request to an engine that was closed, or not made by New.
func (e *Engine) open() error {
	if !e.made {
		return notMade()
	}
	if e.closed.Load() {
		return errorf(KindUnavailable, "", "the engine is closed").hint("make a new one with engine.New").wrap(errEngineClosed)
	}
	if ce := e.refusedConfig(); ce != nil {
		return ce // a listing says so, where it listed nothing
	}
	return nil
}

// refusedConfig is why the engine has no config when New or a reload
// refused the one it was given (a copy), else nil.
func (e *Engine) refusedConfig() *Error {
	if !e.noConfig.Load() {
		return nil
	}
	if ce := e.ConfigError(); ce != nil {
		return ce.clone()
	}
	return nil
}

// nilRequest is the error of a method called with a nil request: what to
// do cannot be read from nothing.
func nilRequest(method, typ string) *Error {
	return errorf(KindUsage, "", "%s was called with a nil *%s", method, typ).
		hint("pass a *engine.%s that says what to do", typ)
}

// badRequest refuses a request whose TimeoutMs or Retry is negative, which
// would otherwise silently mean the defaults.
func badRequest(method, typ string, timeoutMs int64, retry int) *Error {
	switch {
	case timeoutMs < 0:
		return errorf(KindUsage, "", "%s was called with TimeoutMs %d", method, timeoutMs).
			hint("give %s.TimeoutMs in milliseconds, or 0 for the server's request timeout", typ)
	case retry < 0:
		return errorf(KindUsage, "", "%s was called with Retry %d", method, retry).
			hint("give CallRequest.Retry as how often to try again, or 0 for the default")
	}
	return nil
}

// deadlineError is err, when it is the caller's context deadline passing,
// as a KindTimeout error that names what was under way (the CLI maps a
// deadline to the same exit code); errors.Is still finds
// context.DeadlineExceeded in it. Any other error, a cancellation among
// them (the caller's own doing), is returned as it is.
func deadlineError(err error, server, what string) error {
	var ee *Error
	if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ee) {
		return err
	}
	return errorf(KindTimeout, server, "%s did not finish before the deadline of its context", what).
		hint("give the context a later deadline (the server's own timeouts still apply)").wrap(err)
}

// UnknownServer is the error for a server name that is not among known
// (the config's): Kind usage, Server the name asked for, and a
// did-you-mean hint.
func UnknownServer(name string, known []string) *Error {
	return unknownName("server", name, name, known)
}

// UnknownName is the error of a tool, prompt or server called name that is
// not among known, with the near ones as candidates: a proxy tells a name
// it keeps from its clients as it tells any other.
func UnknownName(what, name, server string, known []string) *Error {
	return unknownName(what, name, server, known)
}

// unknownName builds the error for a server or tool name that does not
// exist, with did-you-mean candidates.
func unknownName(what, name, server string, known []string) *Error {
	shown := name
	if name == "" {
		shown = `""`
	}
	e := errorf(KindUsage, server, "unknown %s %s", what, shown)
	e.Candidates = schemas.Closest(name, known)
	switch {
	case len(e.Candidates) == 1:
		e.hint("did you mean %s?", e.Candidates[0])
	case len(e.Candidates) > 1:
		e.hint("did you mean one of: %s?", strings.Join(e.Candidates, ", "))
	case len(known) > 0 && len(known) <= 12:
		e.hint("known %ss: %s", what, strings.Join(known, ", "))
	case len(known) > 12 && what == "server":
		e.hint("see them with: mcpctl status")
	case len(known) > 12:
		e.hint("see them with: mcpctl %ss %s", what, server)
	case what == "server":
		e.hint("the config has no servers")
	default:
		e.hint("server %s offers no %ss", server, what)
	}
	return e
}

// redactValue is v, a decoded JSON value, with redact applied to its
// strings and keys, as they are: in the encoded text a secret with a quote,
// a backslash or a control character in it is escaped, and would not be
// found there.
func redactValue(redact func(string) string, v any) any {
	switch v := v.(type) {
	case string:
		return redact(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[redact(k)] = redactValue(redact, x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = redactValue(redact, x)
		}
		return out
	}
	return v
}

// redactJSON is data, a JSON value from a server, with redact applied to
// its text: a secret it quotes (in a log message, say) never reaches a
// watch or a log. Should the secret have stood for more than a part of a
// string (a number, a key), the value becomes the redacted text as a
// string, so that it stays JSON.
func redactJSON(redact func(string) string, data json.RawMessage) json.RawMessage {
	text := redact(string(data))
	if text == string(data) {
		return data
	}
	if json.Valid([]byte(text)) {
		return json.RawMessage(text)
	}
	q, _ := marshalVerbatim(text)
	return q
}
