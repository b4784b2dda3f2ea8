package engine

import (
	"io"
	"strings"
	"testing"
)

// The SDK dispatches an event whose last line has no newline at EOF; so
// must the tee.
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

// An event longer than mcpctl reads in one message is dropped whole, not
// cut into a broken one, and the next event comes through intact.
func TestSSETeeDropsOverlongEvent(t *testing.T) {
	var got []string
	long := io.LimitReader(xs{}, maxMessage+1)
	body := io.MultiReader(strings.NewReader("data: "), long, strings.NewReader("\ndata: tail\n\ndata: {\"ok\":1}\n\n"))
	tee := &sseTee{ReadCloser: io.NopCloser(body), onData: func(b []byte) { got = append(got, string(b)) }}
	if _, err := io.Copy(io.Discard, tee); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != `{"ok":1}` {
		for i, g := range got {
			t.Logf("event %d: %d bytes, starting %q", i, len(g), g[:min(40, len(g))])
		}
		t.Fatalf("%d events, want only the one after the overlong event", len(got))
	}
}

type xs struct{}

func (xs) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}
