package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server supervises one configured MCP server: its process, its client
// session, its state and the snapshot of what it offers.
type server struct {
	e   *Engine
	cfg *config.Server
	log *slog.Logger

	mu       sync.Mutex
	state    State
	since    time.Time
	readyAt  time.Time
	startup  time.Duration
	lastErr  *Error
	proc     *process
	cs       *mcp.ClientSession
	conn     *captureConn
	tools    []*Tool
	byName   map[string]*Tool
	info     *Impl
	protocol string
	initRaw  json.RawMessage // the initialize (or server/discover) result as sent
	// life ends when the server stops or dies; in-flight calls end with it.
	life    context.Context
	endLife context.CancelFunc
	// starting is closed when the current start attempt is over.
	starting    chan struct{}
	cancelStart context.CancelFunc

	rawMu    sync.Mutex
	rawTools map[string]json.RawMessage // tool objects as last seen on the wire
}

func newServer(e *Engine, cfg *config.Server) *server {
	return &server{
		e:        e,
		cfg:      cfg,
		log:      e.log.With("server", cfg.Name),
		state:    StateStopped,
		since:    time.Now(),
		rawTools: map[string]json.RawMessage{},
	}
}

// setState must be called with s.mu held.
func (s *server) setState(st State, cause *Error) {
	if s.state == st {
		return
	}
	from := s.state
	s.state, s.since = st, time.Now()
	if cause != nil {
		s.lastErr = cause
	}
	attrs := []any{"from", from, "to", st}
	if cause != nil {
		attrs = append(attrs, "error", cause.Message)
	}
	s.log.Info("server state", attrs...)
}

// start brings the server to ready. Concurrent callers share one attempt.
// Every failure is an [*Error].
func (s *server) start(ctx context.Context) error {
	s.mu.Lock()
	switch s.state {
	case StateReady, StateDegraded:
		s.mu.Unlock()
		return nil
	case StateStarting:
		ch := s.starting
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.state == StateReady || s.state == StateDegraded {
			return nil
		}
		return s.unavailableLocked()
	case StateStopping:
		s.mu.Unlock()
		return errorf(KindUnavailable, s.cfg.Name, "server %s is stopping", s.cfg.Name)
	}
	if s.e.closed.Load() {
		s.mu.Unlock()
		return errorf(KindUnavailable, s.cfg.Name, "server %s: the engine is closed", s.cfg.Name)
	}
	s.setState(StateStarting, nil)
	s.lastErr = nil
	s.starting = make(chan struct{})
	sctx, cancel := context.WithCancel(ctx)
	s.cancelStart = cancel
	s.mu.Unlock()

	t0 := time.Now()
	err := s.connect(sctx)
	cancel()

	s.mu.Lock()
	defer s.mu.Unlock()
	defer close(s.starting)
	s.cancelStart = nil
	if err != nil {
		var e *Error
		switch {
		case errors.As(err, &e):
		case ctx.Err() != nil:
			// The caller gave up; say so, but keep the cause.
			e = errorf(KindUnavailable, s.cfg.Name, "server %s: start interrupted", s.cfg.Name).wrap(err)
		case errors.Is(err, context.Canceled):
			e = errorf(KindUnavailable, s.cfg.Name, "server %s was stopped during startup", s.cfg.Name).wrap(err)
		default:
			e = errorf(KindUnavailable, s.cfg.Name, "server %s: %v", s.cfg.Name, err).wrap(err)
		}
		s.setState(StateUnavailable, e)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return e
	}
	if s.state != StateStarting {
		// It died between connecting and here; watch has said so.
		return s.unavailableLocked()
	}
	s.startup = time.Since(t0)
	s.readyAt = time.Now()
	s.setState(StateReady, nil)
	return nil
}

func (s *server) connect(ctx context.Context) error {
	cfg := s.cfg
	logPath := ""
	if s.e.opts.LogDir != "" {
		logPath = filepath.Join(s.e.opts.LogDir, cfg.Name+".log")
	}
	proc, err := startProcess(cfg, logPath, s.log)
	if err != nil {
		return err
	}
	stdout := newJSONLines(proc.stdout, func(line []byte, why string) {
		s.log.Warn("skipped a line on stdout", "why", why, "line", truncate(string(line), 200))
	})
	// jsonLines bounds lines itself.
	inner, err := (&mcp.IOTransport{Reader: stdout, Writer: proc.stdin, MaxLineLength: -1}).Connect(ctx)
	if err != nil {
		proc.stop(0, s.e.opts.ShutdownTimeout)
		return err
	}
	conn := newCaptureConn(inner)
	conn.abortWrite = proc.abortWrites
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpctl", Version: Version()}, &mcp.ClientOptions{
		Logger:       s.e.sdkLog.With("server", cfg.Name),
		Capabilities: &mcp.ClientCapabilities{},
		// mcpctl answers input requests itself, or reports them; the SDK's
		// automatic retries would hide them.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	sctx, cancel := context.WithTimeout(ctx, cfg.StartupTimeout)
	defer cancel()
	cctx, cp := withCapture(sctx)
	cs, err := client.Connect(cctx, connTransport{conn}, nil)
	conn.release(cp)
	if err == nil {
		err = s.refreshTools(sctx, cs, conn)
	}
	if err != nil {
		proc.stdin.Close()
		if cs != nil {
			cs.Close()
		}
		// Let an exiting process finish, so the error can say how it ended.
		waitDone(proc.done, 500*time.Millisecond)
		failure := s.startFailure(ctx, sctx, proc, err)
		proc.stop(0, s.e.opts.ShutdownTimeout)
		return failure
	}
	init, ok := cp.last("initialize")
	if !ok {
		init, _ = cp.last("server/discover")
	}
	life, endLife := context.WithCancel(context.Background())
	s.mu.Lock()
	s.proc, s.cs, s.conn = proc, cs, conn
	s.life, s.endLife = life, endLife
	s.initRaw = init.result
	if ir := cs.InitializeResult(); ir != nil {
		s.protocol = ir.ProtocolVersion
		if ir.ServerInfo != nil {
			s.info = &Impl{Name: ir.ServerInfo.Name, Version: ir.ServerInfo.Version}
		}
	}
	s.mu.Unlock()
	go s.watch(proc, cs)
	return nil
}

// startFailure explains why a start failed: the process exited, the
// startup timeout passed, or the handshake broke.
func (s *server) startFailure(ctx, sctx context.Context, proc *process, err error) error {
	name := s.cfg.Name
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var e *Error
	switch {
	case proc.exited():
		e = errorf(KindUnavailable, name, "server %s %s during startup", name, exitDescription(proc.exitErr))
		e.hint("check the server's command and arguments (%s)", s.cfg.Source)
	case sctx.Err() == context.DeadlineExceeded:
		e = errorf(KindUnavailable, name, "server %s did not finish starting within %s", name, s.cfg.StartupTimeout)
		e.hint("raise startupTimeout of server %s (%s) if it is just slow", name, s.cfg.Source)
	default:
		e = errorf(KindUnavailable, name, "server %s: MCP handshake failed: %v", name, err)
	}
	e.Stderr = proc.stderrTail(10)
	return e.wrap(err)
}

// refreshTools lists every page of the server's tools and swaps the snapshot.
func (s *server) refreshTools(ctx context.Context, cs *mcp.ClientSession, conn *captureConn) error {
	var tools []*Tool
	if ir := cs.InitializeResult(); ir != nil && ir.Capabilities != nil && ir.Capabilities.Tools != nil {
		cctx, cp := withCapture(ctx)
		defer conn.release(cp)
		var typed []*mcp.Tool
		for t, err := range cs.Tools(cctx, nil) {
			if err != nil {
				return err
			}
			typed = append(typed, t)
		}
		// The SDK may answer from its cache (2026-07-28 servers); then
		// the raw objects seen last time still hold.
		s.rawMu.Lock()
		for _, page := range cp.all("tools/list") {
			rememberItems(s.rawTools, page.result, "tools", "name")
		}
		for _, t := range typed {
			raw := s.rawTools[t.Name]
			if raw == nil {
				raw, _ = json.Marshal(t)
			}
			tool, err := newTool(s.cfg.Name, raw)
			if err != nil {
				s.log.Warn("ignoring a malformed tool", "error", err)
				continue
			}
			tools = append(tools, tool)
		}
		s.rawMu.Unlock()
	}
	byName := make(map[string]*Tool, len(tools))
	for _, t := range tools {
		byName[t.Tool] = t
	}
	s.mu.Lock()
	s.tools, s.byName = tools, byName
	s.mu.Unlock()
	return nil
}

// rememberItems files the raw objects of one list page (its field list, e.g.
// "tools") under their key field (e.g. "name").
func rememberItems(into map[string]json.RawMessage, page json.RawMessage, list, key string) {
	var p map[string]json.RawMessage
	var items []json.RawMessage
	if json.Unmarshal(page, &p) != nil || json.Unmarshal(p[list], &items) != nil {
		return
	}
	for _, raw := range items {
		var head map[string]json.RawMessage
		var k string
		if json.Unmarshal(raw, &head) == nil && json.Unmarshal(head[key], &k) == nil && k != "" {
			into[k] = append(json.RawMessage(nil), raw...)
		}
	}
}

// watch marks the server unavailable when its process ends or its
// connection breaks on their own, and stops what is left of it.
func (s *server) watch(proc *process, cs *mcp.ClientSession) {
	connDone := make(chan error, 1)
	go func() { connDone <- cs.Wait() }()
	var connErr error
	select {
	case <-proc.done:
	case connErr = <-connDone:
		// Give a dying process a moment, so the error says how it ended.
		waitDone(proc.done, 200*time.Millisecond)
	}
	stderr := proc.stderrTail(10)
	s.mu.Lock()
	if s.proc != proc || s.state == StateStopping || s.state == StateStopped {
		s.mu.Unlock()
		return
	}
	var e *Error
	if proc.exited() {
		e = errorf(KindUnavailable, s.cfg.Name, "server %s %s", s.cfg.Name, exitDescription(proc.exitErr))
	} else {
		e = errorf(KindUnavailable, s.cfg.Name, "lost the connection to server %s: %v", s.cfg.Name, connErr)
	}
	e.Stderr = stderr
	e.hint("restart the session to start it again: mcpctl down && mcpctl up")
	s.setState(StateUnavailable, e)
	s.endLife()
	s.mu.Unlock()
	proc.stdin.Close()
	cs.Close()
	proc.stop(0, s.e.opts.ShutdownTimeout)
}

// stop ends the server: in-flight calls are cancelled, stdin is closed, and
// the process is stopped as [process.stop] describes.
func (s *server) stop() {
	s.mu.Lock()
	if s.cancelStart != nil {
		s.cancelStart()
	}
	if s.state == StateStarting {
		ch := s.starting
		s.mu.Unlock()
		<-ch
		s.mu.Lock()
	}
	if s.state == StateStopped || s.proc == nil {
		if s.state != StateUnavailable {
			s.setState(StateStopped, nil)
		}
		s.mu.Unlock()
		return
	}
	s.setState(StateStopping, nil)
	proc, cs := s.proc, s.cs
	s.endLife()
	s.mu.Unlock()

	// Closing stdin first is the order the MCP spec asks for, and it wakes
	// a write blocked on a server that stopped reading; the SDK's Close
	// waits for such writes.
	proc.stdin.Close()
	cs.Close()
	proc.stop(s.e.opts.ShutdownGrace, s.e.opts.ShutdownTimeout)

	s.mu.Lock()
	s.proc, s.cs, s.conn = nil, nil, nil
	s.tools, s.byName = nil, nil
	s.setState(StateStopped, nil)
	s.mu.Unlock()
}

func (s *server) status() ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := ServerStatus{
		Name:            s.cfg.Name,
		State:           s.state,
		Since:           s.since,
		Tools:           len(s.tools),
		ServerInfo:      s.info,
		ProtocolVersion: s.protocol,
	}
	if s.proc != nil && !s.proc.exited() {
		st.PID = s.proc.cmd.Process.Pid
	}
	if s.state == StateReady || s.state == StateDegraded {
		t := s.readyAt
		st.ReadyAt = &t
		st.UptimeSeconds = roundMillis(time.Since(s.readyAt))
		st.StartupSeconds = roundMillis(s.startup)
	}
	if s.lastErr != nil && s.state != StateReady {
		st.LastError = s.lastErr.Message
	}
	return st
}

func roundMillis(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }

// unavailableLocked explains why the server cannot take requests.
func (s *server) unavailableLocked() *Error {
	if s.lastErr != nil && s.state == StateUnavailable {
		return s.lastErr
	}
	return errorf(KindUnavailable, s.cfg.Name, "server %s is %s", s.cfg.Name, s.state).
		hint("start it with: mcpctl up")
}

// call runs one tools/call and returns the raw result.
func (s *server) call(ctx context.Context, toolName string, req *CallRequest) (*CallResult, error) {
	s.mu.Lock()
	if s.state == StateStarting {
		s.mu.Unlock()
		if err := s.start(ctx); err != nil {
			return nil, err
		}
		s.mu.Lock()
	}
	if s.state != StateReady && s.state != StateDegraded {
		defer s.mu.Unlock()
		return nil, s.unavailableLocked()
	}
	tool := s.byName[toolName]
	known := make([]string, len(s.tools))
	for i, t := range s.tools {
		known[i] = t.Name()
	}
	cs, conn, life, proc := s.cs, s.conn, s.life, s.proc
	s.mu.Unlock()

	if tool == nil {
		return nil, unknownName("tool", s.cfg.Name+"."+toolName, s.cfg.Name, known)
	}
	args, err := buildArguments(tool, req.Arguments, req.Pairs)
	if err != nil {
		return nil, err
	}
	if err := tool.validate(args); err != nil {
		return nil, err
	}
	timeout := s.e.opts.RequestTimeout
	if req.TimeoutMs > 0 {
		timeout = time.Duration(req.TimeoutMs) * time.Millisecond
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stopOnEnd := context.AfterFunc(life, cancel)
	defer stopOnEnd()

	cctx, cp := withCapture(callCtx)
	defer conn.release(cp)
	params := &mcp.CallToolParams{Name: toolName, Arguments: args}
	params.SetProgressToken(s.e.nextToken())
	_, callErr := cs.CallTool(cctx, params)
	if raw, ok := cp.last("tools/call"); ok {
		// The server answered. The SDK may still have failed to decode the
		// answer (a content type it does not know): the raw bytes win.
		if raw.err != nil {
			return nil, protocolError(s.cfg.Name, "tools/call", raw.err)
		}
		var head struct {
			IsError    bool   `json:"isError"`
			ResultType string `json:"resultType"`
		}
		json.Unmarshal(raw.result, &head)
		if head.ResultType == "input_required" {
			return nil, errorf(KindProtocol, s.cfg.Name, "%s asked for input (resultType input_required), which mcpctl cannot provide yet", tool.Name())
		}
		return &CallResult{Server: s.cfg.Name, Tool: toolName, Result: raw.result, IsError: head.IsError}, nil
	}
	return nil, s.callError(ctx, callCtx, life, proc, tool, timeout, callErr)
}

func (s *server) callError(ctx, callCtx, life context.Context, proc *process, tool *Tool, timeout time.Duration, err error) error {
	name := s.cfg.Name
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var werr *jsonrpc.Error
	connLost := life.Err() != nil || errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || strings.Contains(err.Error(), "EOF")
	switch {
	case callCtx.Err() == context.DeadlineExceeded && life.Err() == nil:
		return errorf(KindTimeout, name, "%s did not answer within %s (the server was told to cancel)", tool.Name(), timeout).
			hint("give it longer with --timeout, e.g. --timeout %s", 2*timeout)
	case connLost:
		// The process may be on its way out; let it finish so the error
		// can say how it ended.
		waitDone(proc.done, 500*time.Millisecond)
		s.mu.Lock()
		stopped := s.state == StateStopping || s.state == StateStopped
		s.mu.Unlock()
		if stopped {
			return errorf(KindUnavailable, name, "server %s was stopped during the call to %s", name, tool.Name())
		}
		e := errorf(KindUnavailable, name, "server %s closed the connection during the call to %s", name, tool.Name())
		if proc.exited() {
			e.Message = fmt.Sprintf("server %s %s during the call to %s", name, exitDescription(proc.exitErr), tool.Name())
		}
		e.Stderr = proc.stderrTail(10)
		return e.hint("restart the session to start it again: mcpctl down && mcpctl up").wrap(err)
	case errors.As(err, &werr):
		return protocolError(name, "tools/call", werr)
	}
	return errorf(KindProtocol, name, "server %s: tools/call failed: %v", name, err).wrap(err)
}

func protocolError(server, method string, err error) *Error {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		return errorf(KindProtocol, server, "server %s answered %s with error %d: %s", server, method, werr.Code, werr.Message).wrap(err)
	}
	return errorf(KindProtocol, server, "server %s answered %s with an error: %v", server, method, err).wrap(err)
}
