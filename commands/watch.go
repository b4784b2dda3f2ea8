package commands

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/engine"
	"github.com/mcpctl/mcpctl/output"
	"github.com/urfave/cli/v3"
)

type watchOptions struct {
	servers   []string
	types     []string
	subscribe []string
	logLevel  string
	stderr    bool
	count     int
	timeout   time.Duration
}

func newWatchCmd(env *Env) *cli.Command {
	var opts watchOptions
	return &cli.Command{
		Name:  "watch",
		Usage: "Print what happens to the servers, one JSON object per line",
		Description: `Prints one JSON object per line per event, filtered by --jq one at a time:

  ready              the watch is set up (always the first line; --jq
                     applies: select(.type == "log") leaves it out)
  state              a server changed state (from, to, error)
  list_changed       a server's tools, prompts or resources changed (list,
                     added, removed), after the session refreshed them
  resource_updated   a resource subscribed with --subscribe changed (uri);
                     a watch with --subscribe gets only its own URIs
  log                a log message (level, logger, data); --log-level sets
                     the level on the servers that support logging
  progress           progress of a request (token, progress, total, message)
  stderr             a line a server wrote to stderr (with --stderr, or
                     --type stderr)
  config             the config was reloaded (added, removed, restarted,
                     updated, started: down and started again, failed:
                     "SERVER: why" for each that did not start or kept its
                     old settings), or could not be and the running one
                     stays (error)
  dropped            the watch fell behind and count events were lost

Watches that ask one server for different --log-level each get their own
level and above: the server is set to the most verbose of them while they
run. What --subscribe and --log-level ask of a server holds across its
restarts (one a reload makes for new settings too): the session asks the new
process again before anything else uses it, and a subscription keeps the
server running, as a request does. A server not running when the watch
begins (lazy, stopped), or that a reload adds (or removes and adds back), is
set to the --log-level when it starts, and subscribed again. A server
--server names that a reload removes is said on stderr; the watch goes on,
as it does past an event a --jq filter fails on (said on stderr; as jq
does, the watch then ends with exit 2 where it would have exited 0; one on
the ready line is passed over in silence).

It ends on Ctrl-C, or when what reads its output goes away (mcpctl watch |
head -1), at once (exit 0; 130, or 128 + the signal's number, or 141, when
--count events did not all come), after --count events, or after --timeout
from its ready line (exit 4 when --count events did not come by then, or
when the watch did not begin within it); when the session ends
under it (mcpctl down), it exits 3. Without a session it starts the servers
for its own duration, their start shown as state events that --count does
not count; one that cannot start is its state event (to unavailable, with
the error), and the others are watched, unless none starts (exit 3).

  mcpctl watch
  mcpctl watch --subscribe demo://resource/dynamic/text/1 --type resource_updated
  mcpctl watch --server everything --log-level debug -r --jq 'select(.type == "log") | .data'`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "server", Usage: "only events of `SERVER` (repeatable)", Destination: &opts.servers},
			&cli.StringSliceFlag{Name: "type", Usage: "only events of `TYPE` (repeatable)", Destination: &opts.types},
			&cli.StringSliceFlag{Name: "subscribe", Usage: "subscribe to updates of the resource `URI` while watching (repeatable)", Destination: &opts.subscribe},
			&cli.StringFlag{Name: "log-level", Usage: "set the servers' log level to `LEVEL` (debug, info, notice, warning, error, ...)", Destination: &opts.logLevel},
			&cli.BoolFlag{Name: "stderr", Usage: "include the servers' stderr lines", Destination: &opts.stderr},
			&cli.IntFlag{Name: "count", Usage: "stop after `N` events (those --jq lets through, not its servers' start without a session; default: no limit)", Destination: &opts.count, HideDefault: true},
			&cli.DurationFlag{Name: "timeout", Usage: "stop after `DURATION` (default: never)", Destination: &opts.timeout, HideDefault: true},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() > 0 {
				return usagef("watch takes no arguments", "choose servers with --server")
			}
			// 0 given is not "no limit": a script's --timeout ${T}s with
			// T=0 must not watch for good.
			if cmd.IsSet("count") && opts.count <= 0 || cmd.IsSet("timeout") && opts.timeout <= 0 {
				return usagef("--count and --timeout must be positive", "leave them out to watch with no limit")
			}
			return runWatch(ctx, env, opts)
		},
	}
}

var errWatchDone = errors.New("enough events")

func runWatch(ctx context.Context, env *Env, opts watchOptions) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	// Checked before any server starts; the engine checks again.
	if err := engine.CheckEventTypes(opts.types); err != nil {
		return typeFlagError(err)
	}
	if opts.count < 0 || opts.timeout < 0 {
		return usagef("--count and --timeout must be positive")
	}
	if opts.stderr && len(opts.types) > 0 && !slices.Contains(opts.types, engine.EventStderr) {
		opts.types = append(opts.types, engine.EventStderr)
	}
	req := &engine.WatchRequest{
		Filter:    engine.EventFilter{Servers: opts.servers, Types: opts.types, Stderr: opts.stderr},
		Subscribe: opts.subscribe,
		LogLevel:  opts.logLevel,
	}
	if len(opts.servers) == 1 {
		req.SubscribeServer = opts.servers[0]
	}
	// A server followed that a reload removes is said on stderr; config
	// events are asked for to tell it, and shown only if asked for.
	showConfig := len(opts.types) == 0 || slices.Contains(opts.types, engine.EventConfig)
	if !showConfig && len(opts.servers) > 0 {
		req.Filter.Types = append(slices.Clip(req.Filter.Types), engine.EventConfig)
	}
	ctx, stop := untilOutputClosed(ctx, env.Out)
	defer stop()
	// --timeout bounds the watch's beginning (its ready line: the session
	// answered, or without one the config loaded), then, afresh from
	// there, the watch itself: as a call's bounds its start, then its
	// request.
	wctx, watching := ctx, func() {}
	began := false
	if opts.timeout > 0 {
		var cancel context.CancelCauseFunc
		wctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		timer := time.AfterFunc(opts.timeout, func() { cancel(context.DeadlineExceeded) })
		defer timer.Stop()
		watching = func() {
			if timer.Stop() {
				timer.Reset(opts.timeout)
			}
		}
	}
	seen := 0
	var filterFailed int // events the --jq filter failed on
	var firstFailure *output.JQError
	need := func(*config.Config) ([]string, error) { return opts.servers, nil }
	err = env.withHostOpts(wctx, need, hostOptions{early: &req.Filter, guard: true, partial: true}, func(h host) error {
		// Without a session, the servers' start for this watch is shown as
		// it comes, but is not what --count waits for: a session's watch
		// never sees it. A start that failed is the server's event.
		_, oneShot := h.(localHost)
		started := map[string]bool{}
		return h.Watch(wctx, req, func(ev engine.Event) error {
			if ev.Type == engine.EventReady {
				began = true
				watching()
			}
			ownStart := false
			if oneShot && ev.Type == engine.EventState && !started[ev.Server] {
				started[ev.Server] = ev.To != engine.StateStarting
				ownStart = ev.To == engine.StateStarting || ev.To == engine.StateReady
			}
			if ev.Type == engine.EventConfig {
				noteRemoved(env, ev, opts.servers)
				if !showConfig {
					return nil
				}
			}
			wrote, err := p.Line(ev)
			if je := (*output.JQError)(nil); errors.As(err, &je) {
				// As jq does with a stream: this event's failure is
				// said, and the watch goes on with the next.
				if ev.Type == engine.EventReady {
					// mcpctl's own, with none of a server's fields: a
					// filter written for the events asked for fails on
					// it (.from), and that is no failure of the watch,
					// nor worth a warning on every run.
					return nil
				}
				env.note("warning: %s, on a %s event; the watch goes on", je.Msg, ev.Type)
				if filterFailed++; firstFailure == nil {
					firstFailure = je
				}
				return nil
			}
			if err != nil {
				return err
			}
			// --count counts the events shown: one --jq drops is not.
			// The ready line is mcpctl's own, counted only when asked for.
			if ev.Type == engine.EventReady && !slices.Contains(opts.types, engine.EventReady) || !wrote || ownStart {
				return nil
			}
			if seen++; opts.count > 0 && seen >= opts.count {
				return errWatchDone
			}
			return nil
		})
	})
	err = watchEnd(err, ctx, wctx, opts, seen, began)
	if err == nil && filterFailed > 0 {
		// As jq ends a stream it failed on part of: what was shown is
		// not all there was, which a script must not take for success.
		return &output.JQError{Msg: fmt.Sprintf("the --jq filter failed on %d event(s); the first: %s", filterFailed, strings.TrimPrefix(firstFailure.Msg, "--jq filter failed: ")),
			Caret: []string{"skip the events it does not fit, e.g. with select(...) or a trailing ?"}}
	}
	return err
}

// watchEnd is the error a watch ends with, from its callback's or its
// host's (err) and why its contexts ended; nil for the ends asked for.
func watchEnd(err error, ctx, wctx context.Context, opts watchOptions, seen int, began bool) error {
	timedOut := errors.Is(context.Cause(wctx), context.DeadlineExceeded)
	switch {
	case errors.Is(err, errWatchDone):
		return nil
	case outputClosed(err) || errors.Is(context.Cause(ctx), errOutputClosed):
		// Its reader gone ends an open-ended watch as Ctrl-C does; with
		// --count, the events asked for did not all come (141).
		if opts.count > 0 {
			return errOutputClosed
		}
		return nil
	case ctx.Err() != nil && opts.count > 0:
		// The events asked for did not all come: a script must not take
		// the signal for them (exit 130, or 128 + the signal's number).
		return ctx.Err()
	case ctx.Err() != nil:
		return nil // Ctrl-C is how an open-ended watch ends
	case timedOut && !began:
		// Nothing was watched: not the end --timeout asks for.
		return &engine.Error{Kind: engine.KindTimeout, Message: fmt.Sprintf("watch did not begin within --timeout %s", opts.timeout),
			Hint: []string{"give it longer, e.g. --timeout " + (opts.timeout * 10).String()}}
	case timedOut && opts.count > 0:
		return &engine.Error{Kind: engine.KindTimeout, Message: fmt.Sprintf("watch saw %d of %d events in %s", seen, opts.count, opts.timeout)}
	case timedOut && (err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return nil
	case err == nil:
		// The events stopped without Ctrl-C, --count or --timeout: the
		// session went away (mcpctl down), which a script must not take
		// for the end it asked for.
		msg := fmt.Sprintf("the session ended while watching, after %d events", seen)
		if opts.count > 0 {
			msg = fmt.Sprintf("the session ended while watching, after %d of %d events", seen, opts.count)
		}
		return &engine.Error{Kind: engine.KindUnavailable, Message: msg, Hint: []string{"start it again with: mcpctl up"}}
	}
	return err
}

// noteRemoved says on stderr which of the servers a watch follows a reload
// removed: the watch goes on, and hears from one again if a reload adds
// it back.
func noteRemoved(env *Env, ev engine.Event, followed []string) {
	for _, name := range ev.Removed {
		if slices.Contains(followed, name) {
			env.note("warning: a reload removed server %s from the config: the watch goes on, and follows it again if a reload adds it back", name)
		}
	}
}

// typeFlagError is the engine's error for an unknown event type, as a
// mistake with --type.
func typeFlagError(err error) error {
	var ee *engine.Error
	if !errors.As(err, &ee) {
		return err
	}
	hints := ee.Hint
	if len(ee.Candidates) > 0 {
		hints = []string{"did you mean --type " + ee.Candidates[0] + "?"}
	}
	return usagef(ee.Message, hints...)
}
