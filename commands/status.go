package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/engine"
	"github.com/mcpctl/mcpctl/output"
	"github.com/urfave/cli/v3"
)

func newStatusCmd(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "Show the session and the state of each server",
		Description: `Lists every server of the config with its state, how long it has been in it,
its pid, tool count and last error. In JSON, "since" is when the server
entered its state; "restarts" and "restartAt" follow the on-failure policy;
"failures" counts failed requests in a row (a degraded server);
"lastSuccessAt" and "lastFailureAt" are when a request to it (a health check
ping too) last succeeded and last failed in a way that counts toward
failureThreshold (a timeout, a broken answer; not a crash);
"stoppedByHand" marks a server stopped with "mcpctl stop" (", by hand" in
the table), which stays stopped until "mcpctl start" or "mcpctl restart".
With no session running the servers are listed as stopped ("session" is null
in JSON) and the exit code is 0; after an up that failed, each with the
error it failed with (lastError), and on a terminal a note, until a start
works. When the config was edited into something that cannot be loaded, the
session keeps the config it had and "configError" says what is wrong.

  mcpctl status
  mcpctl status --jq '.servers[] | select(.state != "ready") | .name'`,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := noArgs(cmd); err != nil {
				return err
			}
			return runStatus(ctx, env)
		},
	}
}

func runStatus(ctx context.Context, env *Env) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	client, sess, err := env.client()
	if err != nil {
		return err
	}
	client.OnConfigError = nil // status shows it itself
	st, err := client.Status(ctx)
	if err == nil && st.ConfigError != nil {
		// The session's hints name its commands without the flags this
		// one was run with.
		st.ConfigError.Hint = env.withGlobalFlags(st.ConfigError.Hint)
	}
	if errors.Is(err, engine.ErrNoSession) {
		env.noteStale(sess, "its servers are stopped")
		cfg, cfgErr, err := env.loadConfigForNames()
		if err != nil {
			return err
		}
		st = &engine.Status{Servers: []engine.ServerStatus{}, ConfigError: cfgErr}
		for _, s := range cfg.Servers {
			state := engine.StateStopped
			if s.Disabled {
				state = engine.StateDisabled
			}
			ss := engine.ServerStatus{Name: s.Name, State: state}
			if s.Activation != "" && s.Activation != "eager" {
				ss.Activation = s.Activation // as a session says it
			}
			st.Servers = append(st.Servers, ss)
		}
		failed := lastFailedStart(sess, cfg.Paths)
		if failed != nil {
			for i, ss := range st.Servers {
				for _, was := range failed.Servers {
					if was.Name == ss.Name && was.LastError != "" {
						st.Servers[i].LastError, st.Servers[i].Since = was.LastError, failed.EndedAt
					}
				}
			}
		}
		switch {
		case !env.StderrTTY:
			// JSON has each server's lastError.
		case failed != nil:
			env.note("no session is running: the last one failed to start %s ago: %s", time.Since(failed.EndedAt).Round(time.Second), failed.Error.Message)
			env.noteHint("hint: see its log with: mcpctl logs; start one again with: mcpctl up")
		default:
			env.noteHint("no session is running; start one with: mcpctl up")
		}
	} else if err != nil {
		return err
	}
	return p.Print(st, func(w io.Writer) error { return statusTable(w, st) })
}

// stateLabel is a server's state with how it starts when that is not with
// the session: "stopped (lazy)".
func stateLabel(s engine.ServerStatus) string {
	if s.Activation != "" {
		return string(s.State) + " (" + s.Activation + ")"
	}
	return string(s.State)
}

// toolCount is a server's tool count for a table: "-" for one stopped,
// whose tools are not known (0 would claim it offers none).
func toolCount(s engine.ServerStatus) string {
	if s.Tools == 0 && (s.State == engine.StateStopped || s.State == engine.StateDisabled) {
		return "-"
	}
	return strconv.Itoa(s.Tools)
}

func statusTable(w io.Writer, st *engine.Status) error {
	if st.Session != nil {
		stopping := ""
		if st.Session.Stopping {
			stopping = ", stopping"
		}
		fmt.Fprintf(w, "session %s (pid %d, mcpctl %s%s)\n\n", st.Session.Name, st.Session.PID, st.Session.Version, stopping)
	}
	rows := make([][]string, len(st.Servers))
	for i, s := range st.Servers {
		pid, since := "-", "-"
		if s.PID > 0 {
			pid = strconv.Itoa(s.PID)
		}
		if !s.Since.IsZero() {
			since = time.Since(s.Since).Round(time.Second).String()
		}
		state := stateLabel(s)
		if s.RestartAt != nil {
			state += fmt.Sprintf(", restart %d in %s", s.Restarts, time.Until(*s.RestartAt).Round(time.Second/10))
		}
		if s.StoppedByHand {
			state += ", by hand"
		}
		lastErr := s.LastError
		if lastErr == "" && s.EditError != "" {
			lastErr = "edit not applied: " + s.EditError
		}
		rows[i] = []string{s.Name, state, since, pid, toolCount(s), lastErr}
	}
	if err := output.Table(w, []string{"server", "state", "for", "pid", "tools", "last error"}, rows); err != nil {
		return err
	}
	if ce := st.ConfigError; ce != nil {
		what := "The config was edited but cannot be loaded; the session runs the config it had:"
		if st.Session == nil {
			what = "The config cannot be used as it is (its servers would not start):"
		}
		fmt.Fprintf(w, "\n%s\n%s\n", what, ce.Message)
		for _, h := range ce.Hint {
			fmt.Fprintf(w, "hint: %s\n", h)
		}
	}
	return nil
}

// loadConfigForNames loads the config for what status shows without a
// session, its servers' names and states: a variable or input that is not
// set does not hide them (read as empty, nothing asked); the error it
// would be for a command that starts them is returned beside, cfgErr. An
// error of the files themselves (syntax, fields) is err.
func (env *Env) loadConfigForNames() (cfg *config.Config, cfgErr *engine.Error, err error) {
	cfg, err = env.loadConfigAsking(false)
	if err == nil {
		return cfg, nil, nil
	}
	// Only values missing from the environment are forgiven: anything
	// else is the file's own error.
	var errs config.Errors
	if !errors.As(err, &errs) || len(errs) == 0 {
		return nil, nil, err
	}
	for _, e := range errs {
		if !strings.HasSuffix(e.Msg, " is not set") && !strings.Contains(e.Msg, " has no value") {
			return nil, nil, err
		}
	}
	paths, perr := env.configPaths()
	if perr != nil {
		return nil, nil, err
	}
	lenient, lerr := config.LoadFiles(paths, config.Options{WorkDir: env.WorkDir, LookupEnv: env.LookupEnv, Unresolved: true, Context: env.ctx})
	if lerr != nil {
		return nil, nil, err
	}
	info := errorInfo(err)
	return lenient, &engine.Error{Kind: engine.KindConfig, Message: info.Message, Hint: info.Hints}, nil
}
