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
// session, its state and the snapshot of its tools.
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
	s.setState(StateStarting, nil)
	s.lastErr = nil
	s.starting = make(chan struct{})
	ctx, cancel := context.WithCancel(ctx)
	s.cancelStart = cancel
	s.mu.Unlock()

	t0 := time.Now()
	err := s.connect(ctx)
	cancel()

	s.mu.Lock()
	defer s.mu.Unlock()
	defer close(s.starting)
	s.cancelStart = nil
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = errorf(KindUnavailable, s.cfg.Name, "server %s: %v", s.cfg.Name, err).wrap(err)
		}
		s.setState(StateUnavailable, e)
		return err
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
	stdout := newJSONLines(proc.stdout, func(line []byte) {
		s.log.Warn("skipped a line on stdout that is not JSON-RPC", "line", truncate(string(line), 200))
	})
	inner, err := (&mcp.IOTransport{Reader: stdout, Writer: proc.stdin}).Connect(ctx)
	if err != nil {
		proc.stop(0, s.e.opts.ShutdownTimeout)
		return err
	}
	conn := newCaptureConn(inner)
	conn.onToolsList = s.rememberTools
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpctl", Version: Version()}, &mcp.ClientOptions{
		Logger:       s.e.sdkLog.With("server", cfg.Name),
		Capabilities: &mcp.ClientCapabilities{},
	})
	sctx, cancel := context.WithTimeout(ctx, cfg.StartupTimeout)
	defer cancel()
	cs, err := client.Connect(sctx, connTransport{conn}, nil)
	if err == nil {
		err = s.refreshTools(sctx, cs)
	}
	if err != nil {
		if cs != nil {
			cs.Close()
		}
		// Let an exiting process finish, so the error can say how it ended.
		waitDone(proc.done, 500*time.Millisecond)
		failure := s.startFailure(ctx, sctx, proc, err)
		proc.stop(0, s.e.opts.ShutdownTimeout)
		return failure
	}
	life, endLife := context.WithCancel(context.Background())
	s.mu.Lock()
	s.proc, s.cs, s.conn = proc, cs, conn
	s.life, s.endLife = life, endLife
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
func (s *server) refreshTools(ctx context.Context, cs *mcp.ClientSession) error {
	var tools []*Tool
	if ir := cs.InitializeResult(); ir != nil && ir.Capabilities != nil && ir.Capabilities.Tools != nil {
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			s.rawMu.Lock()
			raw := s.rawTools[t.Name]
			s.rawMu.Unlock()
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

// rememberTools keeps the raw tool objects of a tools/list page.
func (s *server) rememberTools(result json.RawMessage) {
	var page struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(result, &page) != nil {
		return
	}
	s.rawMu.Lock()
	defer s.rawMu.Unlock()
	for _, raw := range page.Tools {
		var head struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &head) == nil && head.Name != "" {
			s.rawTools[head.Name] = append(json.RawMessage(nil), raw...)
		}
	}
}

// watch marks the server unavailable when its process ends on its own.
func (s *server) watch(proc *process, cs *mcp.ClientSession) {
	<-proc.done
	stderr := proc.stderrTail(10)
	s.mu.Lock()
	if s.proc != proc || s.state == StateStopping || s.state == StateStopped {
		s.mu.Unlock()
		return
	}
	e := errorf(KindUnavailable, s.cfg.Name, "server %s %s", s.cfg.Name, exitDescription(proc.exitErr))
	e.Stderr = stderr
	e.hint("restart the session to start it again: mcpctl down && mcpctl up")
	s.setState(StateUnavailable, e)
	s.endLife()
	s.mu.Unlock()
	cs.Close()
	proc.stop(0, s.e.opts.ShutdownTimeout)
}

// stop ends the server: in-flight calls are cancelled, then the process is
// stopped as [process.stop] describes.
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

	token := s.e.nextToken()
	conn.expect(token)
	params := &mcp.CallToolParams{Name: toolName, Arguments: args}
	params.SetProgressToken(token)
	_, callErr := cs.CallTool(callCtx, params)
	raw := conn.take(token)
	if raw.got {
		if raw.err != nil {
			return nil, protocolError(s.cfg.Name, "tools/call", raw.err)
		}
		var head struct {
			IsError bool `json:"isError"`
		}
		json.Unmarshal(raw.result, &head)
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
	case callCtx.Err() == context.DeadlineExceeded:
		return errorf(KindTimeout, name, "%s did not answer within %s (the server was told to cancel)", tool.Name(), timeout).
			hint("give it longer with --timeout, e.g. --timeout %s", 2*timeout)
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
