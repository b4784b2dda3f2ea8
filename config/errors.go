package config

import (
	"fmt"
	"strings"
)

// An Error is one problem in a config file, placed at file:line:column and
// named by its field path, e.g.
//
//	mcp.json:12:7: servers.fs.args[1]: expected string, got number
type Error struct {
	File  string // the file as the user named it
	Line  int    // 1-based; 0 when the problem is with the file as a whole
	Col   int
	Field string // dotted path, e.g. servers.fs.args[1]; may be empty
	Msg   string
	// Hint says what to do about it; may be empty.
	Hint string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Hints implements the hint convention of mcpctl's error printer.
func (e *Error) Hints() []string {
	if e.Hint == "" {
		return nil
	}
	return []string{e.Hint}
}

// Errors is every problem found in one config file, in file order. Loading
// reports them all at once so one edit can fix them all.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Hints gathers the hints of all errors, without repeats.
func (es Errors) Hints() []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range es {
		if e.Hint != "" && !seen[e.Hint] {
			seen[e.Hint] = true
			out = append(out, e.Hint)
		}
	}
	return out
}

// Unwrap lets errors.As find each *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}
