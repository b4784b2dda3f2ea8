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

// An event longer than mcpctl reads in one message is not passed on, not
// cut into a broken one: an answer to a request is replaced by the error
// that says it was dropped (for the SDK and for onData), a notification
// goes, whether its data is one line or many; the next event comes through
// intact.
func TestSSETeeDropsOverlongEvent(t *testing.T) {
	long := func() io.Reader { return io.LimitReader(xs{}, maxMessage) }
	body := io.MultiReader(
		strings.NewReader("event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"text\":\""), long(), strings.NewReader("\"}}\n\n"),
		strings.NewReader("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\""), long(), strings.NewReader("\"}}\n\n"),
		strings.NewReader("data: {\"jsonrpc\":\"2.0\",\"id\":\"s-8\",\r\ndata: \"result\":{\"text\":\""), io.LimitReader(xs{}, maxMessage/2),
		strings.NewReader("\r\ndata: "), io.LimitReader(xs{}, maxMessage/2), strings.NewReader("\"}}\r\n\r\n"),
		strings.NewReader("data: {\"ok\":1}\n\n"))
	var got []string
	tee := &sseTee{ReadCloser: io.NopCloser(body), onData: func(b []byte) { got = append(got, string(b)) }}
	out, err := io.ReadAll(tee)
	if err != nil {
		t.Fatal(err)
	}
	dropped7, dropped8 := string(droppedAnswer([]byte("7"))), string(droppedAnswer([]byte(`"s-8"`)))
	if want := "data: " + dropped7 + "\n\ndata: " + dropped8 + "\n\ndata: {\"ok\":1}\n\n"; string(out) != want {
		t.Errorf("passed on %d bytes, starting %q; want %q", len(out), out[:min(len(out), 300)], want)
	}
	if len(got) != 3 || got[0] != dropped7 || got[1] != dropped8 || got[2] != `{"ok":1}` {
		for i, g := range got {
			t.Logf("event %d: %d bytes, starting %q", i, len(g), g[:min(40, len(g))])
		}
		t.Errorf("onData had %d events, want the two dropped answers and the one after", len(got))
	}
}

type xs struct{}

func (xs) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}
