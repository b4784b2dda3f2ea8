package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/engine"
	"github.com/mcpctl/mcpctl/output"
	"golang.org/x/term"
)

// reloadDebounce is how long the config files must be quiet after an edit
// before the session reloads: editors save in bursts.
const reloadDebounce = 150 * time.Millisecond

// runSession is the session itself: it listens on the socket, starts every
// server, reports, and serves until Ctrl-C, SIGTERM or `mcpctl down`. It
// reloads its config when a config file changes, on `mcpctl reload`, and,
// when detached, on SIGHUP. With a ttl it ends by itself after that long
// without a request.
func runSession(ctx context.Context, env *Env, p *output.Printer, cfg *config.Config, sess *engine.Session, opts upOptions) error {
	notifyFD, ttl, logLevel := opts.notifyFD, opts.ttl, opts.logLevel
	notify := func(m readyMsg) {}
	var notifyMu sync.Mutex // progress lines and the last message, whole
	if notifyFD > 0 {
		// The servers this session starts must not inherit the pipe: its
		// reader waits for every writer to close it.
		syscall.CloseOnExec(notifyFD)
		f := os.NewFile(uintptr(notifyFD), "notify")
		notify = func(m readyMsg) {
			notifyMu.Lock()
			defer notifyMu.Unlock()
			data, _ := json.Marshal(m)
			f.Write(append(data, '\n'))
			if m.Progress == nil {
				f.Close()
			}
		}
	}
	var lock *os.File
	if opts.lockFD > 0 {
		// Nor the lock: a server holding it would keep the session
		// "running" after the session is gone.
		syscall.CloseOnExec(opts.lockFD)
		lock = os.NewFile(uintptr(opts.lockFD), "session lock")
	}
	ln, release, err := sess.ListenHolding(lock)
	if errors.Is(err, engine.ErrSessionRunning) {
		notify(readyMsg{Running: true})
		env.note("session %s is already running", sess.Name)
		return nil
	}
	if err != nil {
		err = &engine.Error{Kind: engine.KindInternal, Message: fmt.Sprintf("cannot listen on %s: %v", sess.Socket, err)}
		notify(readyMsg{Error: err.(*engine.Error)})
		return err
	}
	defer release() // the socket too, if still this session's

	obs, err := openSessionLogs(env, cfg, sess, notifyFD > 0, logLevel)
	if err != nil {
		err = &engine.Error{Kind: engine.KindInternal, Message: fmt.Sprintf("cannot open the session's logs in %s: %v", sess.StateDir, err)}
		notify(readyMsg{Error: err.(*engine.Error)})
		return err
	}
	defer obs.close()
	logger := obs.logger.With("session", sess.Name)
	eopts := env.engineOptions(sess, logger)
	if wd, err := startWatchdog(notifyFD > 0); err != nil {
		logger.Warn("cannot start the watchdog; a kill -9 of this session would leave its servers' children running", "error", err.Error())
	} else {
		// Deferred before Serve returns, which stops every server: on a
		// clean end the watchdog has nothing left to kill.
		defer wd.close()
		eopts.OnProcess = wd.report(logger.Warn)
	}
	e := engine.New(cfg, eopts)
	info := engine.SessionInfo{
		Name: sess.Name, PID: os.Getpid(), Socket: sess.Socket, Config: cfg.Path, ConfigFiles: cfg.Paths,
		Version: engine.Version(), StartedAt: time.Now(),
	}
	d := engine.NewDaemon(e, info, logger)
	d.SetAudit(obs.audit)
	if ttl > 0 {
		d.SetTTL(ttl)
		info.TTLSeconds = ttl.Seconds()
	}
	// A reload reads the same files the session started from; inputs come
	// from what reloads gave (mcpctl reload hands over its MCPCTL_INPUT_*),
	// then from the session's environment, as nobody is there to ask.
	lookup := func(name string) (string, bool) {
		if v, ok := d.LookupInput(name); ok {
			return v, true
		}
		return env.LookupEnv(name)
	}
	load := func() (*config.Config, error) {
		next, err := config.LoadFiles(cfg.Paths, config.Options{LookupEnv: lookup, WorkDir: env.WorkDir, NoAskHint: func(name string) string {
			return fmt.Sprintf("the session cannot ask: give it with %s=... mcpctl reload", name)
		}, UnsetHint: func(name, withDefault string) string {
			return fmt.Sprintf("the session keeps the environment it started with: give a default (%s), or start it again with %s set: mcpctl down && %s=... mcpctl up", withDefault, name, name)
		}})
		if err == nil {
			err = env.addHeaders(next)
		}
		if err == nil {
			err = obs.follow(next)
		}
		return next, err
	}
	// The files a config that could not be loaded names (an envFile not
	// there yet) are watched too: their fix is a change to reload for.
	var failedFiles atomic.Pointer[[]string]
	d.SetConfigLoader(func() (*config.Config, error) {
		next, err := load()
		failedFiles.Store(nil)
		var gone *config.NotFoundError
		if errors.As(err, &gone) && gone.Path != "" && gone.Why == "" {
			// Not --config's or $MCPCTL_CONFIG's fault, as the error's own
			// hint would have it: the file was there when the session began.
			back := "put it back, and the session reloads it by itself"
			if len(gone.More) > 0 {
				back = "put them back, and the session reloads them by itself"
			}
			err = &engine.Error{Kind: engine.KindConfig,
				Message: gone.Error(),
				Hint:    []string{back + "; or stop the session with: mcpctl down"}}
		}
		if err != nil {
			if named, uerr := config.LoadFiles(cfg.Paths, config.Options{LookupEnv: lookup, WorkDir: env.WorkDir, Unresolved: true}); uerr == nil {
				files := named.WatchFiles()
				failedFiles.Store(&files)
			}
		}
		return next, err
	})
	watchFiles := func() []string {
		files := e.Config().WatchFiles()
		if failed := failedFiles.Load(); failed != nil {
			files = append(files, *failed...)
		}
		return files
	}
	// The up that waits shows each server's start as it happens; what the
	// start reported is sent before the last message.
	stopProgress := func() {}
	if notifyFD > 0 {
		sub := e.Events(engine.EventFilter{Types: []string{engine.EventState}})
		forwarded := make(chan struct{})
		go func() {
			defer close(forwarded)
			for ev := range sub.C {
				notify(readyMsg{Progress: &upProgress{Server: ev.Server, State: ev.To, Error: ev.Error}})
			}
		}()
		stopProgress = func() { sub.Close(); <-forwarded }
	}
	// The log's first line, before the servers' (logs -f shows it first).
	logger.Info("session starting", "config", cfg.Paths, "servers", len(cfg.Servers), "pid", info.PID)
	// Started before the socket is served: a request that comes while
	// the servers start waits for them, never finds one stopped (or
	// leaves it out of a listing) for having come first.
	waitStart := e.StartAsync(ctx)
	serveCtx, stopServing := context.WithCancel(ctx)
	defer stopServing()
	served := make(chan error, 1)
	go func() { served <- d.Serve(serveCtx, ln) }()

	// Edits made while the servers start are applied once they are up.
	ready := make(chan struct{})
	reload := func(why string) {
		select {
		case <-ready:
		case <-serveCtx.Done():
			return
		}
		logger.Info("reloading the config", "why", why)
		if _, err := d.Reload(serveCtx); err != nil {
			logger.Warn("reload failed", "error", err.Error())
		}
	}
	if err := config.Watch(serveCtx, watchFiles, reloadDebounce, func() { reload("a config file changed") }); err != nil {
		logger.Warn("cannot watch the config files; reload with: mcpctl reload", "error", err.Error())
	}
	stdin, _ := env.In.(*os.File)
	attached := env.StdoutTTY || env.StderrTTY || stdin != nil && term.IsTerminal(int(stdin.Fd()))
	if notifyFD > 0 || !attached {
		// Detached, or run in the foreground by a supervisor (systemd's
		// ExecReload sends it), SIGHUP means reload, as for other daemons;
		// attached to a terminal it still means the terminal is gone.
		signal.Reset(syscall.SIGHUP)
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		go func() {
			for {
				select {
				case <-hup:
					reload("SIGHUP")
				case <-serveCtx.Done():
					return
				}
			}
		}()
	}

	startErr := waitStart()
	stopProgress()
	if err := startErr; err != nil {
		var ee *engine.Error
		stopped := ctx.Err() != nil || d.Stopping() // not failed: cut short
		switch cause := context.Cause(ctx); {
		case ctx.Err() != nil && cause != nil:
			// A signal to the session (kill, a supervisor's stop): up is
			// told that, not "context canceled".
			ee = &engine.Error{Kind: engine.KindUnavailable, Message: fmt.Sprintf("the session was stopped while its servers started (%v)", cause)}
		case d.Stopping():
			// Not a server's failure: each start was cut short.
			ee = &engine.Error{Kind: engine.KindUnavailable, Message: "the session was stopped (mcpctl down) while its servers started"}
		case !errors.As(err, &ee):
			ee = &engine.Error{Kind: engine.KindUnavailable, Message: err.Error()}
		}
		// Kept before up is told: its next command (up || status) must
		// find it.
		if stopped {
			clearFailedStart(sess)
		} else if err := saveFailedStart(sess, cfg.Paths, ee, e.Status()); err != nil {
			logger.Warn("cannot keep why the start failed for mcpctl status", "error", err.Error())
		}
		notify(readyMsg{Error: ee})
		stopServing()
		<-served
		logger.Error("session ended before it was ready", "error", ee.Error())
		if d.Stopping() && ctx.Err() == nil {
			return ee // up --foreground says it as up does
		}
		return err
	}
	d.SetReady()
	clearFailedStart(sess)
	close(ready)
	info.Ready = true
	st := &engine.Status{Session: &info, Servers: e.Status()}
	notify(readyMsg{Status: st})
	if notifyFD == 0 {
		if err := printUp(p, st); err != nil {
			return err
		}
	}
	logger.Info("session ready")
	err = <-served
	if d.IdleEnded() {
		logger.Info("session ended: no request for its ttl", "ttl", ttl.String())
		return err
	}
	logger.Info("session ended")
	return err
}
