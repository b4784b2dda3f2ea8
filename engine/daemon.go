package engine

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// VersionHeader carries the mcpctl version on every request and response,
// so either side can tell the user when CLI and session differ.
const VersionHeader = "Mcpctl-Version"

// A Daemon serves an [Engine] over HTTP on a unix socket: the background
// session that `mcpctl up` starts. Its API:
//
//	GET  /v1/status             → Status
//	GET  /v1/tools?filter=F     → []Tool (F: "", server, or server.tool)
//	POST /v1/tools/call         CallRequest → CallResult
//	POST /v1/shutdown           stops every server, then the session → Status
//
// Errors are {"error": Error} with a status code that follows the kind.
type Daemon struct {
	engine *Engine
	info   SessionInfo
	log    *slog.Logger

	stopOnce sync.Once
	stopped  chan struct{}
	ready    atomic.Bool
}

// NewDaemon returns a daemon for e; logger may be nil.
func NewDaemon(e *Engine, info SessionInfo, logger *slog.Logger) *Daemon {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Daemon{engine: e, info: info, log: logger, stopped: make(chan struct{})}
}

// SetReady marks the session as done starting its servers; status then
// says "ready": true.
func (d *Daemon) SetReady() { d.ready.Store(true) }

// ShutdownRequested is closed when a client asked the session to end.
func (d *Daemon) ShutdownRequested() <-chan struct{} { return d.stopped }

// Handler returns the API's HTTP handler.
func (d *Daemon) Handler() http.Handler {
	routes := map[string]http.HandlerFunc{
		"GET /v1/status":      d.serveStatus,
		"GET /v1/tools":       d.serveTools,
		"POST /v1/tools/call": d.serveCall,
		"POST /v1/shutdown":   d.serveShutdown,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(VersionHeader, Version())
		h := routes[r.Method+" "+r.URL.Path]
		if h == nil {
			writeError(w, errorf(KindUsage, "", "the session (mcpctl %s) has no endpoint %s %s", Version(), r.Method, r.URL.Path).
				hint("restart the session with the same mcpctl: mcpctl down && mcpctl up"))
			return
		}
		h(w, r)
	})
}

// Serve answers requests on ln until ctx ends or a client asks for shutdown,
// then stops the engine. It returns once every server is stopped.
func (d *Daemon) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: d.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
	case <-d.stopped:
	case err = <-errc:
	}
	d.engine.Close()
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
	return &Status{Session: &info, Servers: d.engine.Status()}
}

func (d *Daemon) serveStatus(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, d.status())
}

func (d *Daemon) serveTools(w http.ResponseWriter, r *http.Request) {
	tools, err := d.engine.Tools(r.URL.Query().Get("filter"))
	if err != nil {
		writeError(w, err)
		return
	}
	if tools == nil {
		tools = []*Tool{}
	}
	writeJSON(w, http.StatusOK, tools)
}

func (d *Daemon) serveCall(w http.ResponseWriter, r *http.Request) {
	var req CallRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, errorf(KindUsage, "", "bad call request: %v", err))
		return
	}
	t0 := time.Now()
	res, err := d.engine.CallTool(r.Context(), &req)
	// The outcome, never the message: messages can quote arguments.
	outcome := "ok"
	if err != nil {
		outcome = string(KindOf(err))
		if outcome == "" {
			outcome = "error"
		}
	} else if res.IsError {
		outcome = "tool_error"
	}
	d.log.Info("call", "tool", req.Name, "ms", time.Since(t0).Milliseconds(), "outcome", outcome)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (d *Daemon) serveShutdown(w http.ResponseWriter, r *http.Request) {
	d.log.Info("shutdown requested")
	d.engine.Close()
	writeJSON(w, http.StatusOK, d.status())
	d.stopOnce.Do(func() { close(d.stopped) })
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

var statusOfKind = map[Kind]int{
	KindUsage:       http.StatusBadRequest,
	KindUnavailable: http.StatusServiceUnavailable,
	KindTimeout:     http.StatusGatewayTimeout,
	KindProtocol:    http.StatusBadGateway,
	KindInternal:    http.StatusInternalServerError,
}

func writeError(w http.ResponseWriter, err error) {
	var e *Error
	if !errors.As(err, &e) {
		kind := KindInternal
		if errors.Is(err, context.Canceled) {
			kind = KindUnavailable
		}
		e = errorf(kind, "", "%v", err)
	}
	code := statusOfKind[e.Kind]
	if code == 0 {
		code = http.StatusInternalServerError
	}
	writeJSON(w, code, map[string]*Error{"error": e})
}
