package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/engine"
	"github.com/urfave/cli/v3"
)

func newReloadCmd(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "reload",
		Usage: "Make the session read its config again and apply it",
		Description: `The session reloads by itself when a config file changes (and on SIGHUP);
"reload" forces it. Added servers start, removed ones stop, changed ones
restart, and unchanged ones keep running with the same pid; so do "updated"
ones, whose changes apply without a restart (startupTimeout, requestTimeout,
shutdownTimeout, cacheTTL, failureThreshold, restart, maxRestarts, roots,
hooks). Those of them that are down (they failed or exited) are started
again. A server stopped with "mcpctl stop" takes any change and stays
stopped, as "updated", as does a changed one that was not running
(activation manual or lazy, not started) or that the change disables; a
manual or lazy one that was running is restarted. A running server whose
edit names a command not found or a cwd missing runs on as it was, and is
reported in "failed" until an edit mends it ("mcpctl restart" runs it with
its settings from before the edit; a reload applies the edit). A config that
cannot be loaded changes nothing: the error is printed (exit 2) and shown by
"mcpctl status" until the file is fixed. A server that fails to start is
reported in "failed" (exit 3; 2 when every failure is its config's, such as
a command not found); the others are applied. A new "logLevel" applies to
the session's log at once, unless "up --log-level" set it. A reload returns
once the servers it starts are up; on a terminal, one that takes over 2 s
says what it waits for.

A session cannot ask for an input (${input:ID}) that a changed config
added: reload hands it the MCPCTL_INPUT_<ID> variables of its own
environment, which the session keeps, in memory, for its later reloads.

  mcpctl reload
  MCPCTL_INPUT_API_KEY="$(pass show api-key)" mcpctl reload
  mcpctl reload --jq .restarted`,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := noArgs(cmd); err != nil {
				return err
			}
			return runReload(ctx, env)
		},
	}
}

// inputVars are this process's MCPCTL_INPUT_<ID> variables: the values of
// ${input:ID} that a session, which cannot ask, may lack.
func inputVars() map[string]string {
	vars := map[string]string{}
	for _, kv := range os.Environ() {
		if name, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(name, config.InputEnvPrefix) && name != config.InputEnvPrefix {
			vars[name] = v
		}
	}
	return vars
}

// reloadWaitsFor says what a slow reload waits for: the servers starting
// or stopping, as the session's status names them.
func reloadWaitsFor(ctx context.Context, client *engine.Client) string {
	const what = "waiting for the session's reload: it starts the servers the change adds or restarts, each within its startupTimeout (a reload under way goes first)"
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st, err := client.Status(ctx)
	if err != nil {
		return what
	}
	var starting, stopping []string
	for _, s := range st.Servers {
		switch s.State {
		case engine.StateStarting:
			starting = append(starting, s.Name)
		case engine.StateStopping:
			stopping = append(stopping, s.Name)
		}
	}
	var parts []string
	if len(starting) > 0 {
		parts = append(parts, "starting "+strings.Join(starting, ", ")+" (each within its startupTimeout)")
	}
	if len(stopping) > 0 {
		parts = append(parts, "stopping "+strings.Join(stopping, ", ")+" (each within its shutdownTimeout)")
	}
	if len(parts) == 0 {
		return what
	}
	return "waiting for the session's reload: " + strings.Join(parts, "; ")
}

// reloadPatience is how long a reload runs before a terminal is told what
// it waits for.
const reloadPatience = 2 * time.Second

func runReload(ctx context.Context, env *Env) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	client, sess, err := env.client()
	if err != nil {
		return err
	}
	client.OnConfigError = nil // the reload's own answer says it
	stopNote := env.noteIfSlow(reloadPatience, func() string { return reloadWaitsFor(ctx, client) })
	res, err := client.Reload(ctx, &engine.ReloadRequest{Inputs: inputVars()})
	stopNote()
	err = sessionCarriesOn(ctx, err, "the reload")
	if errors.Is(err, engine.ErrNoSession) {
		return env.noSession(sess, "there is nothing to reload", "without a session every command reads the config afresh")
	}
	if err != nil {
		return err
	}
	if err := p.Print(res, func(w io.Writer) error {
		for _, part := range []struct {
			what  string
			names []string
		}{{"added", res.Added}, {"removed", res.Removed}, {"restarted", res.Restarted}, {"updated", res.Updated}, {"unchanged", res.Unchanged}, {"started", res.Started}} {
			if len(part.names) > 0 {
				fmt.Fprintf(w, "%-10s %s\n", part.what, strings.Join(part.names, ", "))
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if len(res.Failed) > 0 {
		return reloadFailed(res.Failed, sess)
	}
	return nil
}

// reloadFailed is the error of a reload whose servers did not start, with
// hints for each: a server its config is at fault for (a command not
// found) gets its own, one that failed as it ran how to see why and start
// it again. The config is applied either way.
func reloadFailed(failed []*engine.Error, sess *engine.Session) error {
	msgs := make([]string, len(failed))
	kind := engine.KindConfig // when every failure is the config's
	var hints []string
	configs := 0
	for i, f := range failed {
		msgs[i] = f.Message
		if f.Kind == engine.KindConfig {
			configs++
			for _, h := range f.Hint {
				if !slices.Contains(hints, h) {
					hints = append(hints, h)
				}
			}
			continue
		}
		kind = engine.KindUnavailable
		hints = append(hints, fmt.Sprintf("the config is applied, and server %[1]s is down: see why with: mcpctl logs %[1]s; start it again with: mcpctl restart %[1]s", f.Server))
	}
	if configs > 0 {
		hints = append(hints, "fix the config and it reloads by itself; see mcpctl status, and the log: "+sess.LogFile())
	}
	return &engine.Error{Kind: kind, Message: strings.Join(msgs, "\n"), Hint: hints}
}
