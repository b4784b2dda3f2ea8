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
// SIGTERM and SIGHUP (the terminal closed) cancel its context, so servers
// are stopped properly; a second signal ends mcpctl at once.
func run() int {
	// stop is not deferred: the process exits next, and undoing the three
	// registrations takes a round trip each to the runtime's signal thread
	// (0.2 ms of every command).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return commands.Main(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
}
