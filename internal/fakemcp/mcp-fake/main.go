// Command mcp-fake is the fake MCP server as a binary of its own, built
// without the race detector by tests that need a plain Go process (the
// race runtime cannot start under a memory limit).
package main

import (
	"os"

	"github.com/mcpctl/mcpctl/internal/fakemcp"
)

func main() { os.Exit(fakemcp.Main(os.Args[1:])) }
