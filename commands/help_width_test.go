package commands

import (
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
