package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A handle is what a request needs of a ready server.
type handle struct {
	s    *server
	cs   *mcp.ClientSession
	conn *captureConn
	life context.Context
	proc *process
	snap *snapshot
	// deadline is the running request's, which progress extends.
	deadline atomic.Pointer[deadline]
}

// ready waits for a server that is starting and returns a handle on it once
// it is ready; any other state is an error that says why.
func (s *server) ready(ctx context.Context) (*handle, error) {
	s.mu.Lock()
	if s.state == StateStarting {
		s.mu.Unlock()
		if err := s.start(ctx); err != nil {
			return nil, err
		}
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	if s.state != StateReady && s.state != StateDegraded {
		return nil, s.unavailableLocked()
	}
	return &handle{s: s, cs: s.cs, conn: s.conn, life: s.life, proc: s.proc, snap: s.snap}, nil
}

func (h *handle) capabilities() *mcp.ServerCapabilities {
	if ir := h.cs.InitializeResult(); ir != nil && ir.Capabilities != nil {
		return ir.Capabilities
	}
	return &mcp.ServerCapabilities{}
}

// do runs one request: send makes it through the SDK with the context it is
// given and returns the SDK's typed result. do bounds it by timeout and by
// the server's life, returns the raw result the server sent, explains a
// failure, and records metrics. what names the request in messages ("the
// call to everything.echo").
func (h *handle) do(ctx context.Context, method, what string, timeout time.Duration, send func(context.Context) (any, error)) (json.RawMessage, error) {
	return h.request(ctx, method, what, timeout, false, false, send)
}

// doFor is do for a request its caller made with a timeout of its own
// (timeoutMs; 0: the server's requestTimeout). Timing out before the
// server's own timeout says nothing of the server's health, so it does not
// count toward failureThreshold: one impatient client must not take a
// server from every other.
func (h *handle) doFor(ctx context.Context, method, what string, timeoutMs int64, send func(context.Context) (any, error)) (json.RawMessage, error) {
	timeout := h.s.requestTimeout(timeoutMs)
	return h.request(ctx, method, what, timeout, timeout < h.s.requestTimeout(0), timeoutMs > 0, send)
}

func (h *handle) request(ctx context.Context, method, what string, timeout time.Duration, callerShort, callerTimeout bool, send func(context.Context) (any, error)) (json.RawMessage, error) {
	t0 := time.Now()
	callCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	dl := newDeadline(timeout, func() { cancel(errTimedOut) })
	dl.byCaller = callerTimeout
	defer dl.stop()
	h.deadline.Store(dl)
	stopOnEnd := context.AfterFunc(h.life, func() { cancel(nil) })
	defer stopOnEnd()
	cctx, cp := withCapture(callCtx)
	cp.refuse = func() { cancel(errPostRefused) }
	defer h.conn.release(cp)
	skipped, began := h.proc.skippedLines(), h.s.requests.begin()
	defer h.s.requests.end()
	typed, sendErr := send(cctx)
	var result json.RawMessage
	var err error
	raw, answered := cp.last(method)
	if !answered && sendErr != nil && callCtx.Err() != nil && (h.conn.Connection != nil || errors.Is(sendErr, context.Canceled) || errors.Is(sendErr, context.DeadlineExceeded)) {
		// Flushed as a stdio or WebSocket server stops; a streamable
		// HTTP server's stop waits for the SDK's own, which it sends
		// only when the call ended for its context (not for a
		// connection already failed: the stop would wait for nothing).
		h.conn.owe(cp, callCtx.Err().Error())
	}
	if answered && raw.err != nil && callCtx.Err() != nil {
		// An error that came after the request was given up (timed out,
		// cancelled) is the server acknowledging the cancellation: the
		// reason is ours, not its.
		answered = false
	}
	if answered {
		// The server answered. The SDK may still have failed to decode the
		// answer (a content type it does not know): the raw bytes win.
		if raw.err != nil {
			err = protocolError(h.s.cfg(), method, raw.err)
		} else {
			result = raw.result
		}
	} else if sendErr == nil {
		// The SDK answered without this request on the wire: from its
		// own cache, or over another stream (2026-07-28 servers).
		result, _ = marshalVerbatim(typed)
	} else {
		cp.mu.Lock()
		if cp.sessionMissing {
			sendErr = fmt.Errorf("%w: %w", mcp.ErrSessionMissing, sendErr)
		}
		if cp.httpStatus != 0 {
			sendErr = &httpAnswer{status: cp.httpStatus, body: cp.httpBody, err: sendErr}
		}
		cp.mu.Unlock()
		err = h.failure(ctx, callCtx, what, method, dl, sendErr)
		if n := h.proc.skippedLines() - skipped; n > 0 {
			err = strayStdout(err, h.s.cfg(), h.proc, n, h.s.requests.soloSince(began))
		}
	}
	recorded := err
	if KindOf(err) == KindTimeout && callerShort {
		// The caller's own, shorter timeout: its giving up, as Ctrl-C
		// is, not the server's error.
		recorded = nil
	}
	h.s.e.metrics.record(h.s.cfg().Name, method, time.Since(t0), recorded)
	if KindOf(err) != KindTimeout || !callerShort {
		h.noteOutcome(ctx, err)
	}
	return result, err
}

// inFlight counts a server's requests: those under way, and all begun,
// so that a request can tell whether it had the server to itself (its
// server's stray stdout lines are then its own to see).
type inFlight struct{ now, begun atomic.Int64 }

// A requestMark is a request's view as it began: alone, and the count.
type requestMark struct {
	alone bool
	begun int64
}

func (f *inFlight) begin() requestMark {
	return requestMark{f.now.Add(1) == 1, f.begun.Add(1)}
}

func (f *inFlight) end() { f.now.Add(-1) }

// soloSince reports whether no other request began or was under way
// since m.
func (f *inFlight) soloSince(m requestMark) bool {
	return m.alone && f.begun.Load() == m.begun
}

// strayStdout adds to a request's timeout that its server wrote n lines
// to stdout that were not JSON-RPC while the request ran: its answer may
// be among them (a print, a log written to stdout), and then no time is
// long enough. The lines themselves are shown only when the request was
// alone on the server: another's (another client's, through serve) are
// not its to see.
func strayStdout(err error, cfg *config.Server, proc *process, n int64, alone bool) error {
	var e *Error
	if KindOf(err) != KindTimeout || !errors.As(err, &e) {
		return err
	}
	e = e.clone()
	lines := "1 line to stdout that was"
	if n > 1 {
		lines = fmt.Sprintf("%d lines to stdout that were", n)
	}
	e.Message += fmt.Sprintf("; meanwhile server %s wrote %s not JSON-RPC", cfg.Name, lines)
	hint := fmt.Sprintf("an MCP server writes only JSON-RPC messages to stdout: if its answer is among those lines, it printed or logged to stdout instead; check server %s's logging settings (%s)", cfg.Name, cfg.Source)
	if alone {
		e.Stdout = proc.stdoutTail.last(int(min(n, 10)))
	} else {
		hint += "; the lines are not shown, as another request ran beside this one (a session logs them: mcpctl logs)"
	}
	e.Hint = append([]string{hint}, e.Hint...)
	return e
}

// stoppedDuring is the error of a request whose server mcpctl stopped
// under it: the engine closing (a session's end, which a session tells as
// such) or another stop (stoppedByUs).
func (h *handle) stoppedDuring(what string, err error) *Error {
	name := h.s.cfg().Name
	if h.s.e.closed.Load() {
		return errorf(KindUnavailable, name, "server %s was stopped during %s: the engine was closed", name, what).
			hint("make a new one with engine.New").wrap(errors.Join(errEngineClosed, err))
	}
	return errorf(KindUnavailable, name, "server %s was stopped during %s", name, what).hint(stoppedByUs).wrap(err)
}

// stoppedByUs is the hint of a request whose server mcpctl stopped under it.
const stoppedByUs = "it was stopped by mcpctl (a restart, a stop, a reload that changed it, the session's end, or its connection lost); see its state with: mcpctl status"

// connClosed tells an error of a connection that ended.
func connClosed(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || strings.Contains(err.Error(), "EOF")
}

// failure explains why a request got no answer. The caller's own giving
// up is its context's error, as it is; any other failure is an *Error
// that does not read as it: a request's context ended with its connection
// (or a dial's deadline) while the caller's is live must not pass for the
// caller's cancellation, errors.Is(err, context.Canceled).
func (h *handle) failure(ctx, callCtx context.Context, what, method string, dl *deadline, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return notCallers(h.explain(callCtx, what, method, dl, err))
}

// notCallers is err with its chain cut below an engine error that would
// match context.Canceled or DeadlineExceeded; the message stays.
func notCallers(err error) error {
	var e *Error
	if !errors.As(err, &e) || !(errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return err
	}
	c := e.clone()
	if c.err != nil {
		c.err = errors.New(c.err.Error())
	}
	return c
}

// explain is failure's reason, classified by the error as the SDK gave it.
func (h *handle) explain(callCtx context.Context, what, method string, dl *deadline, err error) error {
	name := h.s.cfg().Name
	if err == nil {
		err = errors.New("no answer")
	}
	var ae *Error
	if errors.As(err, &ae) && ae.Kind == KindAuth {
		return ae
	}
	if errors.Is(err, mcp.ErrSessionMissing) {
		// The server did not take the request: it no longer knows the
		// session (it restarted, or timed the session out).
		h.s.renew(h.cs)
		e := errorf(KindUnavailable, name, "server %s no longer knows mcpctl's session (it may have restarted); %s was not run", name, what)
		e.unsent = true
		return e.hint("try again: mcpctl connects to it afresh").wrap(err)
	}
	var werr *jsonrpc.Error
	var ha *httpAnswer
	var said *Error
	// A server that closed its stdin reads nothing more: the write fails.
	stdinGone := h.s.cfg().IsStdio() && (errors.Is(err, syscall.EPIPE) || strings.Contains(err.Error(), "broken pipe"))
	connLost := h.life.Err() != nil || connClosed(err) || stdinGone || !h.s.cfg().IsStdio() && connBroken(err)
	switch {
	case context.Cause(callCtx) == errPostRefused && errors.As(err, &ha):
		// As the SDK tells a refusal over streamable HTTP (-32005): the
		// request's refusal, no failure of the server's to count.
		refused := *ha
		refused.err = &jsonrpc.Error{Code: codeRejected, Message: "rejected by transport"}
		return httpAnswerError(h.s.cfg(), what, &refused)
	case context.Cause(callCtx) == errTimedOut && h.life.Err() == nil:
		timeout := dl.timeout
		var e *Error
		switch capped, ran := dl.reachedCap(); {
		case capped:
			e = errorf(KindTimeout, name, "%s still ran after %s, the longest progress keeps a request with a %s timeout going (%d times it); the server was told to cancel", what, ran.Round(100*time.Millisecond), timeout, progressCap).
				hint("give it longer with --timeout: progress keeps it going up to %d times that, e.g. --timeout %s for %s", progressCap, 2*timeout, 2*progressCap*timeout)
		case dl.extended():
			e = errorf(KindTimeout, name, "%s did not answer within %s of its last progress (the server was told to cancel)", what, timeout).
				hint("give it longer with --timeout, e.g. --timeout %s", 2*timeout)
		default:
			e = errorf(KindTimeout, name, "%s did not answer within %s (the server was told to cancel)", what, timeout).
				hint("give it longer with --timeout, e.g. --timeout %s", 2*timeout)
		}
		if cfg := h.s.cfg(); cfg.RequestTimeout > 0 && !h.s.e.requestSet && !dl.byCaller && timeout == cfg.RequestTimeout {
			// The config's timeout, not the caller's: where to raise it
			// for every request, in the file's own words.
			e.hint("or raise %s of server %s (%s) for all its requests", cfg.FieldName("requestTimeout"), name, cfg.Where("requestTimeout"))
		}
		return e
	case connLost:
		// The process may be on its way out; let it finish so the error
		// can say how it ended. Not the 5 s watch gives one that closed
		// its stdout: the caller is told now that it did.
		stdoutClosed := h.proc != nil && h.proc.lines != nil && h.proc.lines.eof.Load()
		if h.proc != nil {
			waitDone(h.proc.done, 500*time.Millisecond)
		}
		h.s.mu.Lock()
		stopped := h.s.state == StateStopping || h.s.state == StateStopped
		h.s.mu.Unlock()
		if stopped {
			return h.stoppedDuring(what, nil)
		}
		e := errorf(KindUnavailable, name, "server %s closed the connection during %s", name, what)
		if stdoutClosed {
			e = errorf(KindUnavailable, name, "server %s closed its stdout during %s", name, what)
		}
		switch {
		case stdinGone && (!h.proc.exited() || h.proc.stoppedByUs()):
			// It lived on, but nothing could reach it: it is unavailable,
			// for that reason, and its connection is closed, which ends
			// this run of it as a lost one does.
			h.s.mu.Lock()
			if h.s.cs == h.cs && (h.s.state == StateReady || h.s.state == StateDegraded) {
				h.s.setState(StateUnavailable, errorf(KindUnavailable, name, "server %s no longer reads its stdin", name))
			}
			h.s.mu.Unlock()
			h.cs.Close()
			e = errorf(KindUnavailable, name, "server %s no longer reads its stdin: %s could not be sent to it", name, what)
		case h.proc.stoppedByUs():
			// Its exit (a signal, or code 0 on end of input) was mcpctl's
			// doing: a restart, a stop, or its connection lost.
			return h.stoppedDuring(what, err)
		case h.proc.exited():
			e = h.s.exitError(h.proc, what)
		}
		e.Stderr = h.proc.stderrTail(10)
		if !h.s.cfg().IsStdio() {
			// One request's connection: the server, or a proxy before
			// it, went away or restarted. It counts toward
			// failureThreshold, as a refused connection does.
			e.unreachable = true
			return e.hint("try again if %s can be run twice: the server may have restarted, or a proxy dropped the connection", what).wrap(err)
		}
		if h.s.restartsByItself() {
			return e.hint("server %s restarts by itself (restart: on-failure); try again, or add --retry 1", name).wrap(err)
		}
		if h.s.cfg().Activation == "transient" {
			return e.hint("the next request starts it again (activation: transient)").wrap(err)
		}
		return e.hint("start it again with: mcpctl restart %s", name).wrap(err)
	case !h.s.cfg().IsStdio() && dialFailed(err) != nil:
		// The SDK reports a request it could not post as rejected
		// (-32005), as if the server had answered so.
		e := remoteFailure(h.s.cfg(), dialFailed(err))
		e.unreachable = true
		return e
	case errors.As(err, &ha) && errors.As(err, &werr) && werr.Code == codeRejected:
		// An HTTP error with no JSON-RPC message, which the SDK tells as
		// an answer of its own making.
		if errors.As(err, &said) {
			return said // the OAuth handler's, on a 401 or 403: it says more
		}
		return httpAnswerError(h.s.cfg(), what, ha)
	case errors.As(err, &werr):
		return protocolError(h.s.cfg(), method, werr)
	}
	return errorf(KindProtocol, name, "server %s: %s failed: %s", name, method, h.s.said(err)).wrap(err)
}

// connBroken reports a connection that broke under a request (reset,
// closed while written to, or a kept-alive one the server closed as the
// request went out): the server, or a proxy before it, went away. Over
// HTTP the SDK reports it as a rejection (-32005), as if the server had
// answered so; a call's stream that ended without its answer, and could
// not be resumed, as an error answer of its own making (only its text
// tells).
func connBroken(err error) bool {
	msg := err.Error()
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED) ||
		strings.Contains(msg, "http: server closed idle connection") || // net/http's errServerClosedIdle
		strings.Contains(msg, "request terminated without response") || strings.Contains(msg, "failed to reconnect")
}

// dialFailed is the error of a connection that could not be made, when
// that is what err says.
func dialFailed(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && (oe.Op == "dial" || oe.Op == "proxyconnect") {
		return oe // through a proxy, the proxy's dial wraps the server's
	}
	return nil
}

// protocolError explains a server's error answer; what it says is
// redacted, as it may repeat a secret the server was given.
func protocolError(cfg *config.Server, method string, err error) *Error {
	server := cfg.Name
	var werr *jsonrpc.Error
	if errors.As(err, &werr) && string(werr.Data) == strconv.Quote(droppedMarker) {
		return errorf(KindProtocol, server, "server %s answered %s with one message longer than %d MiB, the most mcpctl reads; the answer was dropped", server, method, maxMessage>>20).
			hint("ask for less at once (a smaller page, a narrower read)").wrap(err)
	}
	if errors.As(err, &werr) && werr.Code == jsonrpc.CodeMethodNotFound {
		// Asked of a server that does not do it (a read of one that
		// offers no resources): the asker's mistake, not the server's.
		e := errorf(KindUsage, server, "server %s does not answer %s (it says: %s)", server, method, cfg.Redact(werr.Message)).
			hint("see what it offers with: mcpctl inspect %s", server).wrap(err)
		e.Answer = redactedAnswer(cfg, werr)
		return e
	}
	if errors.As(err, &werr) {
		e := errorf(KindProtocol, server, "server %s answered %s with error %d: %s", server, method, werr.Code, cfg.Redact(werr.Message)).wrap(err)
		e.Answer = redactedAnswer(cfg, werr)
		return e
	}
	return errorf(KindProtocol, server, "server %s answered %s with an error: %s", server, method, cfg.Redact(withoutSessionID(err.Error()))).wrap(err)
}

// redactedAnswer is a server's error answer with the secrets of its
// config taken out of its message and data.
func redactedAnswer(cfg *config.Server, werr *jsonrpc.Error) *jsonrpc.Error {
	a := &jsonrpc.Error{Code: werr.Code, Message: cfg.Redact(werr.Message)}
	if len(werr.Data) > 0 {
		// As a log message's data: secrets looked for in the decoded
		// strings too (one JSON escapes), and the data kept JSON.
		var v any
		dec := json.NewDecoder(bytes.NewReader(werr.Data))
		dec.UseNumber() // numbers exactly as sent
		if dec.Decode(&v) == nil {
			if data, err := marshalVerbatim(redactValue(cfg.Redact, v)); err == nil {
				a.Data = redactJSON(cfg.Redact, data)
				return a
			}
		}
		a.Data = redactJSON(cfg.Redact, werr.Data)
	}
	return a
}

// codeRejected is the code the SDK gives a request its HTTP transport
// could not deliver or got no JSON-RPC answer to (its ErrRejected).
const codeRejected = -32005

// An httpAnswer is a request's error from the SDK, when the server
// answered it with an HTTP error and no JSON-RPC message: its status, and
// the start of what it wrote.
type httpAnswer struct {
	status int
	body   string
	err    error
}

func (a *httpAnswer) Error() string { return a.err.Error() }
func (a *httpAnswer) Unwrap() error { return a.err }

// httpAnswerError is the error of a request a remote server answered with
// an HTTP error and no JSON-RPC message: its status, and the first line of
// what it said. A 5xx is the server failing (exit 3, and it counts toward
// failureThreshold); a 429, the server limiting its requests (exit 3, not
// counted); another 4xx, the server refusing the request (exit 5, not
// counted).
func httpAnswerError(cfg *config.Server, what string, a *httpAnswer) *Error {
	status := a.status
	said := truncate(strings.TrimSpace(strings.SplitN(strings.ToValidUTF8(a.body, "?"), "\n", 2)[0]), 200)
	msg := fmt.Sprintf("server %s (%s) answered %s with HTTP %d %s", cfg.Name, cfg.Redact(cfg.URL), what, status, http.StatusText(status))
	if said != "" {
		msg += ": " + cfg.Redact(said)
	}
	switch {
	case status/100 == 5:
		e := errorf(KindUnavailable, cfg.Name, "%s", msg)
		e.unreachable = true
		return e.hint("the server failed: see its own logs")
	case status == http.StatusTooManyRequests:
		return errorf(KindUnavailable, cfg.Name, "%s", msg).hint("the server limits how many requests it takes: try again later")
	}
	e := errorf(KindProtocol, cfg.Name, "%s", msg).hint("the server refused the request: check the server's docs or logs").wrap(a.err)
	if what == "initialize" || what == "server/discover" {
		hintOtherTransport(e, cfg, msg)
	}
	return e
}
