package commands

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/engine"
	"github.com/mcpctl/mcpctl/internal/ctxio"
)

// A host is where the servers live: the running session ([engine.Client]),
// or an engine started in this process for one command (localHost).
type host interface {
	Tools(ctx context.Context, filter string) ([]*engine.Tool, error)
	CallTool(ctx context.Context, req *engine.CallRequest) (*engine.CallResult, error)
	Prompts(ctx context.Context, filter string) ([]*engine.Prompt, error)
	GetPrompt(ctx context.Context, req *engine.PromptRequest) (*engine.PromptResult, error)
	Resources(ctx context.Context, server string) (*engine.Resources, error)
	ReadResource(ctx context.Context, req *engine.ResourceRequest) (*engine.ResourceResult, error)
	Complete(ctx context.Context, req *engine.CompleteRequest) (*engine.CompleteResult, error)
	Inspect(ctx context.Context, server string) ([]*engine.Inspection, error)
	Watch(ctx context.Context, req *engine.WatchRequest, fn func(engine.Event) error) error
}

// localHost adapts an in-process engine to host.
type localHost struct {
	*engine.Engine
	// early holds the events since before the servers started, for a
	// watch that must not miss their first lines.
	early *engine.Subscription
	// serving: the host of serve, whose client cannot run a command again.
	serving bool
	// starting, with early, is the start under way as the watch runs: it
	// gives its error, if any, once it is over.
	starting <-chan error
}

func (h localHost) Watch(ctx context.Context, req *engine.WatchRequest, fn func(engine.Event) error) error {
	if h.early == nil {
		return h.Engine.Watch(ctx, req, fn)
	}
	if h.starting == nil {
		return h.Engine.WatchFrom(ctx, h.early, req, fn)
	}
	// The events come as the servers start (one slow to start must not
	// hold back another's); a start that fails ends the watch with why.
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case err := <-h.starting:
			if err != nil {
				// The events the failed start published (its state,
				// its stderr) are shown first: WatchFrom hands on what
				// it holds.
				cancel(startFailed{err})
			}
		case <-wctx.Done():
		}
	}()
	err := h.Engine.WatchFrom(wctx, h.early, req, fn)
	if sf, ok := context.Cause(wctx).(startFailed); ok && ctx.Err() == nil {
		return oneShotHints(sf.err)
	}
	return err
}

// startFailed is the cause of a watch ended by its servers' start.
type startFailed struct{ err error }

func (s startFailed) Error() string { return s.err.Error() }

// The requests of a command without a session say to run it again where
// the engine says to restart a server (see oneShotHints); serve's, what its
// client can expect.
func (h localHost) CallTool(ctx context.Context, req *engine.CallRequest) (*engine.CallResult, error) {
	res, err := h.Engine.CallTool(ctx, req)
	return res, h.hints(err)
}

func (h localHost) hints(err error) error {
	if h.serving {
		return serveHints(err)
	}
	return oneShotHints(err)
}

func (h localHost) GetPrompt(ctx context.Context, req *engine.PromptRequest) (*engine.PromptResult, error) {
	res, err := h.Engine.GetPrompt(ctx, req)
	return res, h.hints(err)
}

func (h localHost) ReadResource(ctx context.Context, req *engine.ResourceRequest) (*engine.ResourceResult, error) {
	res, err := h.Engine.ReadResource(ctx, req)
	return res, h.hints(err)
}

// The engine's lists take no context: a list a server is slow to give
// (lazily, on its first use) must still end with the command's (Ctrl-C,
// SIGTERM), whose end then stops the servers.

// listHints are a list's hints without a session (see oneShotHints);
// serve's lists are said on its own stderr, where they are true.
func (h localHost) listHints(err error) error {
	if h.serving {
		return err
	}
	return oneShotHints(err)
}

func (h localHost) Tools(ctx context.Context, filter string) ([]*engine.Tool, error) {
	res, err := ctxio.Until(ctx, func() ([]*engine.Tool, error) { return h.Engine.Tools(filter) })
	return res, h.listHints(err)
}

func (h localHost) Prompts(ctx context.Context, filter string) ([]*engine.Prompt, error) {
	res, err := ctxio.Until(ctx, func() ([]*engine.Prompt, error) { return h.Engine.Prompts(filter) })
	return res, h.listHints(err)
}

func (h localHost) Resources(ctx context.Context, server string) (*engine.Resources, error) {
	res, err := ctxio.Until(ctx, func() (*engine.Resources, error) { return h.Engine.Resources(server) })
	return res, h.listHints(err)
}

func (h localHost) Inspect(ctx context.Context, server string) ([]*engine.Inspection, error) {
	res, err := ctxio.Until(ctx, func() ([]*engine.Inspection, error) { return h.Engine.Inspect(server) })
	return res, h.listHints(err)
}

// withHost runs fn against the session when one answers. Otherwise it loads
// the config, starts only the servers that need(cfg) names (all when it
// names none), runs fn against them and stops them before returning.
//
// Falling back is safe: a session that is not there fails at dial time,
// before anything was sent.
func (env *Env) withHost(ctx context.Context, need func(*config.Config) ([]string, error), fn func(host) error) error {
	return env.withHostOpts(ctx, need, hostOptions{}, fn)
}

// hostOptions are what a command asks of the servers withHostOpts starts
// when there is no session.
type hostOptions struct {
	// early: the events subscribed to before the servers start, so that a
	// watch sees them from their first line.
	early *engine.EventFilter
	// guard: a watchdog kills the servers' process groups should this
	// process be killed (kill -9) before it stops them, as a session's
	// does. For commands that run long (serve, watch); it costs a process
	// start, which a one-shot call would feel.
	guard bool
	// partial: with no server named, each server starts on its own, and
	// one that cannot start leaves the others running, for the lists that
	// say which they leave out (tools, prompts, resources, inspect) and
	// for serve. A config error still fails the command, as does every
	// server failing.
	partial bool
	// serving: the command is serve (see localHost.hints).
	serving bool
	// startWithin, when set, bounds the servers' start: a request's
	// --timeout, which the user means for the whole command.
	startWithin time.Duration
	// startCtx, when set, is the servers' start's, where ctx is what else
	// the command does: serve gives their start up when its client went
	// away while they started, the config still loaded and checked.
	startCtx context.Context
}

// withHostOpts is withHost with options for the servers it starts.
func (env *Env) withHostOpts(ctx context.Context, need func(*config.Config) ([]string, error), hopts hostOptions, fn func(host) error) error {
	// A bad --header is refused whether or not a session answers.
	if _, err := env.headers(); err != nil {
		return err
	}
	client, sess, err := env.client()
	if err != nil {
		return err
	}
	// serve follows the lists' changes: it does not wait for a server
	// still starting, which may be itself (a config that serves itself).
	client.NoWait = hopts.serving
	env.redact = func(text string) (string, bool) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if r, err := client.Redact(ctx, text); err == nil {
			return r, true
		}
		return redactedWhole, false // a session of an older mcpctl, or gone: nothing is known (see redactResultError)
	}
	err = fn(client)
	if !errors.Is(err, engine.ErrNoSession) {
		if len(env.headerFlags) > 0 {
			// A credential tried this way would seem to work.
			env.note("warning: --header was not sent: session %s answered, and its servers keep the headers they started with", sess.Name)
		}
		return err
	}
	if !env.noteStale(sess, "running this command without a session") && env.sessionFlag != "" {
		// Named on the command line, it was expected to answer: a
		// stateful tool would otherwise run against fresh servers unsaid.
		env.note("session %s is not running: running this command without it, on servers started for it alone", sess.Name)
	}
	cfg, err := env.loadConfig()
	if err != nil {
		return err
	}
	names, err := need(cfg)
	if err != nil {
		return err
	}
	opts := env.engineOptions(sess, slog.New(&hintedWarnings{env: env}))
	if err := sess.CheckStateDir(); err != nil {
		// Not refused, as up is: the command needs no logs to run.
		env.note("warning: %s; its servers' stderr is not logged", err.Message)
		for _, h := range err.Hint {
			env.note("hint: %s", h)
		}
		opts.LogDir = ""
	}
	opts.ShutdownGrace = oneShotGrace
	opts.LazyLists = true
	if hopts.guard {
		if wd, err := startWatchdog(false); err != nil {
			env.note("warning: cannot start the watchdog (%v); a kill -9 of mcpctl would leave what its servers started running", err)
		} else {
			// Closed after the servers are stopped (deferred first).
			defer wd.close()
			opts.OnProcess = wd.report(func(msg string, args ...any) {
				if len(args) == 2 {
					msg += fmt.Sprintf(" (%v: %v)", args[0], args[1])
				}
				env.note("warning: %s", msg)
			})
		}
	}
	// --timeout bounds the start: as each server's startupTimeout, so that
	// a server failing on its own says so, with its stderr.
	bounded := map[string]bool{} // the servers whose start --timeout bounds
	for _, s := range cfg.Servers {
		if hopts.startWithin > 0 && (s.StartupTimeout <= 0 || s.StartupTimeout > hopts.startWithin) {
			s.StartupTimeout = hopts.startWithin
			bounded[s.Name] = true
		}
	}
	e := engine.New(cfg, opts)
	defer e.Close()
	env.redact = func(text string) (string, bool) { return e.Redact(text), true }
	h := localHost{Engine: e, serving: hopts.serving}
	if hopts.early != nil {
		h.early = e.Events(*hopts.early)
		defer h.early.Close()
	}
	// begin starts the servers (marked as starting, so that a request
	// waits for them); wait gives the start's error once it is over.
	startCtx := cmp.Or(hopts.startCtx, ctx)
	begin := func() (wait func() error) {
		if hopts.partial && len(names) == 0 {
			return startEach(startCtx, e, cfg)
		}
		return e.StartAsync(startCtx, names...)
	}
	if hopts.early != nil && hopts.startWithin == 0 {
		// The watch goes on as they start (a subscription it makes
		// waits for them).
		wait := begin()
		starting := make(chan error, 1)
		go func() { starting <- wait() }()
		h.starting = starting
		return oneShotHints(fn(h))
	}
	if err := begin()(); err != nil {
		var e *engine.Error
		if engine.StartTimedOut(err) && errors.As(err, &e) && bounded[e.Server] {
			// The --timeout ran out, not the server's own startupTimeout:
			// the error keeps what it says of the server (its stderr).
			e.Kind = engine.KindTimeout
			within := " within " + hopts.startWithin.String()
			e.Message = strings.Replace(e.Message, within, within+" (--timeout)", 1)
			e.Hint = []string{"without a session, --timeout bounds the servers' start too: give it longer, or start them once with: mcpctl up"}
			return err
		}
		// A start that failed, as up says it (exit 3), a broken
		// handshake included.
		return oneShotHints(asStartFailure(err))
	}
	return oneShotHints(fn(h))
}

// withHostTimed is withHost for a request with --timeout (0: none): see
// hostOptions.startWithin.
func (env *Env) withHostTimed(ctx context.Context, need func(*config.Config) ([]string, error), timeout time.Duration, fn func(host) error) error {
	return env.withHostOpts(ctx, need, hostOptions{startWithin: timeout}, fn)
}

// withHostLists is withHost for a listing: see hostOptions.partial.
func (env *Env) withHostLists(ctx context.Context, need func(*config.Config) ([]string, error), fn func(host) error) error {
	return env.withHostOpts(ctx, need, hostOptions{partial: true}, fn)
}

// startEach starts every server that starts with the engine, each on its
// own and in parallel (see hostOptions.partial): each start is under way
// when it returns, and wait gives their error.
func startEach(ctx context.Context, e *engine.Engine, cfg *config.Config) (wait func() error) {
	var names []string
	for _, s := range cfg.Servers {
		if !s.Disabled && (s.Activation == "" || s.Activation == "eager") {
			names = append(names, s.Name)
		}
	}
	waits := make([]func() error, len(names))
	for i, name := range names {
		waits[i] = e.StartAsync(ctx, name)
	}
	return func() error { return finishEach(ctx, e, names, waits) }
}

// finishEach waits for the starts startEach began, and makes their
// errors one.
func finishEach(ctx context.Context, e *engine.Engine, names []string, waits []func() error) error {
	errs := make([]error, len(names))
	for i, wait := range waits {
		errs[i] = wait()
	}
	// A start that fails stops what it brought up, a dependency too, which
	// another start, done meanwhile, needs: such a one starts again.
	for _, st := range e.Status() {
		if j := slices.Index(names, st.Name); j >= 0 && errs[j] == nil && st.State != engine.StateReady && st.State != engine.StateDegraded {
			errs[j] = e.Start(ctx, names[j])
		}
	}
	var failed []string
	for i, err := range errs {
		switch {
		case err == nil:
		case engine.KindOf(err) == engine.KindConfig || ctx.Err() != nil:
			return err
		default:
			failed = append(failed, names[i])
		}
	}
	if len(failed) == 0 || len(failed) < len(names) {
		return nil
	}
	if len(errs) == 1 {
		return errs[0]
	}
	// A server a failed dependency kept from starting has that
	// dependency's error, which would be said twice: it is told by what
	// its status says of it instead.
	lastError := map[string]string{}
	for _, st := range e.Status() {
		lastError[st.Name] = st.LastError
	}
	var msgs []string
	for i, err := range errs {
		msg := err.Error()
		var ee *engine.Error
		if errors.As(err, &ee) && ee.Server != "" && ee.Server != names[i] && lastError[names[i]] != "" {
			msg = lastError[names[i]]
		}
		if !slices.Contains(msgs, msg) {
			msgs = append(msgs, msg)
		}
	}
	return &engine.Error{Kind: engine.KindUnavailable, Message: "no server could start:\n" + strings.Join(msgs, "\n"),
		Hint: []string{"check each server's command and arguments; see: mcpctl config show"}}
}

// oneShotHints rewrites the engine's hints about restarting a server
// ("mcpctl restart NAME", "restarts by itself") for a command that ran
// without a session: there is no session to restart the server in, and
// the next command starts it afresh.
func oneShotHints(err error) error {
	err = rewriteHints(err, "run the command again: without a session (mcpctl up), each command starts the servers it needs afresh", true)
	var e *engine.Error
	if errors.As(err, &e) {
		// Without a session, status knows nothing of the start that
		// failed (it shows the servers stopped): their logs do.
		for i, h := range e.Hint {
			h = strings.Replace(h, "see the server's state and log with: mcpctl status; mcpctl logs ", "see the server's log with: mcpctl logs ", 1)
			e.Hint[i] = strings.Replace(h, "see their states with: mcpctl status", "see each one's log with: mcpctl logs SERVER", 1)
		}
	}
	return err
}

// serveHints rewrites the hint to restart a server by hand for the client
// of a serve without a session: no session runs the server, serve does
// (and its restart policy still applies).
func serveHints(err error) error {
	return rewriteHints(err, "it stays down until mcpctl serve starts again (with serve --manage, the mcpctl.restart tool restarts it)", false)
}

// rewriteHints replaces the engine's hint to run mcpctl restart (and, with
// policyToo, the one that the policy restarts it) with instead.
func rewriteHints(err error, instead string, policyToo bool) error {
	var e *engine.Error
	if !errors.As(err, &e) {
		return err
	}
	for i, h := range e.Hint {
		if strings.HasPrefix(h, "start it again with: mcpctl restart ") || policyToo && strings.Contains(h, "restarts by itself (restart: on-failure)") {
			e.Hint[i] = instead
		}
	}
	return err
}

// oneShotGrace is how long a server started for one command has to exit
// after its stdin closes before it gets SIGTERM (a session's servers get the
// engine's default, 100ms). The command's caller waits for it: a server that
// exits on end of input (as Go SDK servers do, within a millisecond) is gone
// within it; a Node server, whose timers keep it alive, would make every
// one-shot command wait the whole grace, then take SIGTERM anyway
// (docs/performance.md: 10ms cost a one-shot call 3%). A server still at
// work when the grace ends (saving its state) gets longer, up to its
// shutdownTimeout (engine's process.waitExit).
const oneShotGrace = 2 * time.Millisecond

// serverOf returns a need function for one server.name or server name
// ("" for all servers).
func serverOf(name string) func(*config.Config) ([]string, error) {
	return func(cfg *config.Config) ([]string, error) {
		if name == "" {
			return nil, nil
		}
		srv := name
		if s, _, err := engine.SplitName(name); err == nil {
			srv = s
		}
		return []string{srv}, nil
	}
}

// hintedWarnings is the log of an engine run for one command: its
// warnings that say what the user can do (a "hint" attribute, such as a
// server that made every start wait for want of a protocolVersion) are
// notes on stderr; there is no session log to find them in. The rest is
// dropped.
type hintedWarnings struct {
	env    *Env
	server string
}

func (h *hintedWarnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *hintedWarnings) Handle(_ context.Context, r slog.Record) error {
	var hint string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "hint" {
			hint = a.Value.String()
		}
		return hint == ""
	})
	if hint == "" {
		return nil
	}
	if h.server != "" {
		h.env.note("warning: server %s: %s", h.server, r.Message)
	} else {
		h.env.note("warning: %s", r.Message)
	}
	h.env.noteHint("hint: %s", hint)
	return nil
}

func (h *hintedWarnings) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := *h
	for _, a := range attrs {
		if a.Key == "server" {
			out.server = a.Value.String()
		}
	}
	return &out
}

func (h *hintedWarnings) WithGroup(string) slog.Handler { return h }
