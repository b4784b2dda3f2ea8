package output

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-runewidth"
)

func TestPrint(t *testing.T) {
	t.Setenv("MCPCTL_TEST_ENV", "set")
	v := json.RawMessage(`{"big":12345678901234567890,"s":"<a & b>","list":[1,2]}`)
	for _, tc := range []struct {
		name string
		f    Format
		want string
	}{
		{"pipe is compact JSON", Format{}, `{"big":12345678901234567890,"s":"<a & b>","list":[1,2]}` + "\n"},
		{"terminal is human", Format{TTY: true}, "HUMAN\n"},
		{"--json on a terminal is indented", Format{TTY: true, JSON: true}, "{\n  \"big\": 12345678901234567890,\n  \"s\": \"<a & b>\",\n  \"list\": [\n    1,\n    2\n  ]\n}\n"},
		{"jq keeps numbers exact", Format{JQ: ".big"}, "12345678901234567890\n"},
		{"jq string", Format{JQ: ".s"}, "\"<a & b>\"\n"},
		{"jq raw string", Format{JQ: ".s", Raw: true}, "<a & b>\n"},
		{"jq many results", Format{JQ: ".list[]"}, "1\n2\n"},
		{"jq on a terminal", Format{JQ: ".list", TTY: true}, "[\n  1,\n  2\n]\n"},
		{"jq halt", Format{JQ: ".list[0], halt, 5"}, "1\n"},
		// The environment, as jq gives it (MCPCTL_TEST_ENV set below).
		{"jq $ENV", Format{JQ: "$ENV.MCPCTL_TEST_ENV, env.MCPCTL_TEST_ENV", Raw: true}, "set\nset\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			p, err := New(&b, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			err = p.Print(v, func(w io.Writer) error { _, err := io.WriteString(w, "HUMAN\n"); return err })
			if err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got %q, want %q", b.String(), tc.want)
			}
		})
	}
}

func TestJQErrors(t *testing.T) {
	_, err := New(io.Discard, Format{JQ: ".a | ]"})
	var je *JQError
	if !errors.As(err, &je) || !strings.Contains(je.Msg, "invalid --jq filter") {
		t.Fatalf("parse error: %v", err)
	}
	if len(je.Caret) != 2 || !strings.HasSuffix(je.Caret[1], "^") {
		t.Errorf("caret: %q", je.Caret)
	}
	p, err := New(io.Discard, Format{JQ: ".a.b"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Print(json.RawMessage(`{"a":[1]}`), nil); !errors.As(err, &je) || !strings.Contains(je.Msg, "--jq filter failed") {
		t.Errorf("runtime error: %v", err)
	}
}

// A note of several lines (one quoting a server's stderr) has the prefix
// on each, as an error has.
func TestNoteLines(t *testing.T) {
	var b bytes.Buffer
	Note(&b, "warning: %s", "server x left out\nlast stderr lines of x:\n  boom \x1b[31m")
	want := "mcpctl: warning: server x left out\nmcpctl: last stderr lines of x:\nmcpctl:   boom \\x1b[31m\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestPrintError(t *testing.T) {
	e := ErrorInfo{Code: "usage", ExitCode: 2, Message: "bad\nthing", Server: "fs", Hints: []string{"try this"}, Text: "bad\nthing\n  detail"}
	var b bytes.Buffer
	PrintError(&b, e, false)
	want := "mcpctl: error: bad\nmcpctl: error: thing\nmcpctl: error:   detail\nmcpctl: hint: try this\n"
	if b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	PrintError(&b, e, true)
	if b.String() != `{"error":{"code":"usage","exitCode":2,"message":"bad\nthing","server":"fs","hints":["try this"]}}`+"\n" {
		t.Errorf("json: %s", b.String())
	}
}

func TestTable(t *testing.T) {
	var b bytes.Buffer
	if err := Table(&b, []string{"name", "state"}, [][]string{{"everything", "ready"}, {"fs", "starting"}}); err != nil {
		t.Fatal(err)
	}
	want := "NAME         STATE\neverything   ready\nfs           starting\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}

// Wide characters take two columns, empty cells keep their column, trailing
// ones leave no blanks, and a cell's line breaks stay on the row's line.
func TestTableWidthsAndLines(t *testing.T) {
	var b bytes.Buffer
	rows := [][]string{
		{"日本", "", "x"},
		{"fs", "crashed", "exit 1:\nno such file"},
		{"e", "ready", ""},
	}
	if err := Table(&b, []string{"name", "state", "last error"}, rows); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"NAME   STATE     LAST ERROR\n" +
		"日本             x\n" +
		"fs     crashed   exit 1: no such file\n" +
		"e      ready\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// On a terminal of known width the widest columns but the first are cut so
// that no row wraps (counting cells: 日本 takes four); in a pipe, or when
// cutting each to 10 cells would not do, rows stay whole.
func TestTableFitsTerminal(t *testing.T) {
	rows := [][]string{{"日本", "a long description that goes on"}, {"fs", "short"}}
	table := func(w io.Writer) error { return Table(w, []string{"name", "description"}, rows) }
	for _, tc := range []struct {
		f    Format
		want string
	}{
		{Format{TTY: true, Width: 24}, "NAME   DESCRIPTION\n日本   a long descript…\nfs     short\n"},
		{Format{TTY: true}, "NAME   DESCRIPTION\n日本   a long description that goes on\nfs     short\n"},
		{Format{TTY: true, Width: 12}, "NAME   DESCRIPTION\n日本   a long description that goes on\nfs     short\n"},
	} {
		var b bytes.Buffer
		p, _ := New(&b, tc.f)
		if err := p.Print(nil, table); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("width %d: got\n%s\nwant\n%s", tc.f.Width, b.String(), tc.want)
		}
		for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
			if tc.f.Width == 24 && runewidth.StringWidth(line) > 23 {
				t.Errorf("width 24: %q is wider than 23 cells", line)
			}
		}
	}
}

// A long column in the middle (a URI) is cut too, with the last: only the
// last was, and rows with a long URI wrapped however short the rest. A
// column is cut to 12 cells at least, which leaves a state whole.
func TestTableFitsTerminalMiddleColumn(t *testing.T) {
	var b bytes.Buffer
	p, _ := New(&b, Format{TTY: true, Width: 60})
	rows := [][]string{{"fs", "file:///home/someone/projects/a/very/long/path/README.md", "unavailable", "the project's readme"}}
	if err := p.Print(nil, func(w io.Writer) error { return Table(w, []string{"server", "uri", "state", "description"}, rows) }); err != nil {
		t.Fatal(err)
	}
	want := "SERVER   URI                 STATE         DESCRIPTION\nfs       file:///home/som…   unavailable   the project's r…\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if runewidth.StringWidth(line) > 59 {
			t.Errorf("%q is wider than 59 cells", line)
		}
	}
}

// The first column names the row (a server, a tool, the resources table's
// URI), which a user reads and copies: it is never cut. The others are,
// when that makes the row fit; when it cannot, nothing is.
func TestTableNeverCutsTheFirstColumn(t *testing.T) {
	uri := "file:///home/someone/projects/a/very/long/path/README.md"
	for _, tc := range []struct {
		width int
		want  string
	}{
		{80, "URI" + strings.Repeat(" ", 56) + "SERVER   NAME     TYPE\n" + uri + "   fs       readme   text/markdown\n"},
		{90, "URI" + strings.Repeat(" ", 56) + "SERVER   NAME     TYPE\n" + uri + "   fs       readme   text/markdo…\n"},
		{40, "URI" + strings.Repeat(" ", 56) + "SERVER   NAME     TYPE\n" + uri + "   fs       readme   text/markdown\n"},
	} {
		var b bytes.Buffer
		p, _ := New(&b, Format{TTY: true, Width: tc.width})
		rows := [][]string{{uri, "fs", "readme", "text/markdown"}}
		if err := p.Print(nil, func(w io.Writer) error { return Table(w, []string{"uri", "server", "name", "type"}, rows) }); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("width %d: got\n%s\nwant\n%s", tc.width, b.String(), tc.want)
		}
	}
}

func TestToolResult(t *testing.T) {
	raw := json.RawMessage(`{"content":[
		{"type":"text","text":"line one"},
		{"type":"image","mimeType":"image/png","data":"` + strings.Repeat("A", 4096) + `"},
		{"type":"audio","mimeType":"audio/wav","data":"AAAA"},
		{"type":"resource_link","uri":"file:///x","name":"x"},
		{"type":"resource","resource":{"uri":"file:///t","text":"embedded text"}},
		{"type":"resource","resource":{"uri":"file:///b","mimeType":"application/zip","blob":"AAAA"}},
		{"type":"hologram","depth":3}]}`)
	var b bytes.Buffer
	if err := ToolResult(&b, raw); err != nil {
		t.Fatal(err)
	}
	want := "line one\n[image image/png, 3.0 KB]\n[audio audio/wav, 3 bytes]\n[resource link x: file:///x]\nembedded text\n" +
		"[resource file:///b (application/zip), 3 bytes]\n[hologram content] {\"depth\":3,\"type\":\"hologram\"}\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	ToolResult(&b, json.RawMessage(`{"content":[],"structuredContent":{"n":1}}`))
	if b.String() != "{\n  \"n\": 1\n}\n" {
		t.Errorf("structured only: %q", b.String())
	}
}

// Text of servers shown on a terminal (table cells, errors with their
// stderr lines, notes) cannot act on it: control characters are escaped.
func TestPrintable(t *testing.T) {
	osc52 := "evil\x1b]52;c;aGk=\x07 tool"
	var b bytes.Buffer
	Table(&b, []string{"name", "description"}, [][]string{{"s.x", osc52}})
	PrintError(&b, ErrorInfo{Message: "server s exited\n\x1b[2Jcleared", Hints: []string{"try \u009b31m \x9b"}}, false)
	Note(&b, "warning: %s", "\x1b[31mred")
	got := b.String()
	for _, c := range []string{"\x1b", "\x07", "\u009b", "\x9b"} {
		if strings.Contains(got, c) {
			t.Errorf("%q reached the terminal: %q", c, got)
		}
	}
	for _, want := range []string{`evil\x1b]52;c;aGk=\x07 tool`, `mcpctl: error: \x1b[2Jcleared`, `try \u009b31m \x9b`, `warning: \x1b[31mred`} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in %q", want, got)
		}
	}
	// Bidi controls would show the text in another order than it has.
	if got, want := Printable("evil.com\u202egro.elgoog \u2066x\u2069 zero\u200bwidth tag\U000E0041"), `evil.com\u202egro.elgoog \u2066x\u2069 zero\u200bwidth tag\U000e0041`; got != want {
		t.Errorf("Printable = %q, want %q", got, want)
	}
	if s := "plain é\ttext\n, a family 👨\u200d👩\u200d👧"; Printable(s) != s {
		t.Errorf("Printable changed %q", s)
	}
}

// A --jq filter that runs for ever (repeat) ends with the run's context,
// as Ctrl-C ends it: it ignored Ctrl-C and SIGTERM.
func TestJQStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p, err := New(io.Discard, Format{JQ: "last(repeat(1))", Context: ctx})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Print(map[string]any{}, nil) }()
	time.AfterFunc(50*time.Millisecond, cancel)
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the filter did not stop with its context")
	}
}

// What a filter makes is written as it is made, so a reader that closes
// (head) ends an endless one: it was all kept in memory (9 GB in ten
// minutes) and written at the end, which never came.
func TestJQWritesAsItGoes(t *testing.T) {
	closed := errors.New("the reader has gone")
	p, err := New(failingWriter{closed}, Format{JQ: "repeat(1)", Context: context.Background()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Print(map[string]any{}, nil) }()
	select {
	case err := <-done:
		if !errors.Is(err, closed) {
			t.Errorf("err = %v, want the writer's", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the filter's output was not written as it was made")
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

// A blob a server gives no MIME type is not shown with "()" for one.
func TestResourceContentsBlobWithoutMIMEType(t *testing.T) {
	var b strings.Builder
	if err := ResourceContents(&b, json.RawMessage(`{"contents": [{"uri": "x://a", "blob": "aGVsbG8="}, {"uri": "x://b", "mimeType": "image/png", "blob": "aGk="}]}`)); err != nil {
		t.Fatal(err)
	}
	want := "[blob x://a, 5 bytes; write it with --output-file FILE]\n[blob x://b (image/png), 2 bytes; write it with --output-file FILE]\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	// Nor an embedded resource in a tool's result.
	b.Reset()
	if err := ToolResult(&b, json.RawMessage(`{"content": [{"type": "resource", "resource": {"uri": "x://c", "blob": "aGk="}}]}`)); err != nil {
		t.Fatal(err)
	}
	if want := "[resource x://c, 2 bytes]\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

// A blob or an image that is not base64 says so, where a size was made up
// from its length (and --output-file refuses it); a size is the decoded
// one, padding or not.
func TestDataNotBase64(t *testing.T) {
	var b strings.Builder
	if err := ResourceContents(&b, json.RawMessage(`{"contents": [{"uri": "x://a", "blob": "not base64!!"}, {"uri": "x://b", "blob": "aGVsbG8"}]}`)); err != nil {
		t.Fatal(err)
	}
	want := "[blob x://a, not base64: 12 characters]\n[blob x://b, not base64: 7 characters]\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := ToolResult(&b, json.RawMessage(`{"content": [{"type": "image", "mimeType": "image/png", "data": "%%%%"}]}`)); err != nil {
		t.Fatal(err)
	}
	if want := "[image image/png, not base64: 4 characters]\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
