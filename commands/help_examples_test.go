package commands

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/mcpctl/mcpctl/engine"
	"github.com/urfave/cli/v3"
)

// Every example in a command's help gives each flag that takes a value a
// value: "--jq -r '.data'" gave --jq the value -r and left the filter an
// argument, which the command refused.
func TestHelpExamplesGiveFlagsValues(t *testing.T) {
	root := newRootCmd(newEnv(nil, io.Discard, io.Discard))
	var walk func(cmds []*cli.Command)
	walk = func(cmds []*cli.Command) {
		for _, c := range cmds {
			for _, line := range strings.Split(c.Description+"\n"+c.UsageText, "\n") {
				words := strings.Fields(line)
				if len(words) == 0 || words[0] != "mcpctl" {
					continue
				}
				for i, w := range words[:len(words)-1] {
					if (takesValue(c, w) || takesValue(root, w)) && strings.HasPrefix(words[i+1], "-") {
						t.Errorf("mcpctl %s --help: %q gives %s the value %s", c.Name, strings.TrimSpace(line), w, words[i+1])
					}
				}
			}
			walk(c.Commands)
		}
	}
	walk(root.Commands)
}

// watch's help names every event type it can print, and no --timeout
// claims a default of 0s (it is the server's requestTimeout, or never).
func TestHelpTellsTheTruth(t *testing.T) {
	root := newRootCmd(newEnv(nil, io.Discard, io.Discard))
	for _, c := range root.Commands {
		if c.Name == "watch" {
			for _, typ := range engine.EventTypes {
				if !strings.Contains(c.Description, "\n  "+typ+" ") {
					t.Errorf("watch --help does not name the event type %s", typ)
				}
			}
		}
		for _, f := range c.Flags {
			if slices.Contains(f.Names(), "timeout") && strings.Contains(cli.FlagStringer(f), "(default: 0s)") {
				t.Errorf("mcpctl %s --help: %s", c.Name, cli.FlagStringer(f))
			}
		}
	}
}
