package commands

import "strings"

// envHelp names the variables, for the root command's help, in lines as
// wide as the rest of it.
func envHelp() string {
	var b strings.Builder
	line := "Environment:"
	for i, v := range Environment {
		word := " " + strings.ReplaceAll(v.Name, "`", "")
		if i < len(Environment)-1 {
			word += ","
		}
		if len(line)+len(word) > 76 {
			b.WriteString(line + "\n")
			line = " "
		}
		line += word
	}
	b.WriteString(line + " (man mcpctl).")
	return b.String()
}

// EnvVar is one row of the environment table.
type EnvVar struct {
	Name    string // Markdown: a `code` span, or two
	Meaning string // Markdown: `code` spans allowed
}

// Environment is the table of the variables mcpctl reads that mcpctl(1)
// prints and the README's "Environment" section must repeat (a test
// checks it does).
var Environment = []EnvVar{
	{"`MCPCTL_CONFIG`", "the config files, `:`-separated, when `--config` is not given"},
	{"`MCPCTL_SESSION`", "the session to use, as `--session`"},
	{"`MCPCTL_RUNTIME_DIR`, `MCPCTL_STATE_DIR`", "where sockets, and logs and audit, go (else the XDG directories); one `up` cannot make is exit 2, naming the variable"},
	{"`MCPCTL_TOKEN_DIR`", "where OAuth tokens are kept"},
	{"`MCPCTL_INPUT_<ID>`", "the value of `${input:ID}` in the config"},
	{"`MCPCTL_SERVE_TOKEN`", "the bearer token of `serve --http`"},
	{"`MCPCTL_TRACE=1`", "log every JSON-RPC message to `servers/SERVER.wire.jsonl`"},
	{"`MCPCTL_FORCE_TTY=1`", "terminal layout on a pipe"},
	{"`NO_COLOR`", "no colours"},
	{"`TERM=dumb`", "no colours, no live display (spinner, progress line)"},
}
