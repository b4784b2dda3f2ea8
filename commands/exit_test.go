package commands

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/engine"
	"github.com/mcpctl/mcpctl/output"
)

// The exit-code table is a contract with scripts.
func TestErrorInfo(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code string
		exit int
	}{
		{&toolError{name: "a.b"}, "tool_error", 1},
		{&engine.Error{Kind: engine.KindUsage}, "usage", 2},
		{&engine.Error{Kind: engine.KindUnavailable}, "unavailable", 3},
		{&engine.Error{Kind: engine.KindTimeout}, "timeout", 4},
		{&engine.Error{Kind: engine.KindProtocol}, "protocol", 5},
		{&engine.Error{Kind: engine.KindNoSession}, "no_session", 6},
		{&engine.Error{Kind: engine.KindInternal}, "internal", 1},
		{usagef("bad flag"), "usage", 2},
		{&output.JQError{Msg: "bad jq"}, "usage", 2},
		{&config.Error{File: "mcp.json", Msg: "x"}, "config", 2},
		{config.Errors{{File: "mcp.json", Msg: "x"}}, "config", 2},
		{&config.NotFoundError{}, "config", 2},
		{fmt.Errorf("wrapped: %w", context.Canceled), "interrupted", 130},
		{context.DeadlineExceeded, "timeout", 4},
		{fmt.Errorf("something else"), "internal", 1},
		{&toolError{name: "fs.read", server: "fs"}, "tool_error", 1},
		{fmt.Errorf("starting: %w", &engine.Error{Kind: engine.KindUnavailable, Server: "fs"}), "unavailable", 3},
	} {
		info := errorInfo(tc.err)
		if info.Code != tc.code || info.ExitCode != tc.exit {
			t.Errorf("%T %v: got %s/%d, want %s/%d", tc.err, tc.err, info.Code, info.ExitCode, tc.code, tc.exit)
		}
	}
	info := errorInfo(&engine.Error{Kind: engine.KindUnavailable, Server: "fs", Message: "died", Stderr: []string{"boom"}, Hint: []string{"h"}})
	if info.Server != "fs" || info.Message != "died" || info.Details["stderr"] == nil || len(info.Hints) != 1 || info.Text != "died\nlast stderr lines of fs:\n  boom" {
		t.Errorf("engine error info: %+v", info)
	}
}

// A hint's mcpctl command carries the -c and --session the user gave, quoted
// for the shell; one that names its own config is left as it is.
func TestHintsCarryGlobalFlags(t *testing.T) {
	env := newEnv(strings.NewReader(""), io.Discard, io.Discard)
	env.configFlags = []string{"my config.json", "b.json"}
	env.sessionFlag = "s1"
	got := env.withGlobalFlags([]string{
		"start it again with: mcpctl restart fake",
		"see the resources with: mcpctl resources; or name the server: --server SERVER",
		"run serve on a config without it: mcpctl serve -c FILE",
		"known servers: a, b",
		"the server does not work with mcpctl as it is",
		"run mcpctl up first; mcpctl uptime is no command",
	})
	want := []string{
		"start it again with: mcpctl -c 'my config.json' -c b.json --session s1 restart fake",
		"see the resources with: mcpctl -c 'my config.json' -c b.json --session s1 resources; or name the server: --server SERVER",
		"run serve on a config without it: mcpctl serve -c FILE",
		"known servers: a, b",
		"the server does not work with mcpctl as it is",
		"run mcpctl -c 'my config.json' -c b.json --session s1 up first; mcpctl uptime is no command",
	}
	if !slices.Equal(got, want) {
		t.Errorf("hints:\n%q\nwant\n%q", got, want)
	}
	// A config given as <(…) is a pipe the next command cannot read again.
	env.configFlags, env.sessionFlag = []string{"/dev/fd/63", "/proc/self/fd/12"}, ""
	if got := env.withGlobalFlags([]string{"see: mcpctl tools"}); got[0] != "see: mcpctl -c <(…) -c <(…) tools" {
		t.Errorf("hint for a config from <(…): %q", got[0])
	}
	// --session alone.
	env.configFlags, env.sessionFlag = nil, "s2"
	if got := env.withGlobalFlags([]string{"see: mcpctl status"}); got[0] != "see: mcpctl --session s2 status" {
		t.Errorf("hint with --session alone: %q", got[0])
	}
	env.sessionFlag = ""
	// up, which refuses a pipe, is advised with a file.
	for _, c := range []string{"/dev/fd/63", "/dev/stdin"} {
		env.configFlags = []string{c}
		if got := env.withGlobalFlags([]string{"start it with: mcpctl up"}); got[0] != "start it with: mcpctl -c FILE up (the config saved to FILE: a session reads it again)" {
			t.Errorf("up for a config from %s: %q", c, got[0])
		}
	}
	if shellWord("it's") != `'it'\''s'` {
		t.Errorf("shellWord: %s", shellWord("it's"))
	}
}

// The commands hints may advise are the command tree's, hidden ones aside.
func TestHintCommands(t *testing.T) {
	var names []string
	for _, c := range newRootCmd(newEnv(strings.NewReader(""), io.Discard, io.Discard)).Commands {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	slices.Sort(names)
	// completion is added as the tree runs (urfave's, reshaped).
	want := slices.DeleteFunc(slices.Clone(mcpctlCommands), func(n string) bool { return n == "completion" })
	if !slices.Equal(names, want) {
		t.Errorf("commands %q, the hint list has %q", names, want)
	}
}

// A value gojq quotes cut short is not shown: a secret cut short is not
// whole, and no redaction finds it (QA: the first 24 characters of a key
// reached stderr). Whole values, and text around, stay.
func TestHideCutValues(t *testing.T) {
	for in, want := range map[string]string{
		`tonumber cannot be applied to "sk-live-0123456789abcdef ...": invalid number`: `tonumber cannot be applied to ` + cutValue + `: invalid number`,
		`cannot add: string ("sk-live-0123456789abcdef ...") and number (1)`:           `cannot add: string (` + cutValue + `) and number (1)`,
		`cannot add: object ({"k":"sk-live-0123456789a ...}) and number (1)`:           `cannot add: object (` + cutValue + `) and number (1)`,
		`cannot iterate over: array (["sk-live-0123456789abc ...])`:                    `cannot iterate over: array (` + cutValue + `)`,
		`tonumber cannot be applied to "a\"b-0123456789abcdefghi ...": x`:              `tonumber cannot be applied to ` + cutValue + `: x`,
		`tonumber cannot be applied to "short": invalid number`:                        `tonumber cannot be applied to "short": invalid number`,
		`cannot add: string ("status: ") and array (["Loading ...","key sk-li ...])`:   `cannot add: string ("status: ") and array (` + cutValue + `)`,
		`cannot add: object ({"a":"Loading ...","k":"s ...}) and string ("x")`:         `cannot add: object (` + cutValue + `) and string ("x")`,
	} {
		if got := hideCutValues(in); got != want {
			t.Errorf("hideCutValues(%s)\n = %s\nwant %s", in, got, want)
		}
	}
}
