package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/schemas"
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
	defer h.conn.release(cp)
	typed, sendErr := send(cctx)
	var result json.RawMessage
	var err error
	raw, answered := cp.last(method)
	if !answered && sendErr != nil && callCtx.Err() != nil && h.s.cfg().IsStdio() {
		h.conn.owe(cp, callCtx.Err().Error()) // flushed as a stdio server stops
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
		cp.mu.Unlock()
		err = h.failure(ctx, callCtx, what, method, dl, sendErr)
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
	// A server that closed its stdin reads nothing more: the write fails.
	stdinGone := h.s.cfg().IsStdio() && (errors.Is(err, syscall.EPIPE) || strings.Contains(err.Error(), "broken pipe"))
	connLost := h.life.Err() != nil || connClosed(err) || stdinGone || !h.s.cfg().IsStdio() && connBroken(err)
	switch {
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
			return errorf(KindUnavailable, name, "server %s was stopped during %s", name, what)
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
			return errorf(KindUnavailable, name, "server %s was stopped during %s", name, what).
				hint("mcpctl stopped it (a restart, a stop, or its connection lost); see its state with: mcpctl status").wrap(err)
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
	case errors.As(err, &werr):
		return protocolError(h.s.cfg(), method, werr)
	}
	return errorf(KindProtocol, name, "server %s: %s failed: %s", name, method, h.s.cfg().Redact(err.Error())).wrap(err)
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
		return errorf(KindUsage, server, "server %s does not answer %s (it says: %s)", server, method, cfg.Redact(werr.Message)).
			hint("see what it offers with: mcpctl inspect %s", server).wrap(err)
	}
	if errors.As(err, &werr) {
		return errorf(KindProtocol, server, "server %s answered %s with error %d: %s", server, method, werr.Code, cfg.Redact(werr.Message)).wrap(err)
	}
	return errorf(KindProtocol, server, "server %s answered %s with an error: %s", server, method, cfg.Redact(err.Error())).wrap(err)
}

// CallTool calls server.tool. Arguments are built from req, validated
// against the tool's input schema and only then sent. A tool that reports
// failure (isError) is a result, not an error. A tool whose
// execution.taskSupport is "required" (or "optional", with req.Task) runs as
// a task: created, polled, and its result fetched.
func (e *Engine) CallTool(ctx context.Context, req *CallRequest) (*CallResult, error) {
	if req == nil {
		return nil, nilRequest("CallTool", "CallRequest")
	}
	if err := badRequest("CallTool", "CallRequest", req.TimeoutMs, req.Retry); err != nil {
		return nil, err
	}
	srvName, toolName, err := SplitName(req.Name)
	if err != nil {
		return nil, err
	}
	s, err := e.lookup(srvName)
	if err != nil {
		return nil, err
	}
	if req.OnProgress != nil {
		relay := newProgressRelay(req.OnProgress, e.log)
		r := *req
		r.OnProgress = relay.send
		returned := false
		defer func() {
			if !returned {
				relay.stop(false) // the call panicked: that panic goes on
			}
		}()
		res, err := e.callTool(ctx, s, toolName, &r)
		returned = true
		relay.stop(true)
		return res, err
	}
	return e.callTool(ctx, s, toolName, req)
}

// callTool is CallTool once its request is checked and its server found.
func (e *Engine) callTool(ctx context.Context, s *server, toolName string, req *CallRequest) (*CallResult, error) {
	srvName := s.cfg().Name
	// A call is tried once unless the caller asks for retries or the tool
	// says calling it twice does no harm.
	tries := 1 + req.Retry
	var res *CallResult
	err := e.retrying(ctx, &tries, s, func(ctx context.Context) (err error) {
		res, err = e.callOnce(ctx, s, toolName, req, &tries)
		return err
	})
	return res, deadlineError(err, srvName, "the call to "+req.Name)
}

func (e *Engine) callOnce(ctx context.Context, s *server, toolName string, req *CallRequest, tries *int) (res *CallResult, err error) {
	srvName := s.cfg().Name
	h, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer h.release()
	tool := h.snap.toolByName[toolName]
	if tool == nil {
		return nil, unknownTool(s.cfg(), h.snap, srvName, toolName)
	}
	defer func() {
		// Asked only when it matters: after a failure. A timeout the
		// caller set bounds the call, not each try of it.
		if err != nil && req.Retry == 0 && req.TimeoutMs == 0 && tool.Idempotent() {
			*tries = retryTries
		}
	}()
	args, err := buildArguments(tool, req.Arguments, req.Pairs)
	if err != nil {
		return nil, err
	}
	if err := tool.validate(args); err != nil {
		return nil, err
	}
	support := tool.TaskSupport()
	if req.Task && support == "forbidden" {
		return nil, errorf(KindUsage, srvName, "%s cannot run as a task (its execution.taskSupport is forbidden)", tool.Name()).
			hint("call it without --task")
	}
	token := e.nextToken()
	// Progress keeps the call alive: each notification extends its deadline.
	defer e.watchProgress(token, func(p Progress) {
		h.deadline.Load().extend()
		if req.OnProgress != nil {
			req.OnProgress(p)
		}
	})()
	call := &asker{caller: req.Caller, sampling: req.Sampling, elicitation: req.Elicitation, hold: h.holdDeadline, ctx: ctx}
	defer s.askers.add(call)()
	if support == "required" || (support == "optional" && req.Task) {
		return h.callTask(ctx, tool, args, token, req)
	}
	what := "the call to " + tool.Name()
	for round := 0; ; round++ {
		raw, err := h.doFor(ctx, "tools/call", what, req.TimeoutMs, func(ctx context.Context) (any, error) {
			params := &mcp.CallToolParams{Name: toolName, Arguments: args}
			params.SetProgressToken(token)
			return h.cs.CallTool(ctx, params)
		})
		// A server that needs the user to visit a URL first says so with
		// an error (-32042); once they did, the call is made again.
		if els := urlElicitations(err); els != nil && round < maxURLRounds {
			if err := s.satisfy(ctx, what, els, err, req.Elicitation, call); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		return callResult(srvName, tool, raw)
	}
}

// maxURLRounds bounds how often one call sends its user to a URL: a server
// that asks again after every visit would otherwise loop.
const maxURLRounds = 3

// reader is a request other than a call in flight (a prompt, a read, a
// completion): it answers no question itself, but while it is in flight a
// question could be its, so no call's caller is asked one (a hook is, or
// it is declined), and a hook answering holds its deadline.
func (h *handle) reader() *asker {
	return &asker{hold: h.holdDeadline}
}

// holdDeadline stops the running request's deadline until resume.
func (h *handle) holdDeadline() (resume func()) {
	return h.deadline.Load().hold()
}

func callResult(server string, tool *Tool, raw json.RawMessage) (*CallResult, error) {
	// Scanned, not decoded: a result can be megabytes of content.
	var isError bool
	ms, err := members(raw)
	malformed := func(what string) (*CallResult, error) {
		return nil, errorf(KindProtocol, server, "%s answered with a result that breaks MCP: %s", tool.Name(), what).
			hint("tell the server's authors; with MCPCTL_TRACE=1, mcpctl up logs each message as sent (servers/%s.wire.jsonl)", server)
	}
	if err != nil {
		return malformed("it is not a JSON object")
	}
	for _, m := range ms {
		switch m.key {
		case "content":
			if len(m.value) == 0 || m.value[0] != '[' {
				return malformed("its content is not an array")
			}
		case "structuredContent":
			if len(m.value) == 0 || m.value[0] != '{' && string(m.value) != "null" {
				return malformed("its structuredContent is not an object")
			}
		case "isError":
			if v := string(m.value); v != "true" && v != "false" && v != "null" {
				return malformed("its isError is not true or false")
			}
			isError = string(m.value) == "true"
		case "resultType":
			if string(m.value) == `"input_required"` {
				return nil, errorf(KindProtocol, server, "%s asked for input (resultType input_required), which mcpctl cannot provide yet", tool.Name())
			}
		}
	}
	return &CallResult{Server: server, Tool: tool.Tool, Result: raw, IsError: isError}, nil
}

// GetPrompt gets server.prompt with its arguments, checked against the ones
// the prompt declares. Answers come from the cache when fresh, even when the
// server is down (not once [Engine.Stop] stopped it: that drops them).
func (e *Engine) GetPrompt(ctx context.Context, req *PromptRequest) (*PromptResult, error) {
	if req == nil {
		return nil, nilRequest("GetPrompt", "PromptRequest")
	}
	if err := badRequest("GetPrompt", "PromptRequest", req.TimeoutMs, 0); err != nil {
		return nil, err
	}
	if err := e.open(); err != nil {
		return nil, err // a cached answer too: the engine holds nothing after Close
	}
	srvName, promptName, err := splitName(req.Name, "prompt")
	if err != nil {
		return nil, err
	}
	s, err := e.lookup(srvName)
	if err != nil {
		return nil, err
	}
	var res *PromptResult
	err = e.retrying(ctx, readTries(req.TimeoutMs), s, func(ctx context.Context) (err error) {
		res, err = e.promptOnce(ctx, s, promptName, req)
		return err
	})
	return res, deadlineError(err, srvName, "prompt "+req.Name)
}

func (e *Engine) promptOnce(ctx context.Context, s *server, promptName string, req *PromptRequest) (*PromptResult, error) {
	srvName := s.cfg().Name
	// A fresh answer is given whatever the server's state: it may be down,
	// or one that starts on use need not start. Arguments that made it were
	// checked when it was asked.
	if args, err := mergePromptArgs(srvName, req); err == nil && !req.NoCache {
		if raw, ok := e.cache.get(cacheKey(srvName, "prompts/get", &mcp.GetPromptParams{Name: promptName, Arguments: args})); ok {
			return &PromptResult{Server: srvName, Prompt: promptName, Result: raw, Cached: true}, nil
		}
	}
	h, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer h.release()
	if len(h.snap.unlisted) > 0 {
		if sn := s.fill(); sn != nil {
			h.snap = sn
		}
	}
	prompt := h.snap.promptByName[promptName]
	if prompt == nil {
		if f := h.snap.failures(listPrompts); len(f) > 0 {
			return nil, f[0].clone() // it may be there, unlisted: not "unknown"
		}
		return nil, unknownName("prompt", req.Name, srvName, h.snap.names(listPrompts))
	}
	args, err := promptArguments(prompt, req)
	if err != nil {
		return nil, err
	}
	params := &mcp.GetPromptParams{Name: promptName, Arguments: args}
	key := cacheKey(srvName, "prompts/get", params)
	defer s.askers.add(h.reader())()
	raw, err := h.doFor(ctx, "prompts/get", "prompt "+req.Name, req.TimeoutMs, func(ctx context.Context) (any, error) {
		return h.cs.GetPrompt(ctx, params)
	})
	if err != nil {
		return nil, err
	}
	e.cache.put(key, srvName, "prompts/get", "", raw, s.cfg().CacheTTL)
	return &PromptResult{Server: srvName, Prompt: promptName, Result: raw}, nil
}

// promptArguments merges Arguments and key=value pairs and checks them
// against the prompt's declared arguments.
func promptArguments(p *Prompt, req *PromptRequest) (map[string]string, error) {
	args, err := mergePromptArgs(p.Server, req)
	if err != nil {
		return nil, err
	}
	declared := p.Arguments()
	names := argumentNames(declared)
	var lines []string
	var candidates []string
	for k := range args {
		if !slices.Contains(names, k) {
			line := fmt.Sprintf("%s: unknown argument", k)
			if near := closest(k, names); near != "" {
				line += fmt.Sprintf(" (did you mean %s?)", near)
				candidates = append(candidates, near)
			}
			lines = append(lines, line)
		}
	}
	for _, a := range declared {
		if _, ok := args[a.Name]; a.Required && !ok {
			lines = append(lines, fmt.Sprintf("%s: required, but missing", a.Name))
		}
	}
	if len(lines) > 0 {
		slices.Sort(lines)
		e := errorf(KindUsage, p.Server, "invalid arguments for prompt %s: %s", p.Name(), strings.Join(lines, "; "))
		e.Candidates = candidates
		return nil, e.hint("see the prompt's arguments: mcpctl prompts %s", p.Name())
	}
	return args, nil
}

// mergePromptArgs merges a prompt request's Arguments and key=value pairs.
func mergePromptArgs(server string, req *PromptRequest) (map[string]string, error) {
	args := map[string]string{}
	for k, v := range req.Arguments {
		args[k] = v
	}
	seen := map[string]bool{}
	for _, pair := range req.Pairs {
		k, v, isJSON, ok := splitPair(pair)
		if !ok || isJSON {
			return nil, errorf(KindUsage, server, "argument %q is not key=value", pair).
				hint("prompt arguments are text: write key=value")
		}
		if err := givenOnce(server, seen, k); err != nil {
			return nil, err
		}
		args[k] = v
	}
	return args, nil
}

// ReadResource reads a resource from the server that lists its URI, or whose
// template matches it, or from req.Server. Answers come from the cache when
// fresh, even when the server is down (not once [Engine.Stop] stopped it:
// that drops them).
func (e *Engine) ReadResource(ctx context.Context, req *ResourceRequest) (*ResourceResult, error) {
	if req == nil {
		return nil, nilRequest("ReadResource", "ResourceRequest")
	}
	if err := badRequest("ReadResource", "ResourceRequest", req.TimeoutMs, 0); err != nil {
		return nil, err
	}
	if err := e.open(); err != nil {
		return nil, err // a cached answer too: the engine holds nothing after Close
	}
	s, err := e.route(ctx, req.URI, req.Server)
	if err != nil {
		return nil, err
	}
	var res *ResourceResult
	err = e.retrying(ctx, readTries(req.TimeoutMs), s, func(ctx context.Context) (err error) {
		res, err = e.readOnce(ctx, s, req)
		return err
	})
	if err != nil && req.Server != "" {
		nearURIs(s, req.URI, err)
	}
	return res, deadlineError(err, s.cfg().Name, "reading "+req.URI)
}

// nearURIs adds a did-you-mean to err, server s's refusal of a read of uri
// it was named for, when s lists no such URI and has no template matching
// it: without --server, routing would have said so.
func nearURIs(s *server, uri string, err error) {
	var me *Error
	var werr *jsonrpc.Error
	if !errors.As(err, &me) || me.Kind != KindProtocol || !errors.As(err, &werr) {
		return
	}
	sn := s.lastOffer()
	if sn == nil || slices.ContainsFunc(sn.templates, func(t *Template) bool { return t.Match(uri) }) {
		return
	}
	uris := make([]string, 0, len(sn.resources))
	for _, r := range sn.resources {
		if r.URI == uri {
			return
		}
		uris = append(uris, r.URI)
	}
	if near := schemas.Closest(uri, uris); len(near) > 0 {
		me.Candidates = near
		me.hint("did you mean %s?", strings.Join(near, " or "))
	}
	me.hint("see its resources with: mcpctl resources %s", s.cfg().Name)
}

func (e *Engine) readOnce(ctx context.Context, s *server, req *ResourceRequest) (*ResourceResult, error) {
	params := &mcp.ReadResourceParams{URI: req.URI}
	key := cacheKey(s.cfg().Name, "resources/read", params)
	// A fresh answer is given whatever the server's state (see promptOnce).
	if !req.NoCache {
		if raw, ok := e.cache.get(key); ok {
			return &ResourceResult{Server: s.cfg().Name, URI: req.URI, Result: raw, Cached: true}, nil
		}
	}
	h, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer h.release()
	defer s.askers.add(h.reader())()
	raw, err := h.doFor(ctx, "resources/read", "reading "+req.URI, req.TimeoutMs, func(ctx context.Context) (any, error) {
		return h.cs.ReadResource(ctx, params)
	})
	if err != nil {
		return nil, err
	}
	e.cache.put(key, s.cfg().Name, "resources/read", req.URI, raw, s.cfg().CacheTTL)
	return &ResourceResult{Server: s.cfg().Name, URI: req.URI, Result: raw}, nil
}

// route finds the server for a resource URI: the one named, else the one
// that lists the URI, else the one with a template that matches it (see
// Engine.offers for servers that cannot answer).
func (e *Engine) route(ctx context.Context, uri, name string) (*server, error) {
	if uri == "" {
		return nil, errorf(KindUsage, name, "the resource URI is empty").hint("see the resources with: mcpctl resources")
	}
	if name != "" {
		s, err := e.lookup(name)
		if err != nil {
			return nil, err
		}
		// Only a URI with a brace can be a template as written: a read
		// through a named server (serve's every read) looks no further.
		if !strings.Contains(uri, "{") {
			return s, nil
		}
		if sn := s.lastOffer(); sn != nil {
			for _, t := range sn.templates {
				if t.URITemplate == uri {
					// Sent as it is, its braces escaped, it would read nothing.
					return nil, errorf(KindUsage, name, "%s is a template of server %s, not a resource URI", uri, name).
						hint("fill in %s, e.g. with: mcpctl complete '%s' %s ''", braced(t.variables()), uri, firstOr(t.variables(), "NAME"))
				}
			}
		}
		return s, nil
	}
	offers := e.offers(ctx)
	listed := offers.matching(func(sn *snapshot) bool {
		return slices.ContainsFunc(sn.resources, func(r *Resource) bool { return r.URI == uri })
	})
	templated := offers.matching(func(sn *snapshot) bool {
		return slices.ContainsFunc(sn.templates, func(t *Template) bool { return t.Match(uri) })
	})
	candidates := firstOf(listed, templated)
	switch len(candidates) {
	case 1:
		return candidates[0], nil
	case 0:
		err := errorf(KindUsage, "", "no server lists resource %s or has a template that matches it", uri)
		var uris []string
		for _, o := range offers.offers {
			for _, r := range o.sn.resources {
				if !slices.Contains(uris, r.URI) { // two servers may list it
					uris = append(uris, r.URI)
				}
			}
			for _, t := range o.sn.templates {
				if t.URITemplate == uri {
					err.hint("it is a template of server %s: fill in %s", o.s.cfg().Name, braced(t.variables()))
				}
			}
			for _, f := range o.sn.failures(listResources) {
				err.hint("%s; name it to read from it: --server %s", f.Message, o.s.cfg().Name)
			}
		}
		if near := schemas.Closest(uri, uris); len(near) > 0 {
			err.Candidates = near
			err.hint("did you mean %s?", strings.Join(near, " or "))
		}
		return nil, offers.notFound(err.hint("see the resources with: mcpctl resources; or name the server: --server SERVER"))
	}
	return nil, ambiguous(candidates, "resource %s is offered by several servers", uri)
}

// firstOr is the first of list, or def.
func firstOr(list []string, def string) string {
	if len(list) > 0 {
		return list[0]
	}
	return def
}

// braced is a template's variables as written in it: {a}, {b}.
func braced(vars []string) string {
	out := make([]string, len(vars))
	for i, v := range vars {
		out[i] = "{" + v + "}"
	}
	return strings.Join(out, ", ")
}

// An offered is what a server offers for routing, read once per request.
type offered struct {
	s  *server
	sn *snapshot
}

// An offerList is what the servers offer, and why those that start on use
// and could not start offer nothing.
type offerList struct {
	offers []offered
	failed map[*server]error
}

// notFound is err, a request that no server's lists match, with a hint
// for each server that could not start to say what it offers.
func (l offerList) notFound(err *Error) *Error {
	failed := slices.SortedFunc(maps.Keys(l.failed), func(a, b *server) int { return strings.Compare(a.cfg().Name, b.cfg().Name) })
	for _, s := range failed {
		err.hint("server %s starts on use and could not start to say what it offers: %v", s.cfg().Name, l.failed[s])
	}
	return err
}

// offers reads what every server offers for routing a request: what it
// lists now, or for one that cannot answer (unavailable, stopped by hand)
// what it listed last. A server that starts on use and was
// never listed is started to list it first (until ctx ends), as resources
// does, so that a lazy or transient server is found, and a URI two
// servers offer is found ambiguous, whether or not something listed them
// before.
func (e *Engine) offers(ctx context.Context) offerList {
	servers := e.all()
	out := offerList{failed: knowAll(ctx, servers)}
	for _, s := range servers {
		if sn := s.lastOffer(); sn != nil {
			out.offers = append(out.offers, offered{s, sn})
		}
	}
	return out
}

// matching returns the servers whose lists match, in the config's order.
// One that cannot answer counts as its last lists say: which server a
// request goes to, or whether it is ambiguous, does not change with the
// servers' health; routed to one that cannot answer, a request fails with
// that server's own error and hint, not with "no server offers it".
func (l offerList) matching(match func(*snapshot) bool) []*server {
	var out []*server
	for _, o := range l.offers {
		if match(o.sn) {
			out = append(out, o.s)
		}
	}
	return out
}

// firstOf returns the first of lists that is not empty.
func firstOf(lists ...[]*server) []*server {
	for _, l := range lists {
		if len(l) > 0 {
			return l
		}
	}
	return nil
}

// ambiguous is the error for a request that several servers match: what
// (a format and its args) is followed by their names, which --server
// chooses from.
func ambiguous(servers []*server, format string, args ...any) *Error {
	names := make([]string, len(servers))
	for i, s := range servers {
		names[i] = s.cfg().Name
	}
	err := errorf(KindUsage, "", format+": %s", append(args, strings.Join(names, ", "))...)
	err.Candidates = names
	return err.hint("name the server: --server %s", names[0])
}

// Complete asks for completions of an argument of a prompt (ref is
// server.prompt) or of a resource template (ref is the template).
func (e *Engine) Complete(ctx context.Context, req *CompleteRequest) (*CompleteResult, error) {
	if req == nil {
		return nil, nilRequest("Complete", "CompleteRequest")
	}
	if err := badRequest("Complete", "CompleteRequest", req.TimeoutMs, 0); err != nil {
		return nil, err
	}
	var s *server
	ref := &mcp.CompleteReference{}
	if strings.Contains(req.Ref, "://") || strings.Contains(req.Ref, "{") {
		ref.Type, ref.URI = "ref/resource", req.Ref
		var err error
		if s, err = e.templateServer(ctx, req.Ref, req.Server); err != nil {
			return nil, err
		}
		if sn, _, err := s.offer(); err == nil {
			if i := slices.IndexFunc(sn.templates, func(t *Template) bool { return t.URITemplate == req.Ref }); i >= 0 {
				if err := knownArguments("resource template", req.Ref, s.cfg().Name, sn.templates[i].variables(), req); err != nil {
					return nil, err
				}
			}
		}
	} else {
		srvName, promptName, err := splitName(req.Ref, "prompt")
		if err != nil {
			return nil, errorf(KindUsage, "", "%q is neither server.prompt nor a resource template", req.Ref).
				hint("complete a prompt argument: mcpctl complete SERVER.PROMPT ARG PREFIX; or a template's: mcpctl complete 'file:///{path}' path PREFIX")
		}
		if s, err = e.lookup(srvName); err != nil {
			return nil, err
		}
		ref.Type, ref.Name = "ref/prompt", promptName
		if sn, _, err := s.offer(); err == nil {
			p := sn.promptByName[promptName]
			if p == nil {
				return nil, unknownName("prompt", req.Ref, srvName, sn.names(listPrompts))
			}
			if err := knownArguments("prompt", req.Ref, srvName, argumentNames(p.Arguments()), req); err != nil {
				return nil, err
			}
		}
	}
	what := "completing " + req.Argument + " of " + req.Ref
	h, err := s.acquire(ctx)
	if err != nil {
		return nil, deadlineError(err, s.cfg().Name, what)
	}
	defer h.release()
	if h.capabilities().Completions == nil {
		return nil, errorf(KindUsage, s.cfg().Name, "server %s does not offer completion", s.cfg().Name)
	}
	params := &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: req.Argument, Value: req.Value}}
	if len(req.Context) > 0 {
		params.Context = &mcp.CompleteContext{Arguments: req.Context}
	}
	defer s.askers.add(h.reader())()
	raw, err := h.doFor(ctx, "completion/complete", what, req.TimeoutMs, func(ctx context.Context) (any, error) {
		return h.cs.Complete(ctx, params)
	})
	if err != nil {
		return nil, deadlineError(err, s.cfg().Name, what)
	}
	return &CompleteResult{Server: s.cfg().Name, Result: raw}, nil
}

// knownArguments refuses a completion's argument, or a key of its context,
// that the prompt or template does not have.
func knownArguments(what, ref, server string, names []string, req *CompleteRequest) *Error {
	if err := knownArgument(what, ref, server, names, req.Argument); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(req.Context)) {
		if err := knownArgument(what, ref, server, names, k); err != nil {
			return err.hint("--context takes the %s's other arguments", what)
		}
	}
	return nil
}

// knownArgument refuses an argument that what (a tool, a prompt, a
// resource template) does not have, naming the one meant: a misspelt name
// would only be ignored, or find no completions.
func knownArgument(what, ref, server string, names []string, arg string) *Error {
	if slices.Contains(names, arg) {
		return nil
	}
	if len(names) == 0 {
		return errorf(KindUsage, server, "%s %s takes no arguments (given %s)", what, ref, arg)
	}
	e := errorf(KindUsage, server, "%s %s has no argument %s", what, ref, arg)
	if near := closest(arg, names); near != "" {
		e.Candidates = []string{near}
		return e.hint("did you mean %s?", near)
	}
	return e.hint("its arguments: %s", strings.Join(names, ", "))
}

// templateServer finds the server that has a resource template (see
// Engine.offers for servers that cannot answer).
func (e *Engine) templateServer(ctx context.Context, tmpl, name string) (*server, error) {
	if name != "" {
		return e.lookup(name)
	}
	offers := e.offers(ctx)
	found := offers.matching(func(sn *snapshot) bool {
		return slices.ContainsFunc(sn.templates, func(t *Template) bool { return t.URITemplate == tmpl })
	})
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, offers.notFound(errorf(KindUsage, "", "no server has the resource template %s", tmpl).
			hint("see the templates with: mcpctl resources"))
	}
	return nil, ambiguous(found, "several servers have the resource template %s", tmpl)
}

// SubscribeResource subscribes to updates of a resource (routed as
// [Engine.ReadResource] routes); updates arrive as [EventResourceUpdated]
// events. Subscriptions to one URI are counted: the server is unsubscribed
// when the last release is called.
func (e *Engine) SubscribeResource(ctx context.Context, uri, server string) (release func(), err error) {
	defer func() { err = deadlineError(err, server, "subscribing to "+uri) }()
	s, err := e.route(ctx, uri, server)
	if err != nil {
		return nil, err
	}
	server = s.cfg().Name
	// A subscription uses the server until it is released: an idle or
	// transient server is not stopped under it.
	h, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	if c := h.capabilities().Resources; c == nil || !c.Subscribe {
		h.release()
		return nil, errorf(KindUsage, s.cfg().Name, "server %s does not support resource subscriptions", s.cfg().Name)
	}
	// The map is held only to find the URI's entry; the round trips are
	// made under the entry's own lock, which keeps one URI's subscribe and
	// unsubscribe in order without making other URIs wait on a slow server.
	s.subsMu.Lock()
	sub := s.subs[uri]
	if sub == nil {
		sub = &subscription{}
		s.subs[uri] = sub
	}
	sub.n++
	s.subsMu.Unlock()
	sub.mu.Lock()
	if sub.on != h.cs {
		_, err := h.do(ctx, "resources/subscribe", "subscribing to "+uri, h.s.requestTimeout(0), func(ctx context.Context) (any, error) {
			return nil, h.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
		})
		if err != nil {
			s.leave(sub)
			s.drop(uri, sub)
			sub.mu.Unlock()
			h.release()
			return nil, err
		}
		sub.on = h.cs
	}
	sub.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			defer h.release()
			sub.mu.Lock()
			defer sub.mu.Unlock()
			if s.leave(sub) && sub.on != nil {
				if !newProtocol(sub.on) {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					t0 := time.Now()
					err := sub.on.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
					// Counted in metrics as every request is; not toward
					// failureThreshold: the caller is gone and waits on
					// no answer.
					s.e.metrics.record(s.cfg().Name, "resources/unsubscribe", time.Since(t0), err)
				}
				// A 2026-07-28 subscription is a subscriptions/listen
				// request held open. It stays open for the connection's
				// life: a go-sdk v1.8 server, when any listen of a session
				// ends, drops that session's list_changed subscription
				// too, and the session would follow no more list changes.
				// The SDK subscribes a URI once, so a later subscribe
				// to it costs nothing.
				sub.on = nil
			}
			s.drop(uri, sub)
		})
	}, nil
}

// A subscription is a resource URI some callers follow, and the connection
// it was made on.
type subscription struct {
	// mu is held across the URI's round trips (subscribe, unsubscribe,
	// subscribe again on a new connection), so they reach the server in
	// the order they were decided.
	mu sync.Mutex
	on *mcp.ClientSession // under mu; nil when the server was not told
	n  int                // callers subscribed or subscribing, under the server's subsMu
}

// leave counts a caller out of sub (whose mu the caller holds) and
// reports whether none is left: then the server is to be unsubscribed. The
// URI's entry stays in the map until the caller drops it, after the
// unsubscribe: a caller that comes meanwhile finds it, counts itself in
// and waits on mu, then subscribes again. Were the entry gone, it would
// make one of its own and its subscribe could reach the server before
// the unsubscribe, which would undo it.
func (s *server) leave(sub *subscription) (last bool) {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	sub.n--
	return sub.n == 0
}

// drop removes uri's entry sub from the map unless a caller counted
// itself in since it was left (the caller holds sub.mu).
func (s *server) drop(uri string, sub *subscription) {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	if sub.n == 0 && s.subs[uri] == sub {
		delete(s.subs, uri)
	}
}

// restore makes the subscriptions of an earlier connection, and sets the
// log level set on it, on cs (over conn), a new one: after a restart or a
// reconnect the server knows nothing of them. A failure is logged: the
// server runs without them, as a watch could not tell it apart from a
// server that says nothing.
func (s *server) restore(ctx context.Context, cs *mcp.ClientSession, conn *captureConn) {
	ir := cs.InitializeResult()
	if ir == nil || ir.Capabilities == nil {
		return
	}
	s.subsMu.Lock()
	subs := maps.Clone(s.subs)
	s.subsMu.Unlock()
	for uri, sub := range subs {
		sub.mu.Lock()
		if sub.on != nil && sub.on != cs {
			ctx, cancel := context.WithTimeout(ctx, s.requestTimeout(0))
			err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
			cancel()
			if err != nil {
				s.log.Warn("could not subscribe again on a new connection", "uri", uri, "error", err.Error())
			} else {
				sub.on = cs
			}
		}
		sub.mu.Unlock()
	}
	s.levelMu.Lock()
	defer s.levelMu.Unlock()
	if s.logLevel == "" || ir.Capabilities.Logging == nil {
		return
	}
	err := setLevelOn(cs, conn, s.logLevel, func() error {
		ctx, cancel := context.WithTimeout(ctx, s.requestTimeout(0))
		defer cancel()
		return cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(s.logLevel)})
	})
	if err != nil {
		s.log.Warn("could not set the log level again on a new connection", "level", s.logLevel, "error", err.Error())
	}
}

// newProtocol says whether cs speaks 2026-07-28 or later: stateless
// requests, notifications over subscriptions/listen.
func newProtocol(cs *mcp.ClientSession) bool {
	ir := cs.InitializeResult()
	return ir != nil && ir.ProtocolVersion >= "2026-07-28"
}

// setLevelOn sets the log level of a connection: a server of 2026-07-28 or
// later takes it with each request (conn adds it), an older one is told
// with logging/setLevel, which send makes.
func setLevelOn(cs *mcp.ClientSession, conn *captureConn, level string, send func() error) error {
	if newProtocol(cs) {
		conn.logLevel.Store(level)
		return nil
	}
	return send()
}

// LogLevels are the levels of MCP logging, from most to least verbose.
var LogLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// SetLogLevel asks the ready servers that support logging (all, or those
// named) to send log messages at level and above. It returns the servers
// it was set on. A name that is not a server is an error.
func (e *Engine) SetLogLevel(ctx context.Context, level string, servers ...string) ([]string, error) {
	if !slices.Contains(LogLevels, level) {
		return nil, errorf(KindUsage, "", "unknown log level %q", level).hint("use one of: %s", strings.Join(LogLevels, ", "))
	}
	if err := e.open(); err != nil {
		return nil, err
	}
	if err := e.checkServers(servers); err != nil {
		return nil, err
	}
	var set []string
	for _, s := range e.all() {
		if len(servers) > 0 && !slices.Contains(servers, s.cfg().Name) {
			continue
		}
		h, err := s.ready(ctx)
		if ctx.Err() != nil {
			return set, deadlineError(ctx.Err(), s.cfg().Name, "setting the log level of server "+s.cfg().Name)
		}
		if err != nil || h.capabilities().Logging == nil {
			continue
		}
		s.levelMu.Lock()
		err = setLevelOn(h.cs, h.conn, level, func() error {
			_, err := h.do(ctx, "logging/setLevel", "setting the log level", h.s.requestTimeout(0), func(ctx context.Context) (any, error) {
				return nil, h.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(level)})
			})
			return err
		})
		if err == nil {
			s.logLevel = level
		}
		s.levelMu.Unlock()
		if err != nil {
			return set, deadlineError(err, s.cfg().Name, "setting the log level of server "+s.cfg().Name)
		}
		set = append(set, s.cfg().Name)
	}
	return set, nil
}

func closest(name string, known []string) string {
	if c := schemas.Closest(name, known); len(c) > 0 {
		return c[0]
	}
	return ""
}

// A WatchRequest is what a watch follows.
type WatchRequest struct {
	Filter EventFilter
	// Subscribe holds resource URIs to subscribe to for the life of the
	// watch, routed as reads are, or to SubscribeServer.
	Subscribe       []string
	SubscribeServer string
	// LogLevel, when set, is set on the watched servers that log.
	LogLevel string
}

// Watch follows events until ctx ends or fn returns an error (which Watch
// then returns). It first holds the subscriptions and sets the log level,
// then calls fn with an [EventReady] event, then with each event. A nil
// req follows every event, as a zero WatchRequest does. A server or an
// event type in req.Filter that does not exist is an error.
func (e *Engine) Watch(ctx context.Context, req *WatchRequest, fn func(Event) error) error {
	if req == nil {
		req = &WatchRequest{}
	}
	return e.WatchFrom(ctx, e.Events(req.Filter), req, fn)
}

// checkServers refuses a name that is not a server: what it asks of that
// server would silently not happen.
func (e *Engine) checkServers(names []string) error {
	for _, name := range names {
		if _, err := e.lookup(name); err != nil {
			return err
		}
	}
	return nil
}

// WatchFrom is [Engine.Watch] on a subscription taken earlier, so that a
// watch can begin with events from before it was set up, such as those of
// the servers' start (subscribe, [Engine.Start], then WatchFrom).
// req.Filter is not applied again. WatchFrom closes sub.
func (e *Engine) WatchFrom(ctx context.Context, sub *Subscription, req *WatchRequest, fn func(Event) error) error {
	if sub == nil {
		return errorf(KindUsage, "", "WatchFrom was called with a nil *Subscription").hint("take one with Engine.Events")
	}
	if fn == nil {
		sub.Close()
		return errorf(KindUsage, "", "Watch was called with a nil func(Event) error").hint("pass the function each event is handed to")
	}
	defer sub.Close()
	if req == nil {
		req = &WatchRequest{}
	}
	// A server or an event type that is not there would be watched in
	// silence.
	if err := e.checkServers(req.Filter.Servers); err != nil {
		return err
	}
	if err := CheckEventTypes(req.Filter.Types); err != nil {
		return err
	}
	for _, uri := range req.Subscribe {
		release, err := e.SubscribeResource(ctx, uri, req.SubscribeServer)
		if err != nil {
			return err
		}
		defer release()
	}
	if req.LogLevel != "" {
		if _, err := e.SetLogLevel(ctx, req.LogLevel, req.Filter.Servers...); err != nil {
			return err
		}
	}
	// Stamped with when the subscription began, not now: the events it
	// holds from before this line (a start's, without a session) are later.
	if err := fn(Event{Time: sub.since, Type: EventReady}); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-sub.C:
			if !ok {
				return nil
			}
			if err := fn(ev); err != nil {
				return err
			}
		}
	}
}
