package commands

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/mcpctl/mcpctl/engine"
	"github.com/mcpctl/mcpctl/output"
)

// progressReporter shows a request's progress on stderr: as JSON lines with
// --progress, as one live line on a terminal, not at all otherwise (then
// onProgress is nil, and the session sends none). done clears the live
// line.
func (env *Env) progressReporter(asJSON bool, name string) (onProgress func(engine.Progress), done func()) {
	var mu sync.Mutex
	switch {
	case asJSON:
		enc := json.NewEncoder(env.ErrOut)
		return func(p engine.Progress) {
			mu.Lock()
			defer mu.Unlock()
			enc.Encode(map[string]any{"progress": p})
		}, func() {}
	case env.liveOK():
		drawn, width := false, env.stderrWidth()
		return func(p engine.Progress) {
				mu.Lock()
				defer mu.Unlock()
				// Cut to the terminal's width: \r goes back to the start
				// of the last row only.
				fmt.Fprintf(env.ErrOut, "\r\033[K%s", fitWidth(progressLine(name, p), width))
				drawn = true
			}, func() {
				mu.Lock()
				defer mu.Unlock()
				if drawn {
					io.WriteString(env.ErrOut, "\r\033[K")
				}
			}
	}
	return nil, func() {}
}

// progressLine is "name: message (40%)", or for a task "name: task
// working: message", the server's message made printable for a terminal.
func progressLine(name string, p engine.Progress) string {
	p.Message = output.Printable(oneLineText(p.Message))
	s := name + ":"
	if p.Status != "" {
		s += " task " + p.Status
		if p.Message != "" {
			s += ": " + p.Message
		}
		return s
	}
	if p.Message != "" {
		s += " " + p.Message
	}
	switch {
	case p.Total > 0:
		s += fmt.Sprintf(" (%.0f%%)", 100*p.Progress/p.Total)
	default:
		s += fmt.Sprintf(" (%g)", p.Progress)
	}
	return s
}
