package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/internal/wsmcp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server supervises one configured MCP server: its process, its client
// session, its state and the snapshot of what it offers.
type server struct {
	e *Engine
	// predecessor, while a reload stops it, is the server this one
	// replaces: status shows it (stopping, its pid) until it is gone.
	predecessor atomic.Pointer[server]
	// unanswered counts the questions of the server nothing answered
	// (declined for want of an answerer): an answer got meanwhile is not
	// cached, its decline having been no one's.
	unanswered atomic.Int64
	// conf is swapped by a reload that changes only where the server is
	// written (its line), never what it runs.
	conf atomic.Pointer[config.Server]
	log  *slog.Logger

	mu      sync.Mutex
	state   State
	since   time.Time
	readyAt time.Time
	startup time.Duration
	lastErr *Error
	// editErr: why the last reload could not apply this server's edit
	// (a command not found): it runs on with its settings from before.
	editErr string
	proc    *process
	// launched is the process of a start under way (status shows its pid).
	launched *process
	// startFailedAt is when a start last failed.
	startFailedAt time.Time
	// winding, while set, is closed once watch has wound down a run that
	// is unavailable but not yet stopped (see watch).
	winding  chan struct{}
	cs       *mcp.ClientSession
	conn     *captureConn
	snap     *snapshot // what it offers; kept, marked stale, when it becomes unavailable
	offered  *snapshot // what it offered before a stop by hand cleared snap (see lastOffer)
	before   *snapshot // what the server a reload replaced offered, for publishChanges
	info     *Impl
	protocol string
	initRaw  json.RawMessage // the initialize (or server/discover) result as sent
	// probeUnanswered: a start's server/discover went unanswered (probe.go);
	// the server's later starts are spoken to in probeLegacyVersion at once,
	// as the spec suggests, for the engine's life. probeLate: it answered
	// after the stand-in, as a 2026-07-28 server: its starts wait for its
	// answer (the probe's late hook sets it).
	probeUnanswered, probeLate atomic.Bool
	// life ends when the server stops or dies; in-flight calls end with it.
	life    context.Context
	endLife context.CancelFunc
	// starting is closed when the current start attempt is over.
	starting    chan struct{}
	cancelStart context.CancelFunc
	// restartTurn is held by the Restart under way: restarts of one
	// server by hand take turns, each stop and start whole.
	restartTurn chan struct{}

	refreshMu sync.Mutex // one list refresh at a time
	rawItems  map[string]map[string]json.RawMessage
	// refreshing counts refreshes announced by list_changed and not done;
	// settled is closed when it drops to zero. Listings wait for it, so a
	// change the server announced is not answered with the old list.
	refreshing int
	settled    chan struct{}
	queued     map[refreshKey]bool // refreshes queued, not yet begun
	client     *mcp.Client         // of the current run, for its roots

	// What callers asked of the server's connection, made again on each
	// new one (see restore).
	subs     *subscriptions // shared with the server a reload replaces it by
	levels   *levelHolds    // the same
	levelMu  sync.Mutex     // held across setting the level, so settings stay in order
	logLevel string         // set by SetLogLevel, under levelMu

	askers      askers // requests in flight whose callers answer questions
	requests    inFlight
	elicitWaits elicitationWaits

	lc lifecycle // guarded by mu
}

func newServer(e *Engine, cfg *config.Server) *server {
	s := &server{
		e:           e,
		log:         e.log.With("server", cfg.Name),
		state:       StateStopped,
		since:       time.Now(),
		rawItems:    map[string]map[string]json.RawMessage{},
		subs:        &subscriptions{m: map[string]*subscription{}},
		levels:      &levelHolds{n: map[string]int{}},
		restartTurn: make(chan struct{}, 1),
	}
	s.conf.Store(cfg)
	return s
}

// cfg is the server's config.
func (s *server) cfg() *config.Server { return s.conf.Load() }

// setState must be called with s.mu held.
func (s *server) setState(st State, cause *Error) { s.setStateNote(st, cause, "") }

// setStateNote changes the state with a note on why or what comes next
// (the event's message), e.g. "restart 1 of 3 in 1s".
func (s *server) setStateNote(st State, cause *Error, note string) {
	if s.state == st && (cause == nil || cause == s.lastErr || s.lastErr != nil && cause.Message == s.lastErr.Message) && note == "" {
		// No news: the same error again (each start of a chain tells a
		// dependent why it did not start). Its details (stderr, hints)
		// may be newer: they are kept.
		if cause != nil {
			s.lastErr = cause
		}
		return
	}
	from := s.state
	if s.state != st {
		s.since = time.Now()
	}
	s.state = st
	if cause != nil {
		s.lastErr = cause
	}
	attrs := []any{"from", from, "to", st}
	ev := Event{Type: EventState, Server: s.cfg().Name, From: from, To: st, Message: note}
	if cause != nil {
		attrs = append(attrs, "error", cause.Message)
		ev.Error = cause.Message
	}
	if note != "" {
		attrs = append(attrs, "note", note)
	}
	// A server down with a cause is an error, one degraded a warning:
	// logs --jq 'select(.level == "ERROR")' finds what failed.
	level := slog.LevelInfo
	switch {
	case st == StateUnavailable && cause != nil:
		level = slog.LevelError
	case st == StateDegraded:
		level = slog.LevelWarn
	}
	s.log.Log(context.Background(), level, "server state", attrs...)
	s.e.bus.publish(ev)
}

// tellDisabled publishes that an edit disabled s, or enabled it, which no
// change of s.state tells: stopped it is, and stays, and status shows it
// as disabled, or no longer. before is what status shows of the server s
// replaced, now stopped (or unavailable: a start that failed).
func (s *server) tellDisabled(before State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != StateStopped {
		return // started meanwhile (on use): its own events say so
	}
	now := StateStopped
	if s.cfg().Disabled {
		now = StateDisabled
	}
	if (before == StateDisabled) == (now == StateDisabled) {
		return
	}
	s.log.Info("server state", "from", before, "to", now)
	s.e.bus.publish(Event{Type: EventState, Server: s.cfg().Name, From: before, To: now})
}

// awaitLocked waits for ch with s.mu released, and holds it again after;
// when ctx ends first it returns ctx's error, s.mu released.
func (s *server) awaitLocked(ctx context.Context, ch <-chan struct{}) error {
	s.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	return nil
}

// start brings the server to ready. Concurrent callers share one attempt.
// Every failure is an [*Error].
func (s *server) start(ctx context.Context) error {
	s.mu.Lock()
	for s.winding != nil {
		if err := s.awaitLocked(ctx, s.winding); err != nil {
			return err
		}
	}
	for bg := s.lc.bgStop; bg != nil; bg = s.lc.bgStop {
		// The run stopped after too many failures is still on its way
		// out (SIGTERM ignored, say): two of a server must not run at
		// once, holding one lock, port or database.
		if err := s.awaitLocked(ctx, bg); err != nil {
			return err
		}
		if s.lc.bgStop == bg {
			s.lc.bgStop = nil
		}
	}
	switch s.state {
	case StateReady, StateDegraded:
		s.mu.Unlock()
		return nil
	case StateStarting:
		ch := s.starting
		if err := s.awaitLocked(ctx, ch); err != nil {
			return err
		}
		if s.state == StateStarting && s.starting != ch {
			// Another start took over (a restart by hand): wait for it.
			s.mu.Unlock()
			return s.start(ctx)
		}
		defer s.mu.Unlock()
		if s.state == StateReady || s.state == StateDegraded {
			return nil
		}
		return s.unavailableLocked()
	case StateStopping:
		s.mu.Unlock()
		return errorf(KindUnavailable, s.cfg().Name, "server %s is stopping", s.cfg().Name)
	}
	if s.e.closed.Load() || s.lc.retired {
		s.mu.Unlock()
		return errorf(KindUnavailable, s.cfg().Name, "server %s: the engine is closed, or the config no longer has it", s.cfg().Name)
	}
	if s.lc.held {
		err := s.unavailableLocked()
		s.mu.Unlock()
		return err
	}
	if s.lc.restartTimer != nil {
		// Started by hand before the policy's restart came due.
		s.cancelRestartLocked()
	}
	s.setState(StateStarting, nil)
	s.lastErr = nil
	s.launched = nil
	// A start after a stop for want of use (transient, idleTimeout) is
	// the server's way of working, not a restart to count.
	afterIdle := s.lc.idled
	s.lc.idled, s.lc.failures = false, 0
	starting := make(chan struct{})
	s.starting = starting
	sctx, cancel := context.WithCancel(ctx)
	s.cancelStart = cancel
	s.mu.Unlock()

	t0 := time.Now()
	err := s.connect(sctx)
	for try := 1; err != nil && try < retryTries && transientStart(err) && sctx.Err() == nil; try++ {
		s.log.Info("retrying the start", "try", try+1, "of", retryTries, "error", err.Error())
		select {
		case <-time.After(backoff(try - 1)):
			err = s.connect(sctx)
		case <-sctx.Done():
		}
	}
	cancel()

	s.mu.Lock()
	defer s.mu.Unlock()
	defer close(starting)
	if s.starting != starting {
		// The server died as it became ready, and another start began
		// since (a restart by hand): the state is that start's.
		if err == nil {
			err = context.Canceled
		}
		return errorf(KindUnavailable, s.cfg().Name, "server %s was started again during its startup", s.cfg().Name).wrap(err)
	}
	s.cancelStart = nil
	if err != nil {
		var e *Error
		switch {
		case errors.As(err, &e):
		case ctx.Err() != nil:
			// The caller gave up; say so, but keep the cause.
			e = errorf(KindUnavailable, s.cfg().Name, "server %s: start interrupted", s.cfg().Name).wrap(err)
			var cut startCutBy
			if errors.As(context.Cause(ctx), &cut) {
				e.Message = fmt.Sprintf("server %s: start called off, as %s", s.cfg().Name, cut)
				e.calledOff = true
			}
		case errors.Is(err, context.Canceled):
			e = errorf(KindUnavailable, s.cfg().Name, "server %s was stopped during startup", s.cfg().Name).wrap(err)
		default:
			e = errorf(KindUnavailable, s.cfg().Name, "server %s: %s", s.cfg().Name, s.said(err)).wrap(err)
		}
		s.setState(StateUnavailable, e)
		s.startFailedAt = time.Now()
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
	if !afterIdle {
		s.e.metrics.ready(s.cfg().Name)
	}
	s.setState(StateReady, nil)
	if s.cfg().Activation != "transient" {
		// A transient server stops when its request releases it; stopping
		// it now could beat that request to it.
		s.armIdleLocked()
	}
	if iv := s.cfg().HealthInterval; iv > 0 {
		go s.healthCheck(&handle{s: s, cs: s.cs, conn: s.conn, life: s.life, proc: s.proc, snap: s.snap}, iv)
	}
	return nil
}

func (s *server) connect(ctx context.Context) error {
	cfg := s.cfg()
	conn := newCaptureConn(nil)
	conn.onProgress = func(token any, p Progress) { s.e.progress(cfg.Name, token, p) }
	// life ends when this run of the server does; in-flight calls end with it.
	life, endLife := context.WithCancel(context.Background())
	var proc *process
	var sc *stdioConn
	if cfg.IsStdio() {
		logPath := ""
		if s.e.opts.LogDir != "" {
			logPath = filepath.Join(s.e.opts.LogDir, cfg.Name+".log")
		}
		var err error
		proc, err = startProcess(cfg, logPath, s.log, s.e.opts.OnProcess, func(line string) {
			if s.e.bus.wantsStderr() {
				s.e.bus.publish(Event{Type: EventStderr, Server: cfg.Name, Line: line})
			}
		})
		if err != nil {
			endLife()
			return err
		}
		s.mu.Lock()
		s.launched = proc
		s.mu.Unlock()
		logSkipped := s.skippedLineLogger()
		stdout := newJSONLines(proc.stdout, func(line []byte, why string) {
			// Kept for the errors of a failed start and of a request
			// that timed out while they came: raw, and redacted (on
			// more than it shows, so that a secret across its cut is
			// hidden) only when read, as this runs for every line.
			proc.stdoutTail.addRaw(line)
			logSkipped(line, why)
		})
		stdout.exited = proc.done
		proc.lines = stdout
		sc = newStdioConn(stdout, proc.stdin)
		sc.probeOff = s.probeLate.Load() || cfg.ProtocolVersion != "" // a pinned version is the user's word
		sc.probe.gaveUp = func() {
			s.probeUnanswered.Store(true)
			s.log.Warn("the server did not answer server/discover: speaking "+probeLegacyVersion+" with it from now on",
				"hint", fmt.Sprintf("set its protocolVersion (%s) to %s to skip the wait", cfg.Source, probeLegacyVersion))
		}
		sc.probe.late = func() {
			// A 2026-07-28 server, only slow. A start it refused is made
			// again (below); one it took runs on as it was.
			s.probeLate.Store(true)
			s.probeUnanswered.Store(false)
			s.log.Warn("the server answered server/discover after mcpctl stood in for it: its starts wait for its answer from now on",
				"hint", fmt.Sprintf("set its protocolVersion (%s) to 2026-07-28, so that no start stands in for it", cfg.Source))
		}
		conn.Connection = sc
	}
	if s.e.opts.Trace && s.e.opts.LogDir != "" {
		// A stdio server's start makes the directory, for its stderr; a
		// remote one writes none, and its trace went nowhere, unsaid.
		path := filepath.Join(s.e.opts.LogDir, cfg.Name+".wire.jsonl")
		f, err := openLog(path) // a file of ours, never through a symlink
		if errors.Is(err, fs.ErrNotExist) && os.MkdirAll(s.e.opts.LogDir, 0o700) == nil {
			f, err = openLog(path)
		}
		if err != nil {
			s.log.Warn("cannot write the wire trace (MCPCTL_TRACE)", "error", err.Error(),
				"hint", "make "+s.e.opts.LogDir+" writable, or unset MCPCTL_TRACE")
		} else {
			conn.trace = f
			go func() { <-life.Done(); f.Close() }()
		}
	}
	client := s.newClient()
	sctx, cancel := context.WithTimeout(ctx, s.startupTimeout())
	defer cancel()
	var sessOpts *mcp.ClientSessionOptions
	switch {
	case cfg.ProtocolVersion != "":
		sessOpts = &mcp.ClientSessionOptions{ProtocolVersion: cfg.ProtocolVersion}
	case s.probeUnanswered.Load():
		sessOpts = &mcp.ClientSessionOptions{ProtocolVersion: probeLegacyVersion}
	}
	var cs *mcp.ClientSession
	var cp *capture
	var err error
	if cfg.Type == "ws" {
		// A WebSocket connection is mcpctl's own: it is wrapped as stdio
		// is. Dialling with sctx bounds the handshake only.
		var inner mcp.Connection
		var base *http.Transport
		if base, err = httpTransport(cfg); err == nil {
			inner, err = (&wsmcp.ClientTransport{URL: cfg.URL, Header: httpHeader(cfg.Headers), HTTPClient: &http.Client{Transport: base}, Logger: s.log}).Connect(sctx)
			conn.Connection = inner
		}
	}
	if proc != nil || (cfg.Type == "ws" && err == nil) {
		var cctx context.Context
		cctx, cp = withCapture(sctx)
		cs, err = client.Connect(cctx, connTransport{conn}, sessOpts)
	} else if cfg.Type != "ws" {
		// The SSE transport ties its event stream to the connect context:
		// give it the connection's life, and let the startup timeout end
		// that life if the handshake overruns.
		abort, abortHTTP := context.WithCancel(context.Background())
		conn.abortHTTP = abortHTTP
		overrun := context.AfterFunc(sctx, func() {
			endLife()
			abortHTTP() // the SDK's cancellation and DELETE would wait 5 s each
		})
		defer overrun()
		var cctx context.Context
		cctx, cp = withCapture(life)
		cs, err = s.connectRemote(cctx, abort, client, conn, sessOpts)
	}
	if cp != nil {
		conn.release(cp)
	}
	var snap *snapshot
	if err == nil {
		// A refresh of the last connection may still be running.
		s.refreshMu.Lock()
		base, only := &snapshot{}, []string(nil)
		if s.e.opts.LazyLists {
			base.unlisted, only = []string{listPrompts, listResources}, []string{listTools}
		}
		snap, err = s.list(sctx, cs, conn, base, only...)
		s.refreshMu.Unlock()
	}
	if err != nil {
		// A server still writing to its stdout dies of SIGPIPE once it is
		// closed (by the SDK, when initialize fails, or below): an exit
		// after the startup deadline is mcpctl's doing, not a crash.
		deadline, _ := sctx.Deadline()
		timedOut := sctx.Err() == context.DeadlineExceeded && !proc.exitedBefore(deadline)
		var saidBefore []string
		if timedOut {
			// What it writes once its pipes are closed (Node's EPIPE
			// stack trace) is mcpctl's doing, not why it was slow.
			saidBefore = proc.stderrTailBefore(10, deadline)
		}
		proc.closeStdin()
		if cs != nil {
			cs.Close()
		}
		endLife()
		// Let an exiting process finish, so the error can say how it ended.
		proc.awaitExit(500 * time.Millisecond)
		proc.awaitStdout(250 * time.Millisecond)
		failure := s.startFailure(ctx, sctx, proc, err, timedOut, proc == nil && !conn.httpAnswered.Load())
		if e := (*Error)(nil); timedOut && errors.As(failure, &e) && e.startTimedOut {
			e.Stderr = saidBefore
		}
		grace := time.Duration(0)
		if ctx.Err() != nil {
			// Not a failure: a start cut short (the engine closing, a
			// one-shot watch whose reader went) ends as a stop does, a
			// server at work on its end of input given its time.
			grace = s.e.opts.ShutdownGrace
		}
		proc.stop(grace, s.shutdownTimeout())
		if sc != nil && sc.probe.answeredLate() {
			// It refused the initialize that followed the stand-in, as
			// a 2026-07-28 server does: made again, waiting for its
			// answer (the start's retry; probeLate is set, so once).
			var e *Error
			if errors.As(failure, &e) {
				e.transient = true
			}
		}
		return failure
	}
	init, ok := cp.last("initialize")
	if !ok {
		init, _ = cp.last("server/discover")
	}
	// A restart or a reconnect is a new connection: the server knows
	// nothing of the subscriptions and the log level set on the last one.
	// They are made again before anyone else uses it.
	s.restore(sctx, cs, conn)
	if len(cfg.Roots) > 0 {
		conn.awaitRoots(sctx, rootsWait, rootsSettle)
	}
	s.mu.Lock()
	s.proc, s.cs, s.conn, s.client = proc, cs, conn, client
	s.lc.streamLost = false
	s.life, s.endLife = life, endLife
	prev := cmp.Or(s.snap, s.offered, s.before)
	s.before = nil
	s.snap = snap
	s.initRaw = init.result
	if ir := cs.InitializeResult(); ir != nil {
		s.protocol = ir.ProtocolVersion
		if ir.ServerInfo != nil {
			s.info = &Impl{Name: ir.ServerInfo.Name, Version: ir.ServerInfo.Version}
		}
	}
	s.mu.Unlock()
	s.publishChanges(prev, snap)
	go s.watch(proc, cs)
	return nil
}

// publishChanges tells the lists a start changed from what the server
// offered before it (a restart, a reload's new filters), as a server's
// list_changed is told: a watcher following them must not go stale.
func (s *server) publishChanges(prev, sn *snapshot) {
	if prev == nil || sn == nil {
		return // a first start changes nothing anyone saw
	}
	for _, list := range []string{listTools, listPrompts, listResources} {
		if slices.Contains(prev.unlisted, list) || slices.Contains(sn.unlisted, list) {
			continue // not listed on one side: nothing to compare
		}
		if added, removed := diff(prev.names(list), sn.names(list)); len(added)+len(removed) > 0 {
			s.log.Info("list changed across a start", "list", list, "added", len(added), "removed", len(removed))
			s.e.bus.publish(Event{Type: EventListChanged, Server: s.cfg().Name, List: list, Added: added, Removed: removed})
		}
	}
}

// startFailure explains why a start failed: the process exited, the
// startup timeout passed, or the handshake broke. timedOut: the timeout
// passed while the process still ran, so how it ended after is no news.
func (s *server) startFailure(ctx, sctx context.Context, proc *process, err error, timedOut, unanswered bool) error {
	name := s.cfg().Name
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var e *Error
	var already *Error
	var paging *pagingError
	switch {
	case errors.As(err, &paging):
		e = errorf(KindProtocol, name, "%s", paging.msg)
		e.hint("its pagination is broken: tell its authors")
	case err != nil && strings.Contains(err.Error(), "unsupported protocol version"):
		// The SDK hung up on it: the process's exit that follows is ours.
		e = errorf(KindProtocol, name, "server %s answered initialize with a protocol version mcpctl does not speak (%s); it speaks %s",
			name, strings.TrimPrefix(err.Error(), "unsupported protocol version: "), strings.Join(mcp.SupportedProtocolVersions(), ", "))
		e.hint("update the server, or set protocolVersion of server %s to a version both speak (%s)", name, s.cfg().Source)
	case proc == nil && sctx.Err() == context.DeadlineExceeded && unanswered:
		// Not slow: nothing answered at all (a dropped connection, a
		// wrong address behind a firewall, a port that takes connections
		// and says nothing).
		e = errorf(KindUnavailable, name, "server %s (%s) gave no HTTP answer within %s", name, s.cfg().Redact(s.cfg().URL), s.startupTimeout())
		e.startTimedOut = true
		e.hint("check that the server runs at that address, and that nothing between drops the connection (%s)", s.cfg().Source)
	case proc == nil && sctx.Err() == context.DeadlineExceeded:
		e = errorf(KindUnavailable, name, "server %s (%s) did not finish starting within %s", name, s.cfg().Redact(s.cfg().URL), s.startupTimeout())
		e.startTimedOut = true
		e.hint("raise %s of server %s (%s) if it is just slow", s.cfg().FieldName("startupTimeout"), name, s.cfg().Source)
	case proc == nil && errors.As(err, &already):
		return already
	case proc == nil:
		return remoteFailure(s.cfg(), err)
	case proc != nil && !timedOut && answerBroke(err):
		// It answered, and its answer (an error, or one that does not
		// decode) ended the start: how its process then ended (its
		// stdin was closed) is beside the point.
		e = errorf(KindProtocol, name, "server %s failed during startup: %s", name, err)
		e.hint("the server does not work with mcpctl as it is: check its version, or tell its authors (its stderr may say more)")
	case proc.exited() && !timedOut:
		e = s.exitError(proc, "startup")
		if n := proc.skippedLines(); n > 0 {
			e.Message += "; " + skippedNote(n)
		}
		e.hint("check the server's command and arguments (%s)", s.cfg().Source)
		e.transient = proc.killedBySignal()
	case sctx.Err() == context.DeadlineExceeded:
		e = errorf(KindUnavailable, name, "server %s did not finish starting within %s", name, s.startupTimeout())
		e.startTimedOut = true
		if n := proc.skippedLines(); n > 0 {
			e.Message += "; " + skippedNote(n)
			e.hint("an MCP server writes only JSON-RPC messages to stdout: check that server %s's command starts an MCP server over stdio (%s)", name, s.cfg().Source)
		}
		if l := s.cfg().Limits; l.Memory > 0 {
			// Node, for one, hangs at start rather than exit when it
			// cannot have the memory it needs (below some 48 MiB).
			e.hint("it runs with a memory limit of %s (limits.memory, %s), which may be too small for it to start: a process short of memory can hang instead of exiting", sizeText(l.Memory), s.cfg().Where("limits"))
		}
		e.hint("raise %s of server %s (%s) if it is just slow", s.cfg().FieldName("startupTimeout"), name, s.cfg().Source)
	default:
		e = errorf(KindUnavailable, name, "server %s: MCP handshake failed: %s", name, s.said(err))
	}
	if le := (*listError)(nil); e.startTimedOut && errors.As(err, &le) {
		// It answered initialize: not slow to start, stuck on a list.
		e.Message += fmt.Sprintf("; it answered initialize, but not %s", le.method)
	}
	e.Stderr = proc.stderrTail(10)
	if proc != nil {
		e.Stdout = proc.stdoutTail.last(10)
	}
	if e.startTimedOut {
		// Its startupTimeout's deadline, not the caller's (see the
		// package doc), as through a session.
		return notCallers(e.wrap(err))
	}
	return e.wrap(err)
}

// answerBroke tells an error that is a server's answer: a JSON-RPC error,
// or a result that does not decode.
func answerBroke(err error) bool {
	var rpcErr *jsonrpc.Error
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	return errors.As(err, &rpcErr) || errors.As(err, &typeErr) || errors.As(err, &syntaxErr)
}

// exitError is the error of a server whose process ended, during what
// ("" between requests): how it ended, and, for a crash under a memory
// limit without a word of memory (see crashedUnderMemoryLimit), a hint
// that the limit may still be why.
func (s *server) exitError(proc *process, during string) *Error {
	name := s.cfg().Name
	reason := proc.exitReason()
	e := errorf(KindUnavailable, name, "server %s %s", name, reason)
	if during != "" {
		e.Message += " during " + during
	}
	if proc.crashedUnderMemoryLimit(reason) {
		e.hint("it ran with a memory limit of %s (limits.memory, %s): a process short of memory can crash without saying so; raise the limit to rule it out",
			sizeText(proc.limits.Memory), s.cfg().Where("limits"))
	}
	return e
}

// watch marks the server unavailable when its process ends or its
// connection breaks on their own, and stops what is left of it.
func (s *server) watch(proc *process, cs *mcp.ClientSession) {
	connDone := make(chan error, 1)
	go func() { connDone <- cs.Wait() }()
	var connErr error
	var procDone <-chan struct{} // nil for a remote server: never
	if proc != nil {
		procDone = proc.done
	}
	select {
	case <-procDone:
	case connErr = <-connDone:
		// Give a dying process a moment, so the error says how it ended.
		if proc != nil && !waitDone(proc.done, 200*time.Millisecond) && proc.lines != nil && proc.lines.eof.Load() {
			// Its stdout closed and it lives on, or takes its time to go
			// (npx's parents can take seconds): nothing more can come
			// from it, so it is unavailable now, and requests are refused
			// rather than sent to it; how it ended is said once it has.
			s.mu.Lock()
			if s.cs == cs && (s.state == StateReady || s.state == StateDegraded) {
				name := s.cfg().Name
				s.setState(StateUnavailable, errorf(KindUnavailable, name, "server %s closed its stdout", name))
				// A start waits for this run to be wound down: it would
				// take the server's process and connection from under it.
				winding := make(chan struct{})
				s.winding = winding
				defer func() {
					s.mu.Lock()
					if s.winding == winding {
						s.winding = nil
					}
					s.mu.Unlock()
					close(winding)
				}()
			}
			s.mu.Unlock()
			proc.awaitExit(0) // up to 5 s, its stdout being closed
		}
	}
	if proc == nil && errors.Is(connErr, mcp.ErrSessionMissing) {
		s.renew(cs)
		return
	}
	stderr := proc.stderrTail(10)
	s.mu.Lock()
	if s.cs != cs || s.state == StateStopping || s.state == StateStopped {
		s.mu.Unlock()
		return
	}
	var e *Error
	switch {
	case proc.exited():
		e = s.exitError(proc, "")
	case s.state == StateUnavailable && s.lastErr != nil:
		// Said already, better than the connection's end can say it:
		// "closed its stdout", "no longer reads its stdin".
		e = errorf(KindUnavailable, s.cfg().Name, "%s", s.lastErr.Message)
	default:
		e = s.lostError(connErr)
	}
	e.Stderr = stderr
	if s.cfg().Activation == "transient" {
		e.hint("the next request starts it again (activation: transient)")
	} else {
		e.hint("start it again with: mcpctl restart %s", s.cfg().Name)
	}
	s.endLife()
	s.failLocked(e)
	s.mu.Unlock()
	s.shutdown(proc, cs, nil, 0) // its connection ended: nothing more can be sent
}

// lostError is the error of a remote server's connection that ended by
// itself: closed (err nil), refused for its authorization (the token
// changed or expired on the server's side), or lost.
func (s *server) lostError(err error) *Error {
	name := s.cfg().Name
	switch {
	case err == nil:
		return errorf(KindUnavailable, name, "server %s closed the connection", name)
	case strings.Contains(err.Error(), "Unauthorized"):
		if _, ok := s.cfg().SendsAuthorization(); ok {
			return errorf(KindAuth, name, "server %s now refuses the Authorization header it is sent: %s", name, s.said(err)).
				hint("check the token in it, and the variable or input it comes from")
		}
		return authNeeded(name, "it answered 401")
	}
	return errorf(KindUnavailable, name, "lost the connection to server %s: %s", name, s.said(err))
}

// said is err's text with the server's secrets redacted: the SDK's and
// net/http's errors quote the URL, whose query may hold a token.
func (s *server) said(err error) string { return s.cfg().Redact(withoutSessionID(err.Error())) }

// sessionIDSaid is how the SDK's errors name a streamable HTTP session.
var sessionIDSaid = regexp.MustCompile(` ?\(session ID: [^)]*\)`)

// withoutSessionID is text without the session ids the SDK's errors give:
// an MCP session id lets whoever holds it act in the session, and is no
// business of a status, a log or an error.
func withoutSessionID(text string) string {
	if !strings.Contains(text, "(session ID: ") {
		return text
	}
	return sessionIDSaid.ReplaceAllString(text, "")
}

// cancelFlushWait bounds the writes of the notifications/cancelled owed as
// a server stops: one that does not read its stdin is not waited for.
const cancelFlushWait = 100 * time.Millisecond

// shutdown ends one run of the server: its connection, then its process
// (for a stdio server) as [process.stop] describes. Closing stdin first is
// the order the MCP spec asks for, and it wakes a write blocked on a
// server that stopped reading; the SDK's Close waits for such writes.
func (s *server) shutdown(proc *process, cs *mcp.ClientSession, conn *captureConn, grace time.Duration) {
	// A call given up on just before (Ctrl-C, a timeout of a command
	// without a session) is told so first: the SDK tells it from a
	// goroutine that may not have run yet.
	switch {
	case proc != nil || conn != nil && conn.Connection != nil:
		conn.flushCancels(cancelFlushWait)
	case conn != nil && cs != nil:
		// Over HTTP the SDK's notice is its to send: it is given the
		// time a remote close has.
		conn.awaitTold(min(remoteCloseWait, s.shutdownTimeout()))
	}
	if proc == nil && cs != nil {
		s.closeRemote(cs, conn)
		return
	}
	proc.closeStdin()
	s.closeSession(cs)
	if proc.stop(grace, s.shutdownTimeout()) {
		// Else the stop's time (its shutdownTimeout) goes unexplained.
		s.log.Warn("the server did not exit within its shutdownTimeout of SIGTERM: killed (SIGKILL)", "shutdownTimeout", s.shutdownTimeout().String())
	}
}

// closeSession closes a stdio server's connection. The SDK waits for the
// handlers of the server's requests in flight: one that does not watch
// its ctx (a sampling or elicitation hook waiting on a person) would hold
// the stop, and the server, as long as it waits. Past closeWait it is
// left to end in the background.
func (s *server) closeSession(cs *mcp.ClientSession) {
	if _, ok := closeWithin(cs, min(closeWait, s.shutdownTimeout())); !ok {
		s.log.Info("stopping the server without waiting for its connection to close: a handler of a request it made is still at work")
	}
}

// closeWithin closes cs, waiting for that at most d; ok says it closed
// within it, and closed is closed when it does.
func closeWithin(cs *mcp.ClientSession, d time.Duration) (closed <-chan struct{}, ok bool) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		cs.Close()
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return done, true
	case <-t.C:
		return done, false
	}
}

// closeWait bounds how long a stdio server's connection is waited for as
// it closes.
const closeWait = time.Second

// remoteCloseWait bounds how long a remote server's connection is waited
// for as it closes (shutdownTimeout if shorter): the SDK sends the
// notifications/cancelled owed and a DELETE that ends the server's
// session, each given 5 s, which a server that stopped answering takes
// whole (down, and a one-shot command after its --timeout or Ctrl-C, took
// 5–10 s). Both are courtesies: past the wait they are given up.
var remoteCloseWait = time.Second // a var for tests

func (s *server) closeRemote(cs *mcp.ClientSession, conn *captureConn) {
	wait := min(remoteCloseWait, s.shutdownTimeout())
	if closed, ok := closeWithin(cs, wait); !ok {
		if conn == nil || conn.abortHTTP == nil {
			s.log.Info("left the connection to close in the background: the server did not answer its end in time", "waited", wait.String())
			return
		}
		s.log.Info("gave up the connection's end: the server did not answer it in time", "waited", wait.String())
		conn.abortHTTP()
		// What may still hold the close is a handler of a request the
		// server made that does not watch its ctx (see closeSession).
		t := time.NewTimer(closeWait)
		defer t.Stop()
		select {
		case <-closed:
		case <-t.C:
			s.log.Info("left the connection to close in the background: a handler of a request the server made is still at work")
		}
	}
	if conn != nil && conn.closeIdle != nil {
		conn.closeIdle()
	}
}

// stop ends the server: in-flight calls are cancelled, stdin is closed, and
// the process is stopped as [process.stop] describes.
func (s *server) stop() { s.stopWhen(nil, "") }

// stopWhen stops the server if it is running and cond, checked under the
// lock right before, agrees: a request that begins meanwhile keeps the
// server running. Such a conditional stop (the server is idle) keeps what
// the server offers for listings. why is said in the state events.
func (s *server) stopWhen(cond func() bool, why string) {
	s.mu.Lock()
	if cond != nil && ((s.state != StateReady && s.state != StateDegraded) || !cond()) {
		s.mu.Unlock()
		return
	}
	s.cancelRestartLocked()
	if s.lc.idleTimer != nil {
		s.lc.idleTimer.Stop()
		s.lc.idleTimer = nil
	}
	// A start under way is cut short and waited for; so is one that
	// began meanwhile (another restart's), which this stop would
	// otherwise mark stopped as it ran.
	interrupted := false
	for s.state == StateStarting {
		if s.cancelStart != nil {
			s.cancelStart()
		}
		ch := s.starting
		s.mu.Unlock()
		<-ch
		s.mu.Lock()
		// The interrupted start may have scheduled a restart.
		s.cancelRestartLocked()
		interrupted = true
	}
	if s.state == StateStopping {
		// Another stop is under way; its end is this one's.
		ch := s.lc.stopDone
		s.mu.Unlock()
		<-ch
		return
	}
	if s.state == StateStopped || s.cs == nil {
		// A server that failed stays unavailable, its error shown; one
		// whose start this stop cut short is stopped (mcpctl down), as is
		// one whose start another's failure called off (start a b).
		if s.state != StateUnavailable || s.lc.held || interrupted || s.lastErr != nil && s.lastErr.calledOff {
			s.setStateNote(StateStopped, nil, why)
		}
		bg := s.lc.bgStop
		s.mu.Unlock()
		if bg != nil {
			<-bg // a stop begun after too many failures
		}
		return
	}
	s.setStateNote(StateStopping, nil, why)
	s.lc.stopDone = make(chan struct{})
	proc, cs, conn := s.proc, s.cs, s.conn
	proc.markStopped()
	s.endLife()
	s.mu.Unlock()

	s.shutdown(proc, cs, conn, s.e.opts.ShutdownGrace)

	s.mu.Lock()
	s.proc, s.cs, s.conn = nil, nil, nil
	if cond == nil {
		s.offered, s.snap = s.snap, nil
	}
	s.setStateNote(StateStopped, nil, why)
	close(s.lc.stopDone)
	s.mu.Unlock()
}

// setEditError notes why a reload could not apply the server's edit, or
// that nothing is pending ("").
func (s *server) setEditError(why string) {
	s.mu.Lock()
	s.editErr = why
	s.mu.Unlock()
}

func (s *server) status() ServerStatus {
	if prev := s.predecessor.Load(); prev != nil && s.currentState() == StateStopped && prev.currentState() != StateStopped {
		return prev.status() // still stopping: what runs of it is that
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	state := s.state
	switch {
	case state == StateStopped && s.cfg().Disabled:
		state = StateDisabled
	case state == StateStopped && s.lc.byHandRestart != nil:
		// A restart or reload has its start to come (after the stop, or
		// a dependency's start): a request waits for it, as for one
		// starting.
		state = StateStarting
	}
	st := ServerStatus{
		Name:            s.cfg().Name,
		State:           state,
		Since:           s.since,
		Tools:           s.snap.toolCount(),
		ServerInfo:      s.info,
		ProtocolVersion: s.protocol,
	}
	if s.proc != nil && !s.proc.exited() {
		st.PID = s.proc.cmd.Process.Pid
	} else if p := s.launched; s.state == StateStarting && p != nil && !p.exited() {
		st.PID = p.cmd.Process.Pid // hung in its handshake, say: findable
	}
	if s.state == StateReady || s.state == StateDegraded {
		t := s.readyAt
		st.ReadyAt = &t
		// At least a millisecond: a server just ready has its
		// uptimeSeconds, never a field left out for being 0.
		st.UptimeSeconds = max(roundMillis(time.Since(s.readyAt)), 0.001)
		st.StartupSeconds = max(roundMillis(s.startup), 0.001)
	}
	if s.lastErr != nil && s.state != StateReady {
		st.LastError = s.lastErr.Message
	}
	st.EditError = s.editErr
	if a := s.cfg().Activation; a != "" && a != "eager" {
		st.Activation = a
	}
	st.Restarts, st.Failures = s.lc.restarts, s.lc.failures
	st.LastSuccessAt, st.LastFailureAt = timeOrNil(s.lc.lastSuccess), timeOrNil(s.lc.lastFailure)
	st.StoppedByHand = s.lc.held && state == StateStopped // not while a restart's start is to come
	if s.lc.restartDone != nil && !s.lc.restartAt.IsZero() {
		t := s.lc.restartAt
		st.RestartAt = &t
	}
	return st
}

func roundMillis(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }

// disabledError refuses a server the config disables.
func (s *server) disabledError() *Error {
	name := s.cfg().Name
	e := errorf(KindUsage, name, "server %s is disabled in the config (%s)", name, s.cfg().Where("disabled"))
	if f := s.cfg().FieldName("disabled"); f != "disabled" {
		return e.hint("set %s = true for server %s to use it", f, name) // Codex's enabled = false
	}
	return e.hint("remove \"disabled\" from server %s to use it", name)
}

// unavailableLocked explains why the server cannot take requests.
func (s *server) unavailableLocked() *Error {
	name := s.cfg().Name
	switch {
	case s.cfg().Disabled:
		return s.disabledError()
	case s.lastErr != nil && s.state == StateUnavailable:
		e := *s.lastErr
		if ago := time.Since(s.since).Round(time.Second); ago > 0 {
			e.Message += fmt.Sprintf(" (%s ago)", ago)
		}
		if s.lc.restartDone != nil {
			e.Hint = []string{fmt.Sprintf("it restarts in %s (restart %d of %d)", time.Until(s.lc.restartAt).Round(time.Second/10), s.lc.restarts, s.cfg().MaxRestarts)}
		}
		return &e
	case s.state == StateStopped && s.lc.held:
		return errorf(KindUnavailable, name, "server %s was stopped with mcpctl stop", name).
			hint("start it again with: mcpctl start %s", name)
	case s.state == StateStopped && s.cfg().Activation == "manual":
		return errorf(KindUnavailable, name, "server %s starts only by hand (activation manual, %s)", name, s.cfg().Where("activation")).
			hint("start it with: mcpctl start %s", name)
	}
	if s.e.closed.Load() {
		return errorf(KindUnavailable, name, "server %s is %s: the engine is closed", name, s.state)
	}
	if !s.e.started.Load() && s.state == StateStopped {
		// mcpctl starts every engine it makes: a Go program forgot.
		return errorf(KindUsage, name, "server %s is stopped: Engine.Start was never called, and servers start on use only with activation lazy or transient", name).
			hint("call Engine.Start before using its servers")
	}
	// Never started, in a session, is a race with its end.
	return errorf(KindUnavailable, name, "server %s is %s", name, s.state).
		hint("start it with: mcpctl up")
}

// skippedLinesPerMinute bounds the lines of a server's stdout that were
// not JSON-RPC logged in a minute (skippedLinesWindow): a server printing
// its own logs there would otherwise push the session's history out of its
// log.
const skippedLinesPerMinute = 10

var skippedLinesWindow = time.Minute // a var for tests

// skippedLineLogger logs the lines of stdout that were not JSON-RPC, up to
// skippedLinesPerMinute a minute; how many more there were is logged when
// the minute is over.
func (s *server) skippedLineLogger() func(line []byte, why string) {
	var mu sync.Mutex
	var since time.Time
	var logged, dropped int
	report := func() {
		mu.Lock()
		defer mu.Unlock()
		if dropped > 0 {
			s.log.Warn("skipped more lines on stdout that were not JSON-RPC, not logged", "lines", dropped, "since", since.Format(time.RFC3339))
		}
		logged, dropped = 0, 0
	}
	return func(line []byte, why string) {
		mu.Lock()
		defer mu.Unlock()
		if now := time.Now(); logged == 0 || logged < skippedLinesPerMinute && now.Sub(since) >= skippedLinesWindow {
			since, logged = now, 0
		}
		if logged == skippedLinesPerMinute {
			dropped++
			return
		}
		logged++
		s.log.Warn("skipped a line on stdout", "why", why, "line", truncate(s.cfg().Redact(string(line)), 200))
		if logged == skippedLinesPerMinute {
			s.log.Warn("more lines on stdout that are not JSON-RPC are counted, not logged, until a minute has passed", "limit", skippedLinesPerMinute)
			time.AfterFunc(time.Until(since.Add(skippedLinesWindow)), report)
		}
	}
}

// newClient builds the SDK client for this server, with handlers that
// feed the engine: list changes, resource updates, log messages, progress,
// and the server-initiated requests the engine's options answer.
func (s *server) newClient() *mcp.Client {
	name := s.cfg().Name
	opts := &mcp.ClientOptions{
		Logger:       s.e.sdkLog.With("server", name),
		Capabilities: &mcp.ClientCapabilities{},
		// A 2026-07-28 server asks for sampling and elicitation with input
		// requests in a result; the SDK answers them with the handlers
		// below. Without handlers, the input_required result is reported
		// instead (the SDK's retries would hide it).
		MultiRoundTrip: &mcp.MultiRoundTripOptions{},
		// Notification handlers run on the connection's read loop: none
		// of them may block.
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { s.listChanged(listTools) },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { s.listChanged(listPrompts) },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { s.listChanged(listResources) },
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			s.e.cache.invalidateURI(name, req.Params.URI)
			// Only while someone follows it: a 2026-07-28 subscription
			// stays open after its last release (SubscribeResource).
			s.subs.mu.Lock()
			_, followed := s.subs.m[req.Params.URI]
			s.subs.mu.Unlock()
			if followed {
				s.e.bus.publish(Event{Type: EventResourceUpdated, Server: name, URI: req.Params.URI})
			}
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			data, _ := marshalVerbatim(redactValue(s.cfg().Redact, req.Params.Data))
			s.e.bus.publish(Event{Type: EventLog, Server: name, Level: string(req.Params.Level), Logger: s.cfg().Redact(req.Params.Logger), Data: redactJSON(s.cfg().Redact, data)})
		},
	}
	if len(s.cfg().Roots) > 0 {
		// Roots are offered only when the config names them: servers such
		// as server-filesystem work in the roots they are offered instead
		// of the directories their arguments name. A reload that changes
		// them says so: listChanged.
		opts.Capabilities.RootsV2 = &mcp.RootCapabilities{ListChanged: true}
	}
	// Sampling and elicitation are always offered: what a server asks goes
	// to the caller, a hook or the engine's handler, and is declined with
	// a reason when none answers (see answer).
	opts.Capabilities.Sampling = &mcp.SamplingCapabilities{}
	opts.Capabilities.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}
	opts.CreateMessageHandler = func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		raw, err := marshalVerbatim(req.Params)
		if err != nil {
			return nil, err
		}
		res, err := s.answer(ctx, MethodSampling, raw)
		if err != nil {
			return nil, err
		}
		var out mcp.CreateMessageResult
		if err := json.Unmarshal(res, &out); err != nil {
			return nil, fmt.Errorf("the answer to sampling/createMessage is not a sampling result: %w", err)
		}
		return &out, nil
	}
	opts.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return s.askElicitation(ctx, req.Params, func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
			return s.answer(ctx, MethodElicitation, params)
		})
	}
	opts.ElicitationCompleteHandler = func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
		s.elicitWaits.done(req.Params.ElicitationID)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpctl", Version: Version()}, opts)
	registerTaskMethods(c)
	c.AddRoots(s.roots(s.cfg())...)
	return c
}

// A server offered roots that asked for them by the end of its start is
// ready once they were answered (at most rootsWait) and it had rootsSettle
// to take them in; one that did not ask is not waited for.
const (
	rootsWait   = time.Second
	rootsSettle = 20 * time.Millisecond
)

// roots are the roots offered to a server: its config's, as file:// URIs.
func (s *server) roots(cfg *config.Server) []*mcp.Root {
	out := make([]*mcp.Root, len(cfg.Roots))
	for i, d := range cfg.Roots {
		out[i] = &mcp.Root{URI: (&url.URL{Scheme: "file", Path: d}).String(), Name: filepath.Base(d)}
	}
	return out
}

// setRoots changes the roots a running server is offered; the SDK tells it
// with notifications/roots/list_changed.
func (s *server) setRoots(old, now *config.Server) {
	s.mu.Lock()
	c := s.client
	s.mu.Unlock()
	if c == nil {
		return
	}
	var uris []string
	for _, r := range s.roots(old) {
		uris = append(uris, r.URI)
	}
	c.RemoveRoots(uris...)
	c.AddRoots(s.roots(now)...)
}

// fail marks a server that could not be started as unavailable, with why.
func (s *server) fail(e *Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setState(StateUnavailable, e)
}

func (s *server) currentState() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// shutdownTimeout is how long SIGTERM has before SIGKILL: the server's own
// setting, else the engine's.
// startupTimeout is how long a start may take: the server's, else the
// default (a Server built in Go with none set, where 0 is not "no time").
func (s *server) startupTimeout() time.Duration {
	if d := s.cfg().StartupTimeout; d > 0 {
		return d
	}
	return config.DefaultStartupTimeout
}

func (s *server) shutdownTimeout() time.Duration {
	if s.cfg().ShutdownTimeout > 0 && !s.e.shutdownSet {
		return s.cfg().ShutdownTimeout
	}
	return s.e.opts.ShutdownTimeout
}

// requestTimeout is a request's timeout: the caller's, else the server's,
// else the engine's.
func (s *server) requestTimeout(ms int64) time.Duration {
	switch {
	case ms > 0:
		return time.Duration(ms) * time.Millisecond
	case s.cfg().RequestTimeout > 0 && !s.e.requestSet:
		return s.cfg().RequestTimeout
	}
	return s.e.opts.RequestTimeout
}

// timeOrNil is t, or nil for the zero time: a status field left out.
func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
