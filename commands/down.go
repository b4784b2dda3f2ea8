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

	"github.com/mcpctl/mcpctl/engine"
	"github.com/urfave/cli/v3"
)

func newDownCmd(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "down",
		Usage: "Stop the session and all its servers",
		Description: `Stops every server of the session (close stdin, SIGTERM, then SIGKILL to
each server's whole process group) and then the session itself, and removes
its socket. With no session running it says so and exits 0. A session
named by --session or $MCPCTL_SESSION that runs other files than -c names
is not stopped (exit 2), nor one named by $MCPCTL_SESSION alone where
another project's config is found: a down in one project's trap would stop
another project's session.

  mcpctl down
  mcpctl -c examples/mcp.json down`,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := noArgs(cmd); err != nil {
				return err
			}
			return runDown(ctx, env)
		},
	}
}

func runDown(ctx context.Context, env *Env) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	client, sess, err := env.client()
	if err != nil {
		return err
	}
	client.OnConfigError = nil // the session's config is of no matter now
	byEnv := false
	if len(client.ExpectConfig) == 0 && env.sessionFlag == "" && env.sessionName() != "" {
		// Named by $MCPCTL_SESSION alone, where a config is found: a
		// down in this project's trap, the variable exported from
		// elsewhere, would stop another project's session.
		if found, err := env.configPaths(); err == nil {
			client.ExpectConfig, byEnv = found, true
		}
	}
	if len(client.ExpectConfig) > 0 {
		// Named by --session or $MCPCTL_SESSION, with -c: stopped only if
		// it runs those files.
		var runs []string
		client.OnConfigMismatch = func(files []string) { runs = files }
		st, err := client.Status(ctx)
		switch {
		case err == nil && runs != nil && byEnv && slices.ContainsFunc(client.ExpectConfig, func(f string) bool { return slices.Contains(runs, f) }):
			// One of its files (it runs several): this project's.
		case err == nil && runs != nil && byEnv:
			return usagef(fmt.Sprintf("session %s (named by $MCPCTL_SESSION) runs %s, not %s, the config this command found: mcpctl down refused", st.Session.Name, strings.Join(runs, ", "), strings.Join(client.ExpectConfig, ", ")),
				"unset MCPCTL_SESSION to stop the session of "+strings.Join(client.ExpectConfig, ", "),
				fmt.Sprintf("or name it to stop it: mcpctl --session %s down", shellWord(st.Session.Name)))
		case err == nil && runs != nil:
			return env.otherSessionsConfig("down", "stop", "stop", st.Session.Name, runs, client.ExpectConfig)
		case err != nil && !errors.Is(err, engine.ErrNoSession):
			return err // not stopped unchecked
		}
	}
	st, err := client.Shutdown(ctx)
	err = sessionCarriesOn(ctx, err, "its stop")
	if errors.Is(err, engine.ErrNoSession) {
		if !env.noteStale(sess, "there is nothing to stop") {
			env.note("no session is running for %s", env.sessionShown())
		}
		return nil
	}
	if err != nil {
		return err
	}
	// Why the session could not reload its config is of no matter once
	// it is stopped, and its hints (mcpctl reload) are wrong: the next up
	// says what is wrong with the file, if anything still is.
	st.ConfigError = nil
	// The servers are stopped; wait for the session process to let go of
	// its lock and socket, so a following `up` starts cleanly.
	deadline := time.Now().Add(10 * time.Second)
	for sess.Running() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := os.Stat(sess.Socket); err == nil && !sess.Running() {
		os.Remove(sess.Socket)
	}
	return p.Print(st, func(w io.Writer) error {
		env.note("session %s stopped (%d %s)", st.Session.Name, len(st.Servers), plural(len(st.Servers), "server", "servers"))
		return nil
	})
}
