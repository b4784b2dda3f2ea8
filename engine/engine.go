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
//	prompt, err := e.GetPrompt(ctx, &engine.PromptRequest{Name: "fs.summarize", Arguments: args})
//	doc, err := e.ReadResource(ctx, &engine.ResourceRequest{URI: "file:///README.md"})
//	sub := e.Events(engine.EventFilter{})    // state, list changes, logs, progress
//	fmt.Println(e.Metrics())                 // requests, errors, latency per method
//
// Results are the JSON the server sent ([CallResult.Result] and friends), so
// nothing the server said is lost; errors are [*Error], whose [Kind] says
// what to do about them.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
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
	// RequestTimeout bounds a call that sets no timeout. Default 60s.
	RequestTimeout time.Duration
	// ShutdownGrace is how long a server may take to exit after its stdin
	// closes before it gets SIGTERM. Default 100ms.
	ShutdownGrace time.Duration
	// ShutdownTimeout is how long SIGTERM has before SIGKILL. Default 5s.
	ShutdownTimeout time.Duration
	// Sampling answers sampling/createMessage requests from servers;
	// when nil, servers are not offered sampling.
	Sampling RequestHandler
	// Elicitation answers elicitation/create requests from servers; when
	// nil, servers are not offered elicitation.
	Elicitation RequestHandler
	// CacheEntries and CacheBytes bound the cache of prompts and resource
	// reads. Defaults 1000 and 64 MiB.
	CacheEntries int
	CacheBytes   int
}

// An Engine hosts the servers of one config. Its methods are safe for
// concurrent use.
type Engine struct {
	cfg     *config.Config
	opts    Options
	log     *slog.Logger
	sdkLog  *slog.Logger
	servers map[string]*server
	order   []*server
	tokens  atomic.Uint64
	closed  atomic.Bool
	bus     bus
	cache   *cache
	metrics *metrics

	progressMu sync.Mutex
	progressFn map[string]func(Progress) // by progress token
}

// New returns an engine for cfg; no server starts until [Engine.Start].
func New(cfg *config.Config, opts *Options) *Engine {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 60 * time.Second
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = 100 * time.Millisecond
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 5 * time.Second
	}
	if o.CacheEntries <= 0 {
		o.CacheEntries = 1000
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = 64 << 20
	}
	e := &Engine{
		cfg:        cfg,
		opts:       o,
		log:        o.Logger,
		sdkLog:     o.Logger.With("component", "sdk"),
		servers:    map[string]*server{},
		cache:      newCache(o.CacheEntries, o.CacheBytes),
		metrics:    newMetrics(),
		progressFn: map[string]func(Progress){},
	}
	for _, sc := range cfg.Servers {
		s := newServer(e, sc)
		e.servers[sc.Name] = s
		e.order = append(e.order, s)
	}
	return e
}

// Config returns the config the engine was made from.
func (e *Engine) Config() *config.Config { return e.cfg }

func (e *Engine) nextToken() string {
	return fmt.Sprintf("mcpctl-%d-%d", os.Getpid(), e.tokens.Add(1))
}

func (e *Engine) lookup(name string) (*server, error) {
	if s := e.servers[name]; s != nil {
		return s, nil
	}
	return nil, unknownName("server", name, "", e.cfg.Names())
}

// Start starts the named servers, or all when none are named, in parallel
// and all or nothing: when one fails, the others are stopped and the error
// names every server that failed and why.
func (e *Engine) Start(ctx context.Context, names ...string) error {
	targets := e.order
	if len(names) > 0 {
		targets = nil
		for _, n := range names {
			s, err := e.lookup(n)
			if err != nil {
				return err
			}
			targets = append(targets, s)
		}
	}
	// A command that cannot be found fails the start before anything runs.
	var missing []*Error
	for _, s := range targets {
		if _, err := resolveCommand(s.cfg); err != nil {
			var ee *Error
			errors.As(err, &ee)
			missing = append(missing, ee)
		}
	}
	if len(missing) > 0 {
		return combine(missing)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, s := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = s.start(sctx); errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		e.stopAll(targets)
		return err
	}
	// A server whose start was cut short because another failed is not a
	// failure of its own; any other error is.
	var failed, interrupted []*Error
	for _, err := range errs {
		if err == nil {
			continue
		}
		var ee *Error
		if !errors.As(err, &ee) {
			ee = errorf(KindUnavailable, "", "%v", err).wrap(err)
		}
		if errors.Is(err, context.Canceled) {
			interrupted = append(interrupted, ee)
		} else {
			failed = append(failed, ee)
		}
	}
	if len(failed) == 0 && len(interrupted) == 0 {
		return nil
	}
	e.stopAll(targets)
	if len(failed) == 0 {
		// Nothing failed by itself: Close stopped the start.
		return combine(interrupted)
	}
	return combine(failed)
}

// combine reports several start failures as one error, one line each.
func combine(failed []*Error) error {
	if len(failed) == 1 {
		return failed[0]
	}
	msgs := make([]string, len(failed))
	combined := &Error{Kind: KindUnavailable, Server: failed[0].Server}
	for i, f := range failed {
		msgs[i] = f.Error()
		combined.Hint = append(combined.Hint, f.Hint...)
	}
	combined.Message = strings.Join(msgs, "\n")
	return combined
}

func (e *Engine) stopAll(servers []*server) {
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() { defer wg.Done(); s.stop() }()
	}
	wg.Wait()
}

// Close stops every server and waits until their processes are gone. No
// server starts after Close. Close is idempotent.
func (e *Engine) Close() error {
	e.closed.Store(true)
	e.stopAll(e.order)
	return nil
}

// Status reports every configured server, in config order.
func (e *Engine) Status() []ServerStatus {
	out := make([]ServerStatus, len(e.order))
	for i, s := range e.order {
		out[i] = s.status()
	}
	return out
}

// Events subscribes to what happens to the servers; see [Event]. Close the
// subscription when done.
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
func SplitName(name string) (server, tool string, err error) {
	server, tool, ok := strings.Cut(name, ".")
	if !ok || server == "" || tool == "" {
		return "", "", errorf(KindUsage, "", "%q is not a server.tool name", name).
			hint("name a tool as server.tool, e.g. everything.echo; list them with: mcpctl tools")
	}
	return server, tool, nil
}
