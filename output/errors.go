package output

import (
	"fmt"
	"io"
	"strings"
)

// An ErrorInfo is an error as the user sees it.
type ErrorInfo struct {
	// Code names the kind of failure: "usage", "config", "tool_error",
	// "unavailable", "timeout", "protocol", "no_session", "interrupted".
	Code     string   `json:"code"`
	ExitCode int      `json:"exitCode"`
	Message  string   `json:"message"`
	Server   string   `json:"server,omitempty"`
	Hints    []string `json:"hints,omitempty"`
	// Details carries structured extras (argument violations, candidates).
	Details map[string]any `json:"details,omitempty"`
	// Text, when set, replaces Message in text mode (it may add lines
	// that JSON carries in Details).
	Text string `json:"-"`
}

// PrintError writes e to w: in JSON mode as one object
// {"error": {...}} on one line, otherwise as age-style lines
//
//	mcpctl: error: what went wrong
//	mcpctl: hint: what to try
func PrintError(w io.Writer, e ErrorInfo, jsonMode bool) {
	if jsonMode {
		data, err := marshal(map[string]any{"error": e})
		if err == nil {
			fmt.Fprintf(w, "%s\n", data)
			return
		}
	}
	var b strings.Builder
	text := e.Message
	if e.Text != "" {
		text = e.Text
	}
	// Errors quote servers (their stderr, their messages): nothing in them
	// may act on the terminal.
	for _, line := range strings.Split(Printable(text), "\n") {
		fmt.Fprintf(&b, "mcpctl: error: %s\n", line)
	}
	for _, h := range e.Hints {
		fmt.Fprintf(&b, "mcpctl: hint: %s\n", Printable(h))
	}
	io.WriteString(w, b.String())
}

// Note writes a diagnostic line for people (progress, "nothing to do") to w.
func Note(w io.Writer, format string, args ...any) {
	// Each line its prefix, as errors have: a note may quote a server's
	// lines (its stderr).
	var b strings.Builder
	for _, line := range strings.Split(Printable(fmt.Sprintf(format, args...)), "\n") {
		b.WriteString("mcpctl: " + line + "\n")
	}
	io.WriteString(w, b.String())
}
