package engine

import (
	"io"
	"strings"
	"testing"
)

// R4: the SDK dispatches an event whose last line has no newline at EOF;
// the tee drops that line.
func TestSSETeeLastLineAtEOF(t *testing.T) {
	var got []string
	body := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"
	tee := &sseTee{ReadCloser: io.NopCloser(strings.NewReader(body)), onData: func(b []byte) { got = append(got, string(b)) }}
	io.ReadAll(tee)
	if len(got) != 1 {
		t.Fatalf("events seen by the tee: %q", got)
	}
}

// Events split across reads one byte at a time, CRLF, multi-line data.
func TestSSETeeSplitEvents(t *testing.T) {
	var got []string
	body := "data: {\"a\":\r\ndata: 1}\r\n\r\n: comment\r\ndata:{\"b\":2}\n\n"
	tee := &sseTee{ReadCloser: io.NopCloser(&oneByte{strings.NewReader(body)}), onData: func(b []byte) { got = append(got, string(b)) }}
	io.ReadAll(tee)
	if len(got) != 2 || got[0] != "{\"a\":\n1}" || got[1] != "{\"b\":2}" {
		t.Fatalf("%q", got)
	}
}

type oneByte struct{ r io.Reader }

func (o *oneByte) Read(p []byte) (int, error) { return o.r.Read(p[:min(1, len(p))]) }
