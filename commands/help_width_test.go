package commands

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/urfave/cli/v3"
)

// Each command's description fits an 80-column terminal as --help indents
// it (4 columns): a longer line wraps mid-word there. Examples, indented
// in the text, may run longer: a command line is not cut.
func TestHelpDescriptionsFit80Columns(t *testing.T) {
	var walk func(cmd *cli.Command)
	walk = func(cmd *cli.Command) {
		for _, line := range strings.Split(cmd.Description, "\n") {
			if strings.HasPrefix(line, "  ") {
				continue
			}
			if n := utf8.RuneCountInString(line); n > 76 {
				t.Errorf("%s --help: a line of %d columns, wider than 76: %q", cmd.FullName(), n, line)
			}
		}
		for _, sub := range cmd.Commands {
			walk(sub)
		}
	}
	walk(newRootCmd(newEnv(strings.NewReader(""), nil, nil)))
}

// Every line of every command's --help fits 80 columns: the lists of
// options and commands wrap their text under its column (urfave printed
// the global options up to 222 columns wide), as does the NAME line.
// Examples and config snippets (a line that starts with mcpctl or a quote)
// are not cut.
func TestHelpFits80Columns(t *testing.T) {
	var walk func(path []string, cmd *cli.Command)
	walk = func(path []string, cmd *cli.Command) {
		var out, errOut bytes.Buffer
		root := newRootCmd(newEnv(strings.NewReader(""), &out, &errOut))
		if err := root.Run(context.Background(), append(append([]string{"mcpctl"}, path...), "--help")); err != nil {
			t.Fatalf("mcpctl %s --help: %v %s", strings.Join(path, " "), err, errOut.String())
		}
		for _, line := range strings.Split(out.String(), "\n") {
			trimmed := strings.TrimSpace(line)
			if strings.HasPrefix(trimmed, "mcpctl ") && !strings.Contains(trimmed, " - ") || strings.HasPrefix(trimmed, `"`) {
				continue
			}
			if n := utf8.RuneCountInString(line); n > 80 {
				t.Errorf("mcpctl %s --help: a line of %d columns: %q", strings.Join(path, " "), n, line)
			}
		}
		for _, sub := range cmd.Commands {
			if !sub.Hidden && sub.Name != "help" {
				walk(append(slices.Clone(path), sub.Name), sub)
			}
		}
	}
	walk(nil, newRootCmd(newEnv(strings.NewReader(""), nil, nil)))
}

// help names a repeatable flag once; its usage says it repeats.
func TestHelpRepeatableFlagsSaySo(t *testing.T) {
	var walk func(cmd *cli.Command)
	walk = func(cmd *cli.Command) {
		for _, f := range cmd.Flags {
			full, short := urfaveFlagString(f), cli.FlagStringer(f)
			if !strings.Contains(full, " [ ") {
				continue
			}
			if strings.Contains(short, " [ ") || !strings.Contains(short, "repeat") {
				t.Errorf("mcpctl %s --help: %q", cmd.FullName(), short)
			}
		}
		for _, sub := range cmd.Commands {
			walk(sub)
		}
	}
	walk(newRootCmd(newEnv(strings.NewReader(""), nil, nil)))
}
