// Command gendocs writes mcpctl's shell completion scripts (completions/)
// and man pages (man/) from the command tree. Run it from the source
// tree's root, through go generate:
//
//	go generate .
package main

import (
	"fmt"
	"os"

	"github.com/mcpctl/mcpctl/commands"
)

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := commands.WriteDocs(dir); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}
