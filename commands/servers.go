package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mcpctl/mcpctl/engine"
	"github.com/urfave/cli/v3"
)

// newServerActCmd builds start, stop and restart: acts on named servers of
// the running session by hand.
func newServerActCmd(env *Env, act, usage, description string) *cli.Command {
	return &cli.Command{
		Name:        act,
		Usage:       usage,
		ArgsUsage:   "SERVER...",
		Description: description,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() == 0 {
				return usagef(fmt.Sprintf("%s needs the names of the servers to %s", act, act), "e.g. mcpctl "+act+" SERVER; see the servers with: mcpctl status")
			}
			return runServerAct(ctx, env, act, cmd.Args().Slice())
		},
	}
}

func newStartCmd(env *Env) *cli.Command {
	return newServerActCmd(env, "start", "Start servers of the session by hand", `Starts the named servers in the running session, with the servers they
depend on: servers with activation "manual", servers stopped with
"mcpctl stop", and servers that gave up after their restarts. Prints the
status of the named servers and of those it started with them. Exit 3 when
one does not start (all named ones are then stopped again), 2 when its
config is at fault (its command not found, its cwd missing): it is then
unavailable with that error, no longer stopped by hand.

  mcpctl start db
  mcpctl start --jq '.[].state' db cache`)
}

func newStopCmd(env *Env) *cli.Command {
	return newServerActCmd(env, "stop", "Stop servers of the session by hand", `Stops the named servers in the running session: stdin closed, SIGTERM, then
SIGKILL to the server's process group. They stay stopped (no restart, no
start on use) until "mcpctl start" or "mcpctl restart" names them, or names
a server that depends on them (which starts them with it); the session and
its other servers go on.

  mcpctl stop db`)
}

func newRestartCmd(env *Env) *cli.Command {
	return newServerActCmd(env, "restart", "Restart servers of the session", `Stops the named servers in the running session and starts them again, with a
fresh set of restarts for "restart": "on-failure". Use it for a server that
is unavailable after a crash, or that gave up after maxRestarts. A server
that could not start again (its command not found, its cwd missing) is not
stopped: the restart exits 2 and it runs on as it was.

  mcpctl restart fs`)
}

func runServerAct(ctx context.Context, env *Env, act string, names []string) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	client, sess, err := env.client()
	if err != nil {
		return err
	}
	servers, err := client.Servers(ctx, act, names...)
	err = sessionCarriesOn(ctx, err, fmt.Sprintf("the %s of %s", act, strings.Join(names, ", ")))
	if errors.Is(err, engine.ErrNoSession) {
		return env.noSession(sess, "there is no server to "+act, "commands without a session start the servers they need by themselves")
	}
	if err != nil && act != "stop" {
		return asStartFailure(err)
	}
	if err != nil {
		return err
	}
	return p.Print(servers, func(w io.Writer) error { return statusTable(w, &engine.Status{Servers: servers}) })
}

// asStartFailure is err, of a start (up, start, restart), with exit 3, "failed
// to start", as reload gives it, also when the server's handshake broke
// MCP: the engine's protocol error, which a request's exit 5 is.
func asStartFailure(err error) error {
	var ee *engine.Error
	if !errors.As(err, &ee) || ee.Kind != engine.KindProtocol {
		return err
	}
	c := *ee
	c.Kind = engine.KindUnavailable
	return &c
}
