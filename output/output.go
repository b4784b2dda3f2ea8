// Package output is the one place mcpctl renders results: JSON (indented on
// a terminal, compact in a pipe), jq filters through gojq, tables and plain
// text for people, and errors as text or one JSON object.
//
// Commands hand it plain Go values; they never format for themselves.
package output

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/itchyny/gojq"
)

// A Format is what the user asked for on the command line.
type Format struct {
	// JSON forces JSON even on a terminal (--json).
	JSON bool
	// JQ is a jq filter applied to the JSON form of the result (--jq).
	JQ string
	// Raw prints string results of the jq filter without quotes (-r).
	Raw bool
	// TTY says stdout is a terminal.
	TTY bool
	// Width is the terminal's width in cells (0: unknown): a table's last
	// column is cut to fit it.
	Width int
	// Context, when set, ends a --jq filter's run when it is done (Ctrl-C):
	// a filter may run for ever (repeat).
	Context context.Context
	// Stderr is where a --jq filter's debug and stderr write (nil: nowhere).
	Stderr io.Writer
}

// A Printer writes results to one writer in one format.
type Printer struct {
	out io.Writer
	f   Format
	jq  *gojq.Code
}

// New returns a Printer. A jq filter is compiled here, before any work is
// done, so a typo in --jq never costs a tool call.
func New(out io.Writer, f Format) (*Printer, error) {
	p := &Printer{out: out, f: f}
	if f.JQ != "" {
		q, err := gojq.Parse(f.JQ)
		if err != nil {
			return nil, jqParseError(f.JQ, err)
		}
		// $ENV and env are the environment, as in jq (they were null).
		code, err := gojq.Compile(q, gojq.WithEnvironLoader(os.Environ),
			gojq.WithFunction("debug", 0, 1, func(v any, args []any) any { return jqDebug(f.Stderr, v, args) }),
			gojq.WithFunction("stderr", 0, 0, func(v any, _ []any) any { return jqStderr(f.Stderr, v) }))
		if err != nil {
			return nil, &JQError{Msg: fmt.Sprintf("invalid --jq filter: %v", err)}
		}
		p.jq = code
	}
	return p, nil
}

// jqDebug is jq's debug and debug(msg): ["DEBUG:",v] (or msg) on a line
// of stderr, and v passed on.
func jqDebug(w io.Writer, v any, args []any) any {
	shown := v
	if len(args) == 1 {
		shown = args[0]
	}
	if w == nil {
		return v
	}
	enc, err := gojq.Marshal([]any{"DEBUG:", shown})
	if err != nil {
		return err
	}
	if _, err := w.Write(append(enc, '\n')); err != nil {
		return err
	}
	return v
}

// jqStderr is jq 1.7's stderr: v on stderr, a string as it is, anything
// else as compact JSON, with no newline; v passed on.
func jqStderr(w io.Writer, v any) any {
	if w == nil {
		return v
	}
	out, isStr := v.(string)
	if !isStr {
		enc, err := gojq.Marshal(v)
		if err != nil {
			return err
		}
		out = string(enc)
	}
	if _, err := io.WriteString(w, out); err != nil {
		return err
	}
	return v
}

// JSONMode reports whether results are printed as JSON: when stdout is not a
// terminal, or --json or --jq was given.
func (p *Printer) JSONMode() bool { return p.f.JSON || p.f.JQ != "" || !p.f.TTY }

// TTY reports whether stdout is a terminal.
func (p *Printer) TTY() bool { return p.f.TTY }

// Print writes v as JSON (through the jq filter, if any) in JSON mode, and
// calls human otherwise. A nil human always prints JSON.
func (p *Printer) Print(v any, human func(io.Writer) error) error {
	if human != nil && !p.JSONMode() {
		return human(p.Plain())
	}
	data, err := marshal(v)
	if err != nil {
		return err
	}
	if p.jq != nil {
		_, err := p.runJQ(data, p.f.TTY)
		return err
	}
	if p.f.TTY {
		var b bytes.Buffer
		if err := json.Indent(&b, data, "", "  "); err != nil {
			return err
		}
		data = b.Bytes()
	}
	data = append(data, '\n')
	_, err = p.out.Write(data)
	return err
}

// Plain is the writer for text for people. On a terminal it writes control
// characters as escapes (see [Printable]), so that a server's text (a
// result, a resource, its instructions, its stderr) cannot move the
// cursor, clear the screen or set the title; a CRLF line end stays a line
// end. In a pipe the text goes out as it is.
func (p *Printer) Plain() io.Writer {
	if !p.f.TTY {
		return p.out
	}
	return terminalWriter{p.out, p.f.Width}
}

type terminalWriter struct {
	w     io.Writer
	width int // in cells; 0: unknown
}

// Write escapes what p holds. Writers of text for people write whole
// strings, so a character is not split between two writes.
func (t terminalWriter) Write(p []byte) (int, error) {
	s := strings.ReplaceAll(string(p), "\r\n", "\n")
	if _, err := io.WriteString(t.w, Printable(s)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Line writes v as one compact JSON line (through the jq filter, if any),
// whatever the terminal: the form of streams such as watch. It reports
// whether anything was written: a filter may drop v.
func (p *Printer) Line(v any) (wrote bool, err error) {
	data, err := marshal(v)
	if err != nil {
		return false, err
	}
	if p.jq != nil {
		n, err := p.runJQ(data, false)
		return n > 0, err
	}
	_, err = p.out.Write(append(data, '\n'))
	return err == nil, err
}

// marshal encodes without HTML escaping: results are read by people and jq,
// not embedded in web pages.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// runJQ writes what the filter makes of data, and says how many values.
func (p *Printer) runJQ(data []byte, indent bool) (n int, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers stay exact through the filter
	var in any
	if err := dec.Decode(&in); err != nil {
		return 0, err
	}
	ctx := p.f.Context
	if ctx == nil {
		ctx = context.Background()
	}
	iter := p.jq.RunWithContext(ctx, in)
	var b bytes.Buffer
	for ; ; n++ {
		if b.Len() >= 64<<10 {
			// What a filter makes goes out as it is made: a reader that
			// has had enough (head) ends it, and a long run holds no more.
			if _, err := p.out.Write(b.Bytes()); err != nil {
				return n, err
			}
			b.Reset()
		}
		v, ok := iter.Next()
		if !ok {
			break
		}
		if err, isErr := v.(error); isErr {
			if h, halt := err.(*gojq.HaltError); halt && h.Value() == nil {
				break
			}
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				p.out.Write(b.Bytes())
				return n, err // interrupted, not a filter's failure
			}
			p.out.Write(b.Bytes())
			return n, &JQError{Msg: fmt.Sprintf("--jq filter failed: %v", err),
				Caret: []string{"the command itself ran; only the filter failed on its result"}}
		}
		if s, isStr := v.(string); isStr && p.f.Raw {
			b.WriteString(s)
			b.WriteByte('\n')
			continue
		}
		enc, err := gojq.Marshal(v)
		if err != nil {
			p.out.Write(b.Bytes()) // what came before it stands
			return n, err
		}
		if indent {
			var ib bytes.Buffer
			if json.Indent(&ib, enc, "", "  ") == nil {
				enc = ib.Bytes()
			}
		}
		b.Write(enc)
		b.WriteByte('\n')
	}
	_, err = p.out.Write(b.Bytes())
	return n, err
}

// A JQError is a --jq filter that does not parse or fails on the data. It is
// a usage error.
type JQError struct {
	Msg   string
	Caret []string // the filter and a caret under the problem, if known
}

func (e *JQError) Error() string { return e.Msg }

// Hints implements the hint convention of mcpctl's error printer.
func (e *JQError) Hints() []string { return e.Caret }

func jqParseError(src string, err error) error {
	je := &JQError{Msg: fmt.Sprintf("invalid --jq filter: %v", err)}
	var pe *gojq.ParseError
	if errors.As(err, &pe) && !strings.Contains(src, "\n") {
		// Offset is just past the token that broke the parse.
		off := pe.Offset - len(pe.Token)
		if off < 0 || off > len(src) {
			off = len(src)
		}
		je.Caret = []string{"  " + src, "  " + strings.Repeat(" ", off) + "^"}
	}
	return je
}
