// Command mcpctl runs and uses the MCP servers of a project from the command
// line. See the commands package, or run mcpctl --help.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpctl/mcpctl/commands"
)

func main() { os.Exit(run()) }

// run is mcpctl with the process's arguments, streams and signals. Ctrl-C,
// SIGTERM, SIGHUP (the terminal closed) and SIGQUIT (Ctrl-\, which Go
// would answer with a goroutine dump and exit 2, a usage error's code)
// cancel its context, the signal as its cause (mcpctl then exits 128 + its
// number), so servers are stopped properly; a second signal ends mcpctl at
// once (a second SIGQUIT with Go's goroutine dump: the way to see where a
// session that does not stop hangs).
func run() int {
	// The registrations are not undone on the way out: the process exits
	// next, and undoing each takes a round trip to the runtime's signal
	// thread (0.2 ms of every command for three).
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	// A write to stdout or stderr whose reader went away (mcpctl … | head)
	// then fails with EPIPE instead of ending mcpctl by SIGPIPE at once,
	// its servers left to the watchdog: the command stops them, and exits
	// 141 as SIGPIPE would. Nothing reads the channel; the registration
	// is what counts (children still start with SIGPIPE's default).
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	go func() {
		sig := <-sigs
		cancel(commands.Signaled{Signal: sig})
		signal.Stop(sigs)
	}()
	return commands.Main(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
}
