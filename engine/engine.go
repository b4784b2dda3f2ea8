// Package engine hosts MCP servers: it starts the servers a config lists,
// keeps a client session to each (on the official MCP Go SDK), keeps what
// each offers (tools, prompts, resources, resource templates) up to date,
// and routes requests to them by server.name.
//
// The same engine runs in-process for one-shot commands, inside the
// background session that `mcpctl up` starts (see [Daemon] and [Client]),
// and in any Go program that hosts MCP servers itself:
//
//	cfg, err := config.Load("mcp.json", config.Options{})
//	if err != nil { ... }                    // *config.Error: file:line:col, field, hint
//	e := engine.New(cfg, &engine.Options{
//		Sampling: mySampler,                 // answers servers' sampling requests
//	})
//	defer e.Close()                          // stops every server, reaps every process
//	if err := e.Start(ctx); err != nil { ... } // all servers, in parallel, all or nothing
//
//	tools, _ := e.Tools("")                  // every tool, named server.tool
//	for _, t := range tools {
//		fmt.Println(t.Name(), t.Parameters())
//	}
//	res, err := e.CallTool(ctx, &engine.CallRequest{
//		Name:  "fs.read_text_file",
//		Pairs: []string{"path=README.md"},   // typed by the tool's schema, then validated
//	})
//	prompt, err := e.GetPrompt(ctx, &engine.PromptRequest{Name: "everything.args-prompt", Arguments: args})
//	doc, err := e.ReadResource(ctx, &engine.ResourceRequest{URI: "demo://resource/dynamic/text/1"})
//	sub := e.Events(engine.EventFilter{})    // state, list changes, logs, progress
//	fmt.Println(e.Metrics())                 // requests, errors, latency per method
//
// Results are the JSON the server sent ([CallResult.Result] and friends), so
// nothing the server said is lost; errors are [*Error], whose [Kind] says
// what to do about them, but for the caller's own giving up: a request
// whose context ends before an answer returns ctx's error (with errors.Is,
// [context.Canceled] or [context.DeadlineExceeded]).
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpctl/mcpctl/config"
)

// Options tune an [Engine]. The zero value is usable; nil means defaults.
type Options struct {
	// Logger receives the engine's structured log; nil discards it.
	Logger *slog.Logger
	// LogDir holds one <server>.log per server with its stderr; empty
	// keeps stderr only in memory (the last lines, for error messages).
	LogDir string
	// Trace, with LogDir, appends every JSON-RPC message each server sends
	// and receives to <server>.wire.jsonl there. For debugging: messages
	// carry arguments and results as they are.
	Trace bool
	// RequestTimeout is how long a request that sets no timeout may go
	// without an answer, for servers whose config sets no requestTimeout
	// (progress starts it again, as CallRequest.TimeoutMs says). Default
	// 60s; when set, it wins over the configs.
	RequestTimeout time.Duration
	// LazyLists makes a server list only its tools as it starts; its
	// prompts, resources and resource templates are listed the first time
	// something asks for them. For a host that makes one request and stops
	// (each list is a round trip to the server).
	LazyLists bool
	// ShutdownGrace is how long a server may take to exit after its stdin
	// closes before it gets SIGTERM. Default 100ms.
	ShutdownGrace time.Duration
	// ShutdownTimeout is how long SIGTERM has before SIGKILL, for servers
	// whose config sets no shutdownTimeout. Default 5s; when set, it wins
	// over the configs.
	ShutdownTimeout time.Duration
	// Sampling answers sampling/createMessage requests from servers that
	// neither the call's caller ([CallRequest.Sampling]) nor a hook in the
	// config answers; when nil, they get an error saying no one answers.
	Sampling RequestHandler
	// Elicitation answers elicitation/create requests as Sampling does
	// sampling; when nil, they are declined.
	Elicitation RequestHandler
	// Auth, when set, lets remote servers that ask for OAuth be
	// authorized with tokens kept in Auth.Dir.
	Auth *AuthOptions
	// CacheEntries and CacheBytes bound the cache of prompts and resource
	// reads. Defaults 1000 and 64 MiB.
	CacheEntries int
	CacheBytes   int
	// OnProcess, when set, is told of each server process group: with
	// running true right after the process started (pgid is its pid),
	// and with running false once it has been stopped and reaped. A
	// session uses it to have a watchdog kill what is left should it die.
	OnProcess func(pgid int, running bool)
}

const (
	defaultRequestTimeout  = 60 * time.Second
	defaultShutdownTimeout = 5 * time.Second
)

// An Engine hosts the servers of one config. Its methods are safe for
// concurrent use.
type Engine struct {
	opts   Options
	log    *slog.Logger
	sdkLog *slog.Logger

	// mu guards the config and the servers, which a reload replaces
	// (never changes in place).
	mu        sync.RWMutex
	cfg       *config.Config
	servers   map[string]*server
	order     []*server // config order
	configErr *Error    // the last reload's load error, until one succeeds
	reloadMu  sync.Mutex

	// holds are the watches' log levels, each on the servers it names
	// (nil: all), so that a server a reload adds is held as the ones it
	// was there for; holdMu is taken before mu. gone are the resource
	// subscriptions of servers a reload removed, by name, for a server
	// of that name it adds back.
	holdMu sync.Mutex
	holds  map[*levelHold]bool
	gone   map[string]*subscriptions

	tokens  atomic.Uint64
	closed  atomic.Bool
	bus     bus
	cache   *cache
	metrics *metrics

	progressMu sync.Mutex
	progressFn map[string]func(Progress) // by progress token

	// requestSet and shutdownSet say the options set these timeouts, which
	// then win over the servers' configs.
	requestSet, shutdownSet bool
	// made: New made the engine (set before it is returned, never after;
	// cfg, which a reload replaces, is read under mu).
	made bool
	// noConfig: New was given a nil config, which Start reports until a
	// reload gives it one.
	noConfig atomic.Bool
	// started: Start was called (or a reload started servers), so that a
	// listing before it can say so rather than list nothing.
	started atomic.Bool
	// streamLived is how long a remote server's event stream must have
	// been open for mcpctl to open it again when it ends (0: a second);
	// both are fields for tests.
	streamLived time.Duration
	// streamReopenWait is how long an event stream that ended may take to
	// open again before the server is degraded (0: 10 s).
	streamReopenWait time.Duration
}

// New returns an engine for cfg; no server starts until [Engine.Start].
// With a nil cfg it has no servers, and Start fails until [Engine.Reload]
// gives it a config. So with a cfg [config.Config.Validate] refuses (one
// built in Go with a dependency cycle, a server name given twice, a nil
// server...): then Start, and a request naming a server, fail with why,
// of kind config, which [Engine.ConfigError] returns too.
func New(cfg *config.Config, opts *Options) *Engine {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	requestSet, shutdownSet := o.RequestTimeout > 0, o.ShutdownTimeout > 0
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = defaultRequestTimeout
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = 100 * time.Millisecond
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = defaultShutdownTimeout
	}
	if o.CacheEntries <= 0 {
		o.CacheEntries = 1000
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = 64 << 20
	}
	noConfig := cfg == nil
	if noConfig {
		cfg = &config.Config{}
	}
	// A config built in Go is checked as a file is; one that fails
	// gives the engine no servers, as a nil one does.
	var invalid *Error
	if err := cfg.Validate(); err != nil {
		invalid = invalidConfig(err)
		noConfig = true
	}
	e := &Engine{
		cfg:        cfg,
		made:       true,
		opts:       o,
		log:        o.Logger,
		sdkLog:     o.Logger.With("component", "sdk"),
		servers:    map[string]*server{},
		cache:      newCache(o.CacheEntries, o.CacheBytes),
		metrics:    newMetrics(),
		progressFn: map[string]func(Progress){},
		requestSet: requestSet, shutdownSet: shutdownSet,
	}
	e.noConfig.Store(noConfig)
	if invalid != nil {
		e.configErr = invalid
		return e
	}
	for _, sc := range cfg.Servers {
		s := newServer(e, sc)
		e.servers[sc.Name] = s
		e.order = append(e.order, s)
	}
	return e
}

// invalidConfig is the engine's error for a config that does not pass
// [config.Config.Validate]: of kind config, its hints kept, err its cause.
func invalidConfig(err error) *Error {
	ee := errorf(KindConfig, "", "%s", err.Error()).wrap(err)
	var h interface{ Hints() []string }
	if errors.As(err, &h) {
		ee.Hint = h.Hints()
	}
	return ee
}

// Config returns the config the engine runs: the one it was made from, or
// the last one a reload applied.
func (e *Engine) Config() *config.Config {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.cfg
}

// all returns the servers in config order. A reload replaces the slice, so
// callers may range over it without the lock.
func (e *Engine) all() []*server {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.order
}

// Redact hides in text every secret of the config's servers (the values
// that came from the environment or inputs), as mcpctl hides them in its
// errors and logs: for text a program made from what servers answered,
// which mcpctl passes on as sent (a --jq filter's error, say). Stable.
func (e *Engine) Redact(text string) string { return e.redactAll(text) }

// redactAll hides every server's secrets in text, for text that may hold
// any of them.
func (e *Engine) redactAll(text string) string {
	for _, s := range e.all() {
		text = s.cfg().Redact(text)
	}
	return text
}

func (e *Engine) nextToken() string {
	return fmt.Sprintf("mcpctl-%d-%d", os.Getpid(), e.tokens.Add(1))
}

func (e *Engine) lookup(name string) (*server, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if s := e.servers[name]; s != nil {
		return s, nil
	}
	if e.cfg == nil {
		return nil, notMade() // a zero Engine
	}
	if e.noConfig.Load() && e.configErr != nil { // e.mu held: not refusedConfig
		return nil, e.configErr.clone() // a config New or a reload could not use
	}
	return nil, UnknownServer(name, e.cfg.Names())
}

// Start starts the named servers, or all that start with the engine when
// none are named (not disabled, activation eager, not stopped by hand with
// [Engine.Stop]), with the servers they depend on: independent ones in
// parallel, each dependent once its dependencies are ready. It is all or
// nothing: when one fails, the others are stopped and the error names
// every server that failed and why. Problems found before starting (a
// command not on PATH, a missing cwd) fail the start before anything runs,
// as config errors. A start that fails, or whose ctx ends, returns once
// what it started is stopped again, which a server slow to stop can make
// last up to its shutdownTimeout longer.
func (e *Engine) Start(ctx context.Context, names ...string) error {
	run, err := e.beginStart(names)
	if err != nil {
		return err
	}
	return run(ctx)
}

// StartAsync is [Engine.Start] in the background: it returns at once, with
// wait, which returns what Start returned once it is over. A request made
// meanwhile (a call, a listing) to a server the start brings up waits for
// that server, as for one starting, instead of finding it stopped: a
// session serves its socket while its servers start.
func (e *Engine) StartAsync(ctx context.Context, names ...string) (wait func() error) {
	run, err := e.beginStart(names)
	if err != nil {
		return func() error { return err }
	}
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	return sync.OnceValue(func() error { return <-done })
}

// beginStart does what Start does before anything runs (the checks, the
// servers it brings up marked so that requests wait for them) and returns
// the rest.
func (e *Engine) beginStart(names []string) (run func(context.Context) error, err error) {
	if !e.made {
		return nil, notMade()
	}
	if e.noConfig.Load() {
		if ce := e.refusedConfig(); ce != nil {
			return nil, ce // New's config, or a reload's, did not validate
		}
		return nil, errorf(KindUsage, "", "the engine has no config: engine.New was given a nil *config.Config").
			hint("load one with config.Load or config.Parse, and pass it to engine.New")
	}
	// Called, whether or not the start goes well: a listing after a
	// failed Start is not told Start was never called.
	e.started.Store(true)
	targets, err := e.targets(names)
	if err != nil {
		return nil, err
	}
	if refused, err := precheck(targets, false); err != nil {
		// A named server so refused is unavailable with why, no longer
		// stopped by hand; a dependency stopped by hand stays so.
		for s := range refused {
			if slices.Contains(names, s.cfg().Name) {
				s.byHand()
			}
		}
		failChecked(refused)
		return nil, err
	}
	if len(names) > 0 {
		// Named: started by hand, whatever stopped them before.
		for _, s := range targets {
			s.byHand()
		}
	}
	var fresh []*server // what this start brings up, and stops on failure
	marks := map[*server]func(){}
	for _, s := range targets {
		if st := s.currentState(); st != StateReady && st != StateDegraded {
			fresh = append(fresh, s)
			marks[s] = s.markRestarting()
		}
	}
	return func(ctx context.Context) error { return e.runStart(ctx, targets, fresh, marks) }, nil
}

// runStart is the rest of Start: it starts targets and, when one fails,
// stops fresh (what it brought up) again. Each server's mark is undone
// once its own start is over.
func (e *Engine) runStart(ctx context.Context, targets, fresh []*server, marks map[*server]func()) error {
	errs := e.startTogether(ctx, targets, true, marks)
	if err := ctx.Err(); err != nil {
		e.stopAll(fresh)
		return startCut(err, fresh, errs)
	}
	// A server whose start was cut short because another failed, or that
	// never started because a dependency failed, is not a failure of its
	// own; any other error is.
	var failed, interrupted []*Error
	for _, s := range targets {
		err := errs[s]
		if err == nil {
			continue
		}
		if errors.Is(err, context.Canceled) && s.handedOver() {
			continue // not this start's to report, nor to undo
		}
		ee := serverError(s, err)
		if errors.Is(err, context.Canceled) || errors.Is(err, errDependency) {
			interrupted = append(interrupted, ee)
		} else {
			failed = append(failed, ee)
		}
	}
	if len(failed) == 0 && len(interrupted) == 0 {
		return nil
	}
	e.stopAll(fresh)
	if len(failed) == 0 && e.closed.Load() {
		// Nothing failed by itself: Close stopped the start.
		names := make([]string, len(interrupted))
		for i, ee := range interrupted {
			names[i] = ee.Server
		}
		return errorf(KindUnavailable, "", "the engine was closed during the start of %s", strings.Join(names, ", "))
	}
	if len(failed) == 0 {
		return combine(interrupted)
	}
	out := combine(failed)
	if len(failed) == 1 {
		out = failed[0].clone() // the server's kept error is not changed
	}
	// Which servers the failure kept from starting, or called off: the
	// one a call named, perhaps, which the message does not name. Their
	// status says why (notStarted, or their start's own words).
	for _, ee := range interrupted {
		if s, err := e.lookup(ee.Server); err == nil {
			if why := s.status().LastError; why != "" && !slices.Contains(out.Hint, why) {
				out.hint("%s", why)
			}
		}
	}
	return out
}

// startCut is the error of a start that ctx cut short, naming the servers
// that were still starting (see [deadlineError]).
func startCut(err error, fresh []*server, errs map[*server]error) error {
	var names []string
	for _, s := range fresh {
		if errs[s] != nil {
			names = append(names, s.cfg().Name)
		}
	}
	switch len(names) {
	case 0:
		return deadlineError(err, "", "the start of the servers")
	case 1:
		return deadlineError(err, names[0], "the start of server "+names[0])
	}
	return deadlineError(err, "", "the start of servers "+strings.Join(names, ", "))
}

// startTogether starts targets, independent ones in parallel and each
// dependent once its dependencies are ready, and returns the error of each
// that did not start. With cancelOnFailure, one failure cuts the other
// starts short. A server's mark, if marks has one, is undone when its own
// start is over.
func (e *Engine) startTogether(ctx context.Context, targets []*server, cancelOnFailure bool, marks map[*server]func()) map[*server]error {
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(map[*server]chan struct{}, len(targets))
	for _, s := range targets {
		done[s] = make(chan struct{})
	}
	errs := make(map[*server]error, len(targets))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, s := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done[s])
			mark := marks[s]
			if mark != nil {
				defer mark()
			}
			if st := s.currentState(); marks != nil && mark == nil && (st == StateReady || st == StateDegraded) {
				// Running when Start was called, and still: nothing to
				// start, nor dependencies to wait for (one stopped by
				// hand since stays so, and is no failure of this Start).
				return
			}
			err := e.awaitDependencies(sctx, s, done, errs, &mu)
			if err == nil {
				err = s.start(sctx)
			} else {
				s.notStarted(sctx, err)
			}
			if err != nil && cancelOnFailure && !(errors.Is(err, context.Canceled) && s.handedOver()) {
				// The first failure is the cause; a server taken over by
				// hand (stopped, restarted) did not fail.
				cancel(startCutBy{s.cfg().Name})
			}
			mu.Lock()
			if err != nil {
				errs[s] = err
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return errs
}

// startCutBy is why a start was cut short: server failed to start, and
// the start of the others with it was called off.
type startCutBy struct{ server string }

func (c startCutBy) Error() string { return "server " + c.server + " failed to start" }

func serverError(s *server, err error) *Error {
	var ee *Error
	if !errors.As(err, &ee) {
		ee = errorf(KindUnavailable, s.cfg().Name, "%s", s.said(err)).wrap(err)
	}
	return ee
}

var errDependency = errors.New("a dependency did not start")

// awaitDependencies waits until s's dependencies are ready.
func (e *Engine) awaitDependencies(ctx context.Context, s *server, done map[*server]chan struct{}, errs map[*server]error, mu *sync.Mutex) error {
	for _, name := range s.cfg().DependsOn {
		dep, err := e.lookup(name)
		if err != nil {
			return err
		}
		ch, starting := done[dep]
		if !starting {
			// Not started with s (a reload restarting s alone): it must be
			// running, or start on use, as for a request.
			if err := s.startDependency(ctx, dep); err != nil {
				return err
			}
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
			if _, cut := context.Cause(ctx).(startCutBy); !cut {
				return ctx.Err() // the caller gave up
			}
			// A failure called the start off; the dependency's own
			// start ends with it, and tells whether it failed.
			<-ch
		}
		mu.Lock()
		failed := errs[dep]
		mu.Unlock()
		switch {
		case failed != nil && errors.Is(failed, context.Canceled):
			return ctx.Err() // cut short by another's failure, not failed
		case failed != nil:
			return errorf(KindUnavailable, s.cfg().Name, "server %s was not started: its dependency %s did not start", s.cfg().Name, name).wrap(errDependency)
		}
	}
	return ctx.Err() // called off meanwhile: s is not begun
}

// notStarted tells, in s's state, why a start never began s: a dependency
// failed, or another server's failure called the whole start off. Without
// it s would stay stopped with no error, and a listing or a watch would
// leave it out in silence. The caller giving up is not told: s was never
// tried.
func (s *server) notStarted(ctx context.Context, err error) {
	cut, isCut := context.Cause(ctx).(startCutBy)
	e, ok := err.(*Error)
	switch {
	case ctx.Err() != nil && !isCut:
		return // the caller gave up (a dependency's start on use, say)
	case !ok && !isCut:
		return
	case !ok:
		e = errorf(KindUnavailable, s.cfg().Name, "server %s: start called off, as %s", s.cfg().Name, cut).wrap(err)
	}
	failChecked(map[*server]*Error{s: e})
}

// dependenciesDown names the servers that the named ones depend on, at any
// depth, and that are not running: those a start of the named ones brings
// up as well.
func (e *Engine) dependenciesDown(names []string) []string {
	targets, err := e.targets(names)
	if err != nil {
		return nil // the start fails the same way, and says why
	}
	var out []string
	for _, s := range targets {
		name := s.cfg().Name
		if st := s.currentState(); !slices.Contains(names, name) && st != StateReady && st != StateDegraded {
			out = append(out, name)
		}
	}
	return out
}

// targets are the servers to start for names, with what they depend on,
// in config order.
func (e *Engine) targets(names []string) ([]*server, error) {
	if len(names) == 0 {
		var out []*server
		for _, s := range e.all() {
			// One stopped by hand stays stopped until it is named.
			if s.autoStarts() && !s.isHeld() {
				out = append(out, s)
			}
		}
		return out, nil
	}
	want := map[*server]bool{}
	var add func(name string) error
	add = func(name string) error {
		s, err := e.lookup(name)
		if err != nil {
			return err
		}
		if s.cfg().Disabled {
			return s.disabledError()
		}
		if want[s] {
			return nil
		}
		want[s] = true
		for _, dep := range s.cfg().DependsOn {
			if err := add(dep); err != nil {
				return err
			}
		}
		return nil
	}
	for _, n := range names {
		if err := add(n); err != nil {
			return nil, err
		}
	}
	var out []*server
	for _, s := range e.all() {
		if want[s] {
			out = append(out, s)
		}
	}
	return out, nil
}

// precheck refuses a start that cannot succeed, before anything runs: a
// command that is not found, a cwd that does not exist, limits that cannot
// be applied, TLS files that are missing. A server that is ready is not
// checked unless running is set (a restart's check). It returns the
// first problem of each server refused, and all of them as one error.
func precheck(targets []*server, running bool) (map[*server]*Error, error) {
	var errs []*Error
	first := map[*server]*Error{}
	for _, s := range targets {
		if !running && s.currentState() == StateReady {
			continue
		}
		for _, ce := range s.cfg().Check() {
			e := checkError(ce).(*Error)
			errs = append(errs, e)
			if first[s] == nil {
				first[s] = e
			}
		}
	}
	if len(errs) > 0 {
		return first, combine(errs)
	}
	return nil, nil
}

// failChecked marks servers that are not running, nor stopped by hand,
// unavailable with why, so that their status says it: those precheck
// refused, and those a start never began (notStarted).
func failChecked(first map[*server]*Error) {
	for s, e := range first {
		s.mu.Lock()
		if !s.lc.held && (s.state == StateStopped || s.state == StateUnavailable) {
			s.setState(StateUnavailable, e)
		}
		s.mu.Unlock()
	}
}

// handedOver says whether s, whose start was cut short, was taken over by
// hand meanwhile: stopped or restarted (a stop, restart or reload while
// "up" still started it), or replaced by a reload. The start that was cut
// neither failed nor was interrupted: the session goes on.
func (s *server) handedOver() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lc.held || s.lc.retired || s.lc.byHandRestart != nil ||
		s.state == StateStarting || s.state == StateReady || s.state == StateDegraded
}

// byHand clears what stopped the server for good before a start by hand:
// a stop by hand, a restart policy that gave up.
func (s *server) byHand() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lc.held, s.lc.gaveUp, s.lc.restarts = false, false, 0
}

// combine reports several start failures as one error, one line each: a
// config error if every one is.
func combine(failed []*Error) *Error {
	if len(failed) == 1 {
		return failed[0]
	}
	msgs := make([]string, len(failed))
	combined := &Error{Kind: KindConfig, Server: failed[0].Server}
	for i, f := range failed {
		msgs[i] = f.Error()
		combined.Hint = append(combined.Hint, f.Hint...)
		if f.Kind != KindConfig {
			combined.Kind = KindUnavailable
		}
	}
	combined.Message = strings.Join(msgs, "\n")
	return combined
}

func (e *Engine) stopAll(servers []*server) { e.stopEach(servers, nil) }

// stopEach stops servers at once, calling stopped (when not nil) with each
// as soon as it has stopped, and returns when all have.
func (e *Engine) stopEach(servers []*server, stopped func(*server)) {
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.stop()
			if stopped != nil {
				stopped(s)
			}
		}()
	}
	wg.Wait()
}

// Close stops every server and waits until their processes are gone. No
// server starts after Close. Subscriptions end once their servers' stop is
// told: their channels close, and a Watch returns. Close is idempotent,
// and does nothing on a nil *Engine (a deferred Close after a failed setup).
func (e *Engine) Close() error {
	if e == nil {
		return nil
	}
	e.closed.Store(true)
	e.stopAll(e.all())
	e.bus.close()
	return nil
}

// Status reports every configured server, in config order.
func (e *Engine) Status() []ServerStatus {
	servers := e.all()
	out := make([]ServerStatus, len(servers))
	for i, s := range servers {
		out[i] = s.status()
	}
	return out
}

// Events subscribes to what happens to the servers; see [Event]. Close the
// subscription when done. After [Engine.Close], its channel is closed. A
// type or a server in f that does not exist matches nothing and is not
// refused (a server a reload adds later is heard of); [CheckEventTypes]
// and [Engine.Watch] refuse them.
func (e *Engine) Events(f EventFilter) *Subscription { return e.bus.subscribe(f) }

// watchProgress routes the progress notifications for token to fn until the
// returned function is called.
func (e *Engine) watchProgress(token string, fn func(Progress)) (stop func()) {
	e.progressMu.Lock()
	e.progressFn[token] = fn
	e.progressMu.Unlock()
	return func() {
		e.progressMu.Lock()
		delete(e.progressFn, token)
		e.progressMu.Unlock()
	}
}

// progress delivers a progress notification to its caller and to watchers.
func (e *Engine) progress(server string, token any, p Progress) {
	if t, ok := token.(string); ok {
		e.progressMu.Lock()
		fn := e.progressFn[t]
		e.progressMu.Unlock()
		if fn != nil {
			fn(p)
		}
	}
	e.bus.publish(Event{Type: EventProgress, Server: server, Token: token, Progress: p.Progress, Total: p.Total, Message: p.Message})
}

// SplitName splits server.tool at the first dot (server names have none).
func SplitName(name string) (server, tool string, err error) { return splitName(name, "tool") }

// SplitPromptName is SplitName for server.prompt.
func SplitPromptName(name string) (server, prompt string, err error) {
	return splitName(name, "prompt")
}

// splitName is SplitName for a tool or a prompt.
func splitName(name, what string) (server, item string, err error) {
	server, item, ok := strings.Cut(name, ".")
	if !ok || server == "" || item == "" {
		example := map[string]string{"tool": "everything.echo", "prompt": "everything.simple-prompt"}[what]
		return "", "", errorf(KindUsage, "", "%q is not a server.%s name", name, what).
			hint("name a %s as server.%s, e.g. %s; list them with: mcpctl %ss", what, what, example, what)
	}
	return server, item, nil
}

// withoutServer is err, of a name that is not server.item, with the items
// so named that the servers offer as its candidates: a client that left
// the server out ("echo") is told which one it may mean. Servers not
// running are not started for it, nor lists waited for.
func (e *Engine) withoutServer(name, what string, err error) error {
	if name == "" || strings.Contains(name, ".") {
		return err
	}
	list := map[string]string{"tool": listTools, "prompt": listPrompts}[what]
	e.mu.RLock()
	servers := slices.Collect(maps.Values(e.servers))
	e.mu.RUnlock()
	var offered []string
	for _, s := range servers {
		// What it offers now, as it is: an error's hint waits for no
		// list (offer would fill one not listed yet, or wait for a
		// refresh).
		s.mu.Lock()
		sn := s.offered
		if sn == nil {
			sn = s.snap
		}
		s.mu.Unlock()
		if sn == nil {
			continue
		}
		offered = append(offered, sn.names(list)...)
	}
	return NamedWithoutServer(err, name, what, offered)
}

// NamedWithoutServer is err, of a name that is not server.item ("echo"),
// told among offered, the full names (server.item) of what is offered: the
// ones so named are its candidates (did you mean fake.echo?), else an
// offered one is its example.
func NamedWithoutServer(err error, name, what string, offered []string) error {
	ee := asError(err)
	if ee == nil {
		return err
	}
	ee = ee.clone()
	var near []string
	for _, n := range offered {
		if _, item, _ := strings.Cut(n, "."); item == name && !slices.Contains(near, n) {
			near = append(near, n)
		}
	}
	if len(near) == 0 {
		if len(offered) > 0 {
			// An example of this config's, not of a server it may not have.
			ee.Hint = []string{fmt.Sprintf("name a %s as server.%s, e.g. %s; list them with: mcpctl %ss", what, what, slices.Min(offered), what)}
		}
		return ee
	}
	slices.Sort(near)
	ee.Candidates = near
	mean := near[0]
	if len(near) > 1 {
		mean = "one of: " + strings.Join(near, ", ")
	}
	ee.Hint = []string{fmt.Sprintf("did you mean %s? a %s is named server.%s", mean, what, what)}
	return ee
}

// splitFilter reads a listing's filter: "" (every server), a server, or
// server.item.
func splitFilter(filter, what string) (server, item string, one bool, err error) {
	if !strings.Contains(filter, ".") {
		return filter, "", false, nil
	}
	server, item, err = splitName(filter, what)
	return server, item, true, err
}
