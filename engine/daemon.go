package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpctl/mcpctl/config"
)

// VersionHeader carries the mcpctl version on every request and response,
// so either side can tell the user when CLI and session differ.
const VersionHeader = "Mcpctl-Version"

// ConfigErrorHeader, on the session's answers, says why its config file
// does not load now, while the session runs the config it had (see
// [Engine.ConfigError]): one line.
const ConfigErrorHeader = "Mcpctl-Config-Error"

// ExpectConfigHeader, on a request, names the config files (a JSON array)
// the client means; a session that runs others says which in
// ConfigRunsHeader (a JSON array) on its answer. A client that names a
// session (--session) and a config (-c) would otherwise use another
// project's servers unsaid.
const (
	ExpectConfigHeader = "Mcpctl-Expect-Config"
	ConfigRunsHeader   = "Mcpctl-Config-Runs"
)

// NoWaitHeader, on a list request, asks for what the servers offer now:
// a server still starting is left out instead of waited for. A client
// that follows the lists' changes (mcpctl serve) asks so: served by one
// of the session's own servers, it would otherwise wait on its own start.
const NoWaitHeader = "Mcpctl-No-Wait"

// PartialHeader, on a list's answer, is the error (as JSON) of a list that
// leaves out servers that could not start to be listed (see
// [Engine.Tools]): the body holds the others' items.
const PartialHeader = "Mcpctl-Partial"

// partialTimedOutHeader, beside [PartialHeader], says what [StartTimedOut]
// reads of its error, which is not part of an [Error]'s JSON.
const partialTimedOutHeader = "Mcpctl-Partial-Start-Timed-Out"

// A Daemon serves an [Engine] over HTTP on a unix socket: the background
// session that `mcpctl up` starts. Its API (all under /v1):
//
//	GET  /status                  → Status
//	GET  /tools?filter=F          → []Tool (F: "", server, or server.tool)
//	POST /tools/call              CallRequest → CallResult; with Accept:
//	                              application/x-ndjson, progress lines first,
//	                              and the server's questions ({"ask": Ask})
//	                              when the request lists Asks
//	POST /answer                  Answer to an Ask
//	GET  /prompts?filter=F        → []Prompt
//	POST /prompts/get             PromptRequest → PromptResult
//	GET  /resources?server=S      → Resources
//	POST /resources/read          ResourceRequest → ResourceResult
//	POST /complete                CompleteRequest → CompleteResult
//	GET  /inspect?server=S        → []Inspection
//	GET  /metrics                 → []ServerMetrics
//	GET  /events?server=S&type=T&stderr=1&subscribe=URI&logLevel=L
//	                              → NDJSON: a ready line, then Events
//	POST /servers/start           ServersRequest → []ServerStatus (also stop, restart)
//	POST /reload                  ReloadRequest (optional) → loads the config again and applies it → ReloadResult
//	POST /shutdown                stops every server, then the session → Status
//	POST /redact                  {"text": T} → T with the servers' secrets hidden
//
// Errors are {"error": Error, "startTimedOut": true when [StartTimedOut]}
// with a status code that follows the kind. A list that leaves out
// servers answers with the others' items, its error in the
// Mcpctl-Partial header (and Mcpctl-Partial-Start-Timed-Out: 1 beside).
type Daemon struct {
	engine *Engine
	info   SessionInfo
	log    *slog.Logger

	stopOnce sync.Once
	stopped  chan struct{}
	ready    atomic.Bool
	load     func() (*config.Config, error)
	inputs   sessionInputs // given by reloads (ReloadRequest.Inputs)
	asks     waitingAsks

	// ttl, when set, ends the session after that long without a request
	// (see SetTTL); inflight counts requests in progress, lastActive is
	// when the last one began or ended (unix nanoseconds).
	ttl        time.Duration
	inflight   atomic.Int64
	lastActive atomic.Int64
	idled      atomic.Bool

	// audit, when set, records calls, server starts and stops and
	// reloads (see SetAudit); auditWG waits for its event reader, which
	// the engine's close ends.
	audit   *AuditLog
	auditWG sync.WaitGroup
}

// NewDaemon returns a daemon for e; logger may be nil. Its lines about a
// request carry the request's correlation id (see [RequestIDHeader]).
func NewDaemon(e *Engine, info SessionInfo, logger *slog.Logger) *Daemon {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = slog.New(RequestIDHandler(logger.Handler()))
	return &Daemon{engine: e, info: info, log: logger, stopped: make(chan struct{})}
}

// SetReady marks the session as done starting its servers; status then
// says "ready": true.
// The TTL (see SetTTL) counts from here.
func (d *Daemon) SetReady() {
	d.lastActive.Store(time.Now().UnixNano())
	d.ready.Store(true)
}

// SetConfigLoader gives the daemon the way to read its config again, for
// [Daemon.Reload]; without one it cannot reload.
func (d *Daemon) SetConfigLoader(load func() (*config.Config, error)) { d.load = load }

// Reload reads the config again and applies it (see [Engine.Reload]). A
// config that cannot be loaded leaves the running one in place; the error
// is returned and kept in the status until a reload succeeds.
func (d *Daemon) Reload(ctx context.Context) (*ReloadResult, error) {
	if d.load == nil {
		return nil, errorf(KindUsage, "", "this session cannot reload its config").
			hint("restart it to use the new config: mcpctl down && mcpctl up")
	}
	cfg, err := d.load()
	if err != nil {
		err = d.engine.ReloadFailed(err)
		d.audit.Record(AuditEntry{Event: "reload", UID: peerUID(ctx), RequestID: RequestID(ctx), Outcome: outcomeOf(err, false)})
		return nil, err
	}
	res, err := d.engine.Reload(ctx, cfg)
	entry := AuditEntry{Event: "reload", UID: peerUID(ctx), RequestID: RequestID(ctx), Outcome: outcomeOf(err, false)}
	if res != nil {
		entry.Detail = fmt.Sprintf("added %v, removed %v, restarted %v, updated %v", res.Added, res.Removed, res.Restarted, res.Updated)
	}
	d.audit.Record(entry)
	return res, err
}

// SetTTL makes [Daemon.Serve] end the session, stopping every server, once
// ttl has passed without a request. A request in progress counts as
// activity for as long as it runs: a long call, or an open `watch` stream,
// keeps the session up. The time counts from [Daemon.SetReady]. Set it
// before Serve; 0 means no limit.
func (d *Daemon) SetTTL(ttl time.Duration) {
	d.ttl = ttl
	d.info.TTLSeconds = ttl.Seconds()
}

// IdleEnded reports whether the session ended because its TTL passed.
func (d *Daemon) IdleEnded() bool { return d.idled.Load() }

// ShutdownRequested is closed when a client asked the session to end.
func (d *Daemon) ShutdownRequested() <-chan struct{} { return d.stopped }

// Stopping reports whether the session is stopping: a shutdown was asked
// for and its servers are being stopped, or are.
func (d *Daemon) Stopping() bool { return d.engine.closed.Load() }

// Handler returns the API's HTTP handler.
func (d *Daemon) Handler() http.Handler {
	e := d.engine
	query := func(r *http.Request, k string) string { return r.URL.Query().Get(k) }
	// A list waits for servers still starting, unless asked not to.
	waits := func(r *http.Request) bool { return r.Header.Get(NoWaitHeader) == "" }
	getPrompt := logged(d, "prompt", e.GetPrompt, func(r *PromptRequest, res *PromptResult) []any {
		return []any{"prompt", r.Name, "cached", res != nil && res.Cached}
	})
	readResource := logged(d, "read", e.ReadResource, func(r *ResourceRequest, res *ResourceResult) []any {
		server := r.Server
		if res != nil {
			server = res.Server
		}
		return []any{"server", server, "uri", r.URI, "cached", res != nil && res.Cached}
	})
	complete := logged(d, "complete", e.Complete, func(r *CompleteRequest, _ *CompleteResult) []any {
		return []any{"ref", r.Ref, "argument", r.Argument}
	})
	routes := map[string]http.HandlerFunc{
		"GET /v1/status":          d.serveStatus,
		"GET /v1/tools":           get(func(r *http.Request) ([]*Tool, error) { return e.tools(query(r, "filter"), waits(r)) }),
		"POST /v1/tools/call":     d.serveCall,
		"POST /v1/answer":         d.serveAnswer,
		"GET /v1/prompts":         get(func(r *http.Request) ([]*Prompt, error) { return e.prompts(query(r, "filter"), waits(r)) }),
		"POST /v1/prompts/get":    post(getPrompt),
		"GET /v1/resources":       get(func(r *http.Request) (*Resources, error) { return e.resources(query(r, "server"), waits(r)) }),
		"POST /v1/resources/read": post(readResource),
		"POST /v1/complete":       post(complete),
		"POST /v1/redact": post(func(_ context.Context, in *redactText) (*redactText, error) {
			return &redactText{Text: e.Redact(in.Text)}, nil
		}),
		"GET /v1/inspect": get(func(r *http.Request) ([]*Inspection, error) { return e.inspect(query(r, "server"), waits(r)) }),
		"GET /v1/listed":  get(func(*http.Request) ([]*Inspection, error) { return e.Listed() }),
		"GET /v1/metrics": get(func(*http.Request) ([]ServerMetrics, error) { return e.Metrics(), nil }),
		"GET /v1/events":  d.serveEvents,
		"POST /v1/reload": d.unlessGone(d.serveReload),
		"POST /v1/servers/start": d.unlessGone(post(d.byHand("start", func(ctx context.Context, names []string) error {
			// The session's work, as a restart's start and a reload are: a
			// client that stops waiting (Ctrl-C) does not call it off.
			// Its audit record says how it ended, also once the client
			// is gone; the log is closed only after it (auditWG).
			d.auditWG.Add(1)
			done := make(chan error, 1)
			go func() {
				defer d.auditWG.Done()
				err := e.Start(context.WithoutCancel(ctx), names...)
				d.recordByHand(ctx, "start", names, err)
				done <- err
			}()
			select {
			case err := <-done:
				return err
			case <-ctx.Done():
				return ctx.Err()
			}
		}))),
		"POST /v1/servers/stop":    d.unlessGone(post(d.byHand("stop", func(_ context.Context, names []string) error { return e.Stop(names...) }))),
		"POST /v1/servers/restart": d.unlessGone(post(d.byHand("restart", func(ctx context.Context, names []string) error { return e.Restart(ctx, names...) }))),
		"POST /v1/shutdown":        d.unlessGone(d.serveShutdown),
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.inflight.Add(1)
		t0 := time.Now()
		d.lastActive.Store(t0.UnixNano())
		id := r.Header.Get(RequestIDHeader)
		if !validRequestID(id) {
			id = newRequestID()
		}
		r = r.WithContext(WithRequestID(r.Context(), id))
		// Not written if it came while the log was less verbose: its
		// line is written after its answer, by when a reload may have
		// made the log more verbose.
		logged := d.log.Enabled(r.Context(), slog.LevelDebug)
		defer func() {
			d.lastActive.Store(time.Now().UnixNano())
			d.inflight.Add(-1)
			if logged {
				d.log.DebugContext(r.Context(), "request", "method", r.Method, "path", r.URL.Path, "ms", time.Since(t0).Milliseconds())
			}
		}()
		tw := &answerWriter{ResponseWriter: w}
		w = tw
		defer recoverRequest(d.log, d.engine.redactAll, tw, r)
		w.Header().Set(VersionHeader, Version())
		w.Header().Set(RequestIDHeader, id)
		if ce := d.engine.ConfigError(); ce != nil {
			w.Header().Set(ConfigErrorHeader, headerLine(ce.Message))
		}
		if want := r.Header.Get(ExpectConfigHeader); want != "" && !d.runsConfig(want) {
			runs, _ := json.Marshal(d.info.ConfigFiles)
			w.Header().Set(ConfigRunsHeader, string(runs))
		}
		h := routes[r.Method+" "+r.URL.Path]
		if h != nil && d.engine.closed.Load() && !answeredWhileStopping[r.URL.Path] {
			// Ending (mcpctl down, a signal, its ttl): said as the
			// session's state, not as the Go API's closed engine.
			writeError(w, stoppingError())
			return
		}
		if h == nil {
			writeError(w, errorf(KindUsage, "", "the session (mcpctl %s) has no endpoint %s %s", Version(), r.Method, r.URL.Path).
				hint("restart the session with the same mcpctl: mcpctl down && mcpctl up"))
			return
		}
		h(w, r)
	})
}

// answeredWhileStopping are the requests a session that is ending still
// answers: its status (stopping), another shutdown (which waits for the
// end, as the first does), a watch of its last events, and the redaction
// of an error a command made of a result it got before.
var answeredWhileStopping = map[string]bool{
	"/" + APIVersion + "/status":   true,
	"/" + APIVersion + "/shutdown": true,
	"/" + APIVersion + "/events":   true,
	"/" + APIVersion + "/redact":   true,
}

// recoverRequest, deferred by a handler, makes a bug met by one request
// that request's error, told to its client and logged with its stack,
// instead of a dropped connection.
func recoverRequest(log *slog.Logger, redact func(string) string, w *answerWriter, r *http.Request) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	// The value may hold anything the handler had, a server's secret too.
	what := redact(fmt.Sprint(v))
	log.ErrorContext(r.Context(), "request failed: a bug in mcpctl", "method", r.Method, "path", r.URL.Path, "panic", what, "stack", string(debug.Stack()))
	if w.began {
		// Part of an answer (a stream) is out: an error after it would
		// read as more of it. The connection ends instead.
		panic(http.ErrAbortHandler)
	}
	writeError(w, errorf(KindInternal, "", "the session failed on %s %s: a bug in mcpctl (%s)", r.Method, r.URL.Path, what).
		hint("please report it, with the session's log (mcpctl logs)"))
}

// An answerWriter notes whether an answer has begun.
type answerWriter struct {
	http.ResponseWriter
	began bool
}

func (w *answerWriter) WriteHeader(code int) {
	w.began = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *answerWriter) Write(p []byte) (int, error) {
	w.began = true
	return w.ResponseWriter.Write(p)
}

// Flush and Unwrap keep what streams need of the writer underneath.
func (w *answerWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *answerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// headerLine makes text one line a header may carry.
// runsConfig reports whether the session runs the config files named in
// want (an ExpectConfigHeader), the same files however their paths are
// spelled.
func (d *Daemon) runsConfig(want string) bool {
	var files []string
	if json.Unmarshal([]byte(want), &files) != nil || len(d.info.ConfigFiles) == 0 {
		return true // nothing to tell
	}
	canonical := func(paths []string) []string {
		out := make([]string, 0, len(paths))
		for _, p := range paths {
			out = append(out, CanonicalPath(p))
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	return slices.Equal(canonical(files), canonical(d.info.ConfigFiles))
}

func headerLine(text string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, text)
}

// Serve answers requests on ln until ctx ends or a client asks for shutdown,
// then stops the engine. It returns once every server is stopped.
func (d *Daemon) Serve(ctx context.Context, ln net.Listener) error {
	// IdleTimeout: connections a client keeps for reuse (engine.Client
	// keeps up to 1024) are dropped after a minute unused.
	srv := &http.Server{Handler: d.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute, ConnContext: withPeer}
	if pl, ok := ln.(*peerListener); ok && pl.onRefuse == nil {
		pl.onRefuse = d.refused
		if hl, ok := pl.Listener.(*healingListener); ok {
			hl.onHeal = func(err error) {
				if errors.Is(err, ErrSessionRunning) {
					// Unreachable for good: end, servers and all.
					d.log.Error("the session's runtime directory was removed and another session took its place; ending", "socket", hl.path)
					d.stopOnce.Do(func() { close(d.stopped) })
					return
				}
				if err != nil {
					d.log.Warn("the session's socket was removed, and cannot be made again", "socket", hl.path, "error", err.Error())
					return
				}
				d.log.Warn("the session's socket was removed; listening there again", "socket", hl.path)
			}
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var idle <-chan time.Time
	if d.ttl > 0 {
		d.lastActive.Store(time.Now().UnixNano())
		tick := time.NewTicker(min(d.ttl/10+time.Millisecond, time.Second))
		defer tick.Stop()
		idle = tick.C
	}
	var err error
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case <-d.stopped:
			break wait
		case err = <-errc:
			break wait
		case <-idle:
			since := time.Since(time.Unix(0, d.lastActive.Load()))
			if d.ready.Load() && d.inflight.Load() == 0 && since >= d.ttl {
				d.idled.Store(true)
				d.log.Info("no request for the session's ttl; stopping", "ttl", d.ttl.String())
				break wait
			}
		}
	}
	d.engine.Close()
	// The audit's reader ends with the engine's events, the stops'
	// included.
	d.auditWG.Wait()
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(shutCtx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func (d *Daemon) status() *Status {
	info := d.info
	info.Ready = d.ready.Load()
	info.Stopping = d.Stopping()
	return &Status{Session: &info, Servers: d.engine.Status(), ConfigError: d.engine.ConfigError()}
}

func (d *Daemon) serveReload(w http.ResponseWriter, r *http.Request) {
	// An older mcpctl sends no body.
	var req ReloadRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil && !errors.Is(err, io.EOF) {
		writeError(w, errorf(KindUsage, "", "bad reload request: %v", err))
		return
	}
	if err := d.inputs.add(req.Inputs); err != nil {
		writeError(w, err)
		return
	}
	// The session's work: a client that stops waiting (Ctrl-C) does not
	// cut the reload short, which would leave the servers it was
	// starting unavailable.
	var res *ReloadResult
	err := outlive(r.Context(), func(ctx context.Context) (err error) {
		res, err = d.Reload(ctx)
		return err
	}, nil)
	if r.Context().Err() != nil {
		return // nobody to tell
	}
	if errors.Is(err, errReloadClosed) {
		// Stopped while it waited for the reload before (mcpctl down).
		err = errorf(KindUnavailable, "", "the session stopped before it could reload").wrap(err)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// A ServersRequest names the servers to start, stop or restart.
type ServersRequest struct {
	Servers []string `json:"servers"`
}

// byHand runs a start, stop or restart of named servers and answers with
// their status.
// The audit log gets who asked (a "by-hand" entry per server); the start
// or stop itself follows as its own entry.
func (d *Daemon) byHand(action string, act func(context.Context, []string) error) func(context.Context, *ServersRequest) ([]ServerStatus, error) {
	return func(ctx context.Context, req *ServersRequest) ([]ServerStatus, error) {
		if len(req.Servers) == 0 {
			return nil, errorf(KindUsage, "", "name at least one server")
		}
		shown := slices.Clone(req.Servers)
		if action != "stop" {
			// A start brings up what the named servers depend on: those
			// it wakes are shown too, or they would start unseen.
			shown = append(shown, d.engine.dependenciesDown(req.Servers)...)
		}
		err := act(ctx, req.Servers)
		if action != "start" {
			d.recordByHand(ctx, action, req.Servers, err) // a start's, by its act
		}
		if err != nil {
			return nil, err
		}
		var out []ServerStatus
		for _, st := range d.engine.Status() {
			if slices.Contains(shown, st.Name) {
				out = append(out, st)
			}
		}
		return out, nil
	}
}

// recordByHand records in the audit log who asked for action on names,
// and how it ended.
func (d *Daemon) recordByHand(ctx context.Context, action string, names []string, err error) {
	for _, name := range names {
		d.audit.Record(AuditEntry{Event: "by-hand", UID: peerUID(ctx), RequestID: RequestID(ctx), Server: name, Detail: action, Outcome: outcomeOf(err, false)})
	}
}

func (d *Daemon) serveStatus(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, d.status())
}

// get answers a GET with fn's value as JSON.
func get[Out any](fn func(*http.Request) (Out, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := fn(r)
		if err != nil {
			var unlisted *Error
			if !errors.As(err, &unlisted) || !isPartial(v) {
				writeError(w, err)
				return
			}
			// A list that leaves some servers out: the others' items,
			// and the error beside them.
			data, _ := json.Marshal(unlisted)
			w.Header().Set(PartialHeader, headerLine(string(data)))
			if StartTimedOut(unlisted) {
				w.Header().Set(partialTimedOutHeader, "1")
			}
		}
		writeJSON(w, http.StatusOK, v)
	}
}

// isPartial says whether a list method's result came with its error: lists
// return nil with any other error.
func isPartial(v any) bool {
	switch v := v.(type) {
	case []*Tool:
		return v != nil
	case []*Prompt:
		return v != nil
	case *Resources:
		return v != nil
	case []*Inspection:
		return v != nil
	}
	return false
}

// post decodes a POST's body, calls fn with it, and answers with the result.
func post[In, Out any](fn func(context.Context, *In) (Out, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in In
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			writeError(w, errorf(KindUsage, "", "bad request to %s: %v", r.URL.Path, err))
			return
		}
		out, err := fn(r.Context(), &in)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}

// logged is fn with a line in the session's log for each request, as a
// call has: what was asked (never an argument's value), how long it took
// and its outcome.
func logged[In, Out any](d *Daemon, msg string, fn func(context.Context, *In) (*Out, error), what func(*In, *Out) []any) func(context.Context, *In) (*Out, error) {
	return func(ctx context.Context, in *In) (*Out, error) {
		t0 := time.Now()
		out, err := fn(ctx, in)
		attrs := append(what(in, out), "ms", time.Since(t0).Milliseconds(), "outcome", outcomeOf(err, false))
		d.log.InfoContext(ctx, msg, attrs...)
		return out, err
	}
}

func (d *Daemon) serveCall(w http.ResponseWriter, r *http.Request) {
	var req CallRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, errorf(KindUsage, "", "bad call request: %v", err))
		return
	}
	var stream *ndjson
	if wantsStream(r) {
		stream = newNDJSON(w)
		defer stream.close()
		req.OnProgress = func(p Progress) { stream.line(map[string]Progress{"progress": p}) }
		d.asksOverStream(r.Context(), &req, stream)
	}
	t0 := time.Now()
	res, err := d.engine.CallTool(r.Context(), &req)
	took := time.Since(t0)
	// The answer goes out before the log and audit lines are written: the
	// caller need not wait for two file writes.
	switch {
	case stream != nil:
		stream.end(res, err)
	case err != nil:
		writeError(w, err)
	default:
		writeJSONBytes(w, http.StatusOK, res.appendJSON(make([]byte, 0, len(res.Result)+128)))
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	// The outcome, never the message: messages can quote arguments.
	outcome := outcomeOf(err, res != nil && res.IsError)
	d.log.InfoContext(r.Context(), "call", "tool", req.Name, "ms", took.Milliseconds(), "outcome", outcome)
	ms := float64(took.Microseconds()) / 1000
	server, _, _ := SplitName(req.Name)
	d.audit.Record(AuditEntry{Event: "call", UID: peerUID(r.Context()), RequestID: RequestID(r.Context()),
		Server: server, Name: req.Name, Args: argNames(&req), DurationMs: &ms, Outcome: outcome})
}

// goneGrace is how long an act waits to learn that its client hung up,
// where hungUp cannot tell at once.
const goneGrace = 20 * time.Millisecond

// unlessGone runs h, an act (stop, restart, shutdown, reload), only if its
// client is still there: one that gave up on a stopped session (SIGSTOP)
// closed its connection, and was told the act failed; when the session
// resumes and reads the request, it must not be done for nobody.
func (d *Daemon) unlessGone(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// Read to its end, the body lets the server watch the connection,
		// and cancel the request's context when the client has hung up.
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		gone, known := hungUp(r.Context())
		if err == nil && !known {
			select {
			case <-r.Context().Done():
			case <-time.After(goneGrace):
			}
		}
		if gone || r.Context().Err() != nil {
			d.log.Warn("not done: its client hung up before the session read it", "path", r.URL.Path)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h(w, r)
	}
}

func (d *Daemon) serveShutdown(w http.ResponseWriter, r *http.Request) {
	d.log.Info("shutdown requested")
	d.engine.Close()
	writeJSON(w, http.StatusOK, d.status())
	d.stopOnce.Do(func() { close(d.stopped) })
}

// outcomeOf names how a request ended: "ok", "tool_error", or the error's
// kind. Never its message: messages can quote arguments.
func outcomeOf(err error, toolError bool) string {
	switch {
	case callerGaveUp(err):
		return "cancelled"
	case err != nil:
		if k := KindOf(err); k != "" {
			return string(k)
		}
		return "error"
	case toolError:
		return "tool_error"
	}
	return "ok"
}

// SetAudit makes the daemon record every call (the peer's uid, the tool,
// its argument names, duration and outcome), every reload and every start
// and stop of a server to a. Set it before Serve.
func (d *Daemon) SetAudit(a *AuditLog) {
	d.audit = a
	sub := d.engine.Events(EventFilter{Types: []string{EventState}})
	d.auditWG.Add(1)
	go func() {
		defer d.auditWG.Done()
		for ev := range sub.C {
			d.auditState(ev)
		}
	}()
}

// refused logs and audits a connection from another user, which the
// listener turned away: someone tried the session's socket.
func (d *Daemon) refused(c peerCred, err error) {
	d.log.Warn("refused a connection", "error", err.Error())
	e := AuditEntry{Event: "refused", Detail: err.Error()}
	if c.Err == nil {
		uid := c.UID
		e.UID = &uid
	}
	d.audit.Record(e)
}

// auditState records a server's start (it became ready), stop, or
// failure (it became unavailable).
func (d *Daemon) auditState(ev Event) {
	if ev.Type != EventState {
		return
	}
	e := AuditEntry{Time: ev.Time, Server: ev.Server, Detail: string(ev.From) + " → " + string(ev.To)}
	switch ev.To {
	case StateReady:
		if ev.From == StateDegraded {
			return
		}
		e.Event, e.Outcome = "start", "ok"
	case StateStopped:
		e.Event, e.Outcome = "stop", "ok"
	case StateUnavailable:
		e.Event, e.Outcome = "fail", "unavailable"
		if ev.Error != "" {
			e.Detail += ": " + ev.Error
		}
	default:
		return
	}
	d.audit.Record(e)
}

// writeJSON answers with v. Like every answer of the session it escapes no
// HTML: a server's "<" reaches the caller as a "<", as it does without a
// session.
func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := marshalVerbatim(v)
	if err != nil {
		data, _ = marshalVerbatim(map[string]*Error{"error": errorf(KindInternal, "", "encoding the answer: %v", err)})
		code = http.StatusInternalServerError
	}
	writeJSONBytes(w, code, data)
}

// appendJSON appends r as JSON, its result as the server sent it:
// encoding/json would check and compact the result again, a pass over
// what may be megabytes, which was checked as it was read.
func (r *CallResult) appendJSON(b []byte) []byte {
	b = append(b, `{"server":`...)
	b = appendPlain(b, r.Server)
	b = append(b, `,"tool":`...)
	b = appendPlain(b, r.Tool)
	b = append(b, `,"result":`...)
	if len(r.Result) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, r.Result...)
	}
	b = append(b, `,"isError":`...)
	b = strconv.AppendBool(b, r.IsError)
	return append(b, '}')
}

// writeJSONBytes writes data, one JSON value, as the answer.
func writeJSONBytes(w http.ResponseWriter, code int, data []byte) {
	data = append(data, '\n')
	// With its length known the answer goes out whole, in one write, even
	// when the handler flushes it before doing more.
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(code)
	w.Write(data)
}

var statusOfKind = map[Kind]int{
	KindUsage:       http.StatusBadRequest,
	KindConfig:      http.StatusUnprocessableEntity, // the request is right; the config is not
	KindUnavailable: http.StatusServiceUnavailable,
	KindTimeout:     http.StatusGatewayTimeout,
	KindProtocol:    http.StatusBadGateway,
	KindInternal:    http.StatusInternalServerError,
	KindAuth:        http.StatusUnauthorized,
}

// redactText is the text of a request to redact, and of its answer.
type redactText struct {
	Text string `json:"text"`
}

// stoppingError is what a request to a session that is ending (mcpctl
// down, a signal, its ttl) is told: the session's state, not the Go API's
// closed engine.
func stoppingError() *Error {
	return errorf(KindUnavailable, "", "the session is stopping").
		hint("run the command again once it has stopped: without a session it starts the servers it needs; or start a new session with: mcpctl up")
}

// sessionError is err as a session tells it: a request under way as its
// engine closed (begun before) is told that the session is stopping.
func sessionError(err error) *Error {
	if errors.Is(err, errEngineClosed) {
		return stoppingError()
	}
	return asError(err)
}

func writeError(w http.ResponseWriter, err error) {
	e := sessionError(err)
	code := statusOfKind[e.Kind]
	if code == 0 {
		code = http.StatusInternalServerError
	}
	writeJSON(w, code, newWireError(e, err))
}

// newWireError is e, err as the session tells it, as sent.
func newWireError(e *Error, err error) wireError {
	return wireError{Error: e, StartTimedOut: StartTimedOut(err)}
}

// error is the error the session sent, as read.
func (w wireError) error() *Error {
	w.Error.startTimedOut = w.StartTimedOut
	return w.Error
}

// wireError is an error as the session sends it: with what [StartTimedOut]
// reads, which is not part of an [Error]'s JSON.
type wireError struct {
	Error         *Error `json:"error"`
	StartTimedOut bool   `json:"startTimedOut,omitempty"`
}
