package commands

import (
	"slices"
	"testing"
)

// A completion asks about the words as the shell will pass them: quoted
// and escaped blanks kept in one word, "~" and $VAR expanded, a command
// substitution never run, the word under the cursor left out unless it is
// a flag.
func TestCompletionArgs(t *testing.T) {
	env := map[string]string{"HOME": "/home/u", "P": "/srv/p"}
	getenv := func(k string) string { return env[k] }
	for _, c := range []struct {
		line string
		want []string
	}{
		{`mcpctl -c "/tmp/my dir/mcp.json" start `, []string{"-c", "/tmp/my dir/mcp.json", "start"}},
		{`mcpctl -c /tmp/my\ dir/mcp.json start al`, []string{"-c", "/tmp/my dir/mcp.json", "start"}},
		{`mcpctl -c ~/ex.json start `, []string{"-c", "/home/u/ex.json", "start"}},
		{`mcpctl -c $P/mcp.json -c ${P}/b.json call `, []string{"-c", "/srv/p/mcp.json", "-c", "/srv/p/b.json", "call"}},
		{`mcpctl --jq '.[] | .name' tools `, []string{"--jq", ".[] | .name", "tools"}},
		{`mcpctl call --ti`, []string{"call", "--ti"}},
		{`mcpctl -c "/tmp/my di`, []string{"-c"}},
		{`mcpctl call beta.add "a=1" `, []string{"call", "beta.add", "a=1"}},
		{`mcpctl -c $(touch /tmp/mcpctl-pwned)/x.json call `, []string{"-c", "$(touch", "/tmp/mcpctl-pwned)/x.json", "call"}},
		{`mcpctl `, nil},
		{`mcpctl`, nil},
	} {
		got := completionArgs("mcpctl", c.line, getenv)
		want := append(append([]string{"mcpctl"}, c.want...), "--generate-shell-completion")
		if !slices.Equal(got, want) {
			t.Errorf("%s:\n got %q\nwant %q", c.line, got, want)
		}
	}
}
