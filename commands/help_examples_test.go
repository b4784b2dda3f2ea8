package commands

import (
	"io"
	"strings"
	"testing"

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
