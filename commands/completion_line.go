package commands

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/shell"
)

// completeLineEnv carries the command line before the cursor, as typed,
// from a completion script: a shell hands the script its words with their
// quotes, escapes, "~" and "$VAR" unresolved, and a config path written so
// ("-c ~/p/mcp.json", "-c 'my dir/mcp.json'") named no file.
const completeLineEnv = "MCPCTL_COMPLETE_LINE"

// completionArgs returns the arguments a completion asks about: the words
// of line as the shell would pass them when the command runs (quotes
// removed, "~" and variables expanded; a command substitution is never
// run), the word under the cursor left out unless it is a flag being
// typed, and then the hidden --generate-shell-completion. prog is
// mcpctl's own name.
func completionArgs(prog, line string, getenv func(string) string) []string {
	words := shellWords(line, getenv)
	if len(words) > 0 {
		words = words[1:] // the command's name, as typed
	}
	// A line that ends within a word: it is the one being completed.
	if within := len(shellWords(line+"x", getenv)) == len(words)+1; within && len(words) > 0 {
		if last := words[len(words)-1]; !strings.HasPrefix(last, "-") {
			words = words[:len(words)-1]
		}
	}
	return append(append([]string{prog}, words...), "--generate-shell-completion")
}

// shellWords splits line as a shell would, a quote left open closed; a
// line the shell would not take as plain words (a command substitution,
// a syntax error) is split on blanks.
func shellWords(line string, getenv func(string) string) []string {
	for _, closing := range []string{"", `"`, `'`} {
		if words, err := shell.Fields(line+closing, getenv); err == nil {
			return words
		}
	}
	return slices.Collect(strings.FieldsSeq(line))
}
