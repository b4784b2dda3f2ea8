package commands

import (
	"bytes"
	"go/build"
	"io"
	"strings"
	"testing"
	"unicode"

	"github.com/urfave/cli/v3"
)

// Every command explains itself the same way: a Usage that starts with a
// capitalised verb and has no final period, ArgsUsage when it takes
// arguments, and at least one example (an indented "mcpctl" line).
func TestCommandDocs(t *testing.T) {
	root := newRootCmd(newEnv(nil, io.Discard, io.Discard))
	var walk func(c *cli.Command)
	walk = func(c *cli.Command) {
		if c.Hidden || c.Name == "help" {
			return
		}
		name := c.FullName()
		if c.Usage == "" || !unicode.IsUpper([]rune(c.Usage)[0]) || strings.HasSuffix(c.Usage, ".") {
			t.Errorf("%s: Usage %q must start with a capital and have no final period", name, c.Usage)
		}
		if !strings.Contains(c.Description, "\n  mcpctl ") {
			t.Errorf("%s: Description has no example (an indented mcpctl line)", name)
		}
		for _, sub := range c.Commands {
			walk(sub)
		}
	}
	for _, c := range root.Commands {
		walk(c)
	}
	for _, name := range []string{"tools", "call"} {
		for _, c := range root.Commands {
			if c.Name == name && c.ArgsUsage == "" {
				t.Errorf("%s takes arguments but has no ArgsUsage", name)
			}
		}
	}
}

// The import arrows point one way: commands → engine → config → schemas,
// and output depends on none of them. No library type leaks across.
func TestDeps(t *testing.T) {
	forbidden := map[string][]string{
		"engine":  {"github.com/urfave/cli/v3", "github.com/mcpctl/mcpctl/commands", "github.com/mcpctl/mcpctl/output", "github.com/itchyny/gojq", "github.com/olekukonko/tablewriter"},
		"config":  {"github.com/urfave/cli/v3", "github.com/mcpctl/mcpctl/engine", "github.com/mcpctl/mcpctl/commands", "github.com/mcpctl/mcpctl/output", "github.com/modelcontextprotocol/go-sdk/mcp"},
		"output":  {"github.com/mcpctl/mcpctl/engine", "github.com/mcpctl/mcpctl/config", "github.com/mcpctl/mcpctl/commands", "github.com/urfave/cli/v3"},
		"schemas": {"github.com/mcpctl/mcpctl/engine", "github.com/mcpctl/mcpctl/config", "github.com/mcpctl/mcpctl/commands", "github.com/mcpctl/mcpctl/output"},
	}
	for dir, bad := range forbidden {
		pkg, err := build.Import("github.com/mcpctl/mcpctl/"+dir, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range pkg.Imports {
			for _, b := range bad {
				if imp == b {
					t.Errorf("%s imports %s", dir, imp)
				}
			}
		}
	}
}

// Help for a command goes to stdout when asked for, and nothing else does
// on a usage error.
func TestUsageErrorKeepsStdoutClean(t *testing.T) {
	var out, errOut bytes.Buffer
	code := Main(t.Context(), []string{"mcpctl", "tools", "--nope"}, nil, &out, &errOut)
	if code != exitUsage || out.Len() != 0 || !strings.Contains(errOut.String(), "unknown flag --nope") {
		t.Errorf("code %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}
