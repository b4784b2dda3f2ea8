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

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := commands.Main(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
