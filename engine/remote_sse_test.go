package engine

import (
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The SDK dispatches an event whose last line has no newline at EOF; so
// must the tee.
func TestSSETeeLastLineAtEOF(t *testing.T) {
	var got []string
	body := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"
	tee := &sseTee{ReadCloser: io.NopCloser(strings.NewReader(body)), onData: func(b []byte) error { got = append(got, string(b)); return nil }}
	io.ReadAll(tee)
	if len(got) != 1 {
		t.Fatalf("events seen by the tee: %q", got)
	}
}

// Events split across reads one byte at a time, CRLF, multi-line data.
func TestSSETeeSplitEvents(t *testing.T) {
	var got []string
	body := "data: {\"a\":\r\ndata: 1}\r\n\r\n: comment\r\ndata:{\"b\":2}\n\n"
	tee := &sseTee{ReadCloser: io.NopCloser(&oneByte{strings.NewReader(body)}), onData: func(b []byte) error { got = append(got, string(b)); return nil }}
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
	tee := &sseTee{ReadCloser: io.NopCloser(body), onData: func(b []byte) error { got = append(got, string(b)); return nil }}
	out, err := io.ReadAll(tee)
	if err != nil {
		t.Fatal(err)
	}
	dropped7, dropped8 := string(droppedAnswer([]byte("7"))), string(droppedAnswer([]byte(`"s-8"`)))
	if want := "event: message\nid: 1\ndata: " + dropped7 + "\n\ndata: " + dropped8 + "\n\ndata: {\"ok\":1}\n\n"; string(out) != want {
		t.Errorf("passed on %d bytes, starting %q; want %q", len(out), out[:min(len(out), 300)], want)
	}
	if len(got) != 3 || got[0] != dropped7 || got[1] != dropped8 || got[2] != `{"ok":1}` {
		for i, g := range got {
			t.Logf("event %d: %d bytes, starting %q", i, len(g), g[:min(40, len(g))])
		}
		t.Errorf("onData had %d events, want the two dropped answers and the one after", len(got))
	}
}

// teeAll passes body through an sseTee: what it passed on, and the data
// it handed to onData.
func teeAll(t *testing.T, body ...io.Reader) (string, []string) {
	t.Helper()
	var got []string
	tee := &sseTee{ReadCloser: io.NopCloser(io.MultiReader(body...)), onData: func(b []byte) error { got = append(got, string(b)); return nil }}
	out, err := io.ReadAll(tee)
	if err != nil {
		t.Fatal(err)
	}
	return string(out), got
}

// The SDK counts the blank line that ends an event: an event whose lines
// come to exactly maxMessage bytes is over it, is dropped, and the next
// one still goes on whole (the blank line was once taken for part of an
// overlong line, and the two events went as one).
func TestSSETeeEventAtTheLimit(t *testing.T) {
	for _, eol := range []string{"\n", "\r\n"} {
		head := `data: {"jsonrpc":"2.0","id":7,"result":{"text":"`
		foot := `"}}` + eol
		next := `data: {"jsonrpc":"2.0","id":8,"result":{}}` + eol + eol
		out, got := teeAll(t, strings.NewReader(head), io.LimitReader(xs{}, int64(maxMessage-len(head)-len(foot))),
			strings.NewReader(foot+eol+next))
		dropped := string(droppedAnswer([]byte("7")))
		if want := "data: " + dropped + "\n\n" + next; out != want {
			t.Errorf("%q: passed on %d bytes, starting %q; want %q", eol, len(out), out[:min(len(out), 300)], want)
		}
		if len(got) != 2 || got[0] != dropped || got[1] != `{"jsonrpc":"2.0","id":8,"result":{}}` {
			t.Errorf("%q: onData had %d events, want the dropped answer and the next", eol, len(got))
		}
	}
}

// At the end of the stream the newlines the last event lacks count as any
// other byte: an event that would be over maxMessage with them is dropped
// rather than passed on for the SDK to give up the stream over.
func TestSSETeeLimitAtEOF(t *testing.T) {
	head := `data: {"jsonrpc":"2.0","id":7,"result":{"text":"`
	foot := `"}}`
	out, _ := teeAll(t, strings.NewReader(head), io.LimitReader(xs{}, int64(maxMessage-len(head)-len(foot))), strings.NewReader(foot))
	if want := "data: " + string(droppedAnswer([]byte("7"))) + "\n\n"; out != want {
		t.Errorf("passed on %d bytes, starting %q; want %q", len(out), out[:min(len(out), 300)], want)
	}
}

// A read that ends inside "data:" of the line that takes an event over
// the limit: the line is still read as data, and the request's id at its
// end answered.
func TestSSETeeReadEndsInsideDataKey(t *testing.T) {
	head := `data: {"result":{"text":"`
	foot := "\"}},\n"
	out, _ := teeAll(t, strings.NewReader(head), io.LimitReader(xs{}, int64(maxMessage-2-len(head)-len(foot))), strings.NewReader(foot),
		strings.NewReader("dat"), strings.NewReader(`a: "jsonrpc":"2.0","id":7}`+"\n\n"))
	if want := "data: " + string(droppedAnswer([]byte("7"))) + "\n\n"; out != want {
		t.Errorf("passed on %d bytes, starting %q; want %q", len(out), out[:min(len(out), 300)], want)
	}
}

type xs struct{}

func (xs) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// An event whose data is not a JSON-RPC message goes on without its data
// (its id and retry kept for the SDK's resumption), where the SDK gave the
// whole connection up over it; an event of another name (the SSE
// transport's endpoint) is not the tee's to judge.
func TestSSETeeDropsWhatIsNotAMessage(t *testing.T) {
	body := "event: endpoint\ndata: /message?s=1\n\n" +
		"event: message\nid: 7\nretry: 300\ndata: {}\n\n" +
		"data: [1,2]\n\n" +
		"id: 8\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"
	var seen []string
	tee := &sseTee{ReadCloser: io.NopCloser(&oneByte{strings.NewReader(body)}), onData: func(b []byte) error {
		seen = append(seen, string(b))
		_, err := jsonrpc.DecodeMessage(b)
		return err
	}}
	out, _ := io.ReadAll(tee)
	want := "event: endpoint\ndata: /message?s=1\n\n" +
		"id:7\nretry:300\n\n" +
		"id: 8\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"
	if string(out) != want {
		t.Errorf("the SDK was handed\n%q\nwant\n%q", out, want)
	}
	if len(seen) != 3 || tee.lastID != "8" || tee.retry != 300*time.Millisecond {
		t.Errorf("onData saw %q; last id %q, retry %v", seen, tee.lastID, tee.retry)
	}
}

// dataThenEOF gives all its data and io.EOF in one read, as net/http's
// bodies do when the end is already buffered.
type dataThenEOF struct{ data string }

func (d *dataThenEOF) Read(p []byte) (int, error) {
	n := copy(p, d.data)
	d.data = d.data[n:]
	if d.data == "" {
		return n, io.EOF
	}
	return n, nil
}

// The events before a stream's end reach the SDK before the stream is
// opened again (which waits for the server's retry delay), and an event
// the end cut off is dropped, not finished: "da" would be a malformed
// line to the SDK, which fails the connection over one.
func TestSSETeeSplice(t *testing.T) {
	msg := `data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n\n"
	reopened := make(chan struct{}, 2)
	opens := 0
	tee := &sseTee{
		ReadCloser: io.NopCloser(&dataThenEOF{"retry: 50\n\n" + msg + "id: 3\n\nid: 4\nda"}),
		onData:     func([]byte) error { return nil },
		// The first stream lived long enough to be opened again, its
		// successor (read in a moment, however busy the machine) not.
		lived:  time.Hour,
		opened: time.Now().Add(-2 * time.Hour),
		reopen: func(lastID string, retry time.Duration) io.ReadCloser {
			reopened <- struct{}{}
			if opens++; opens > 1 || lastID != "3" || retry != 50*time.Millisecond {
				t.Errorf("reopen %d from id %q after %v", opens, lastID, retry)
				return nil
			}
			return io.NopCloser(strings.NewReader(msg))
		},
	}
	buf := make([]byte, 64<<10)
	n, err := tee.Read(buf)
	if err != nil || !strings.Contains(string(buf[:n]), "list_changed") {
		t.Fatalf("first read: %q, %v", buf[:n], err)
	}
	select {
	case <-reopened:
		t.Error("the stream was opened again before its last events were read")
	default:
	}
	rest, _ := io.ReadAll(tee)
	out := string(buf[:n]) + string(rest)
	if strings.Count(out, "list_changed") != 2 || strings.Contains(out, "da\n") || strings.Contains(out, "id: 4") {
		t.Errorf("the SDK was handed %q", out)
	}
}

// Over the HTTP+SSE transport, whose SDK client takes every event after
// the endpoint as a message, one that is not a JSON-RPC message is dropped
// whole (an event of its id alone would be a message with no data, which
// that client fails on), whatever its name, and so is one with no data.
func TestSSETeeLegacyDropsWhatIsNotAMessage(t *testing.T) {
	body := "event: endpoint\ndata: /message?s=1\n\n" +
		"event: message\nid: 7\ndata: {}\n\n" +
		"event: other\ndata: nonsense\n\n" +
		"event: ping\n\nid: 9\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"
	tee := &sseTee{ReadCloser: io.NopCloser(strings.NewReader(body)), legacy: true, onData: func(b []byte) error {
		_, err := jsonrpc.DecodeMessage(b)
		return err
	}}
	out, _ := io.ReadAll(tee)
	want := "event: endpoint\ndata: /message?s=1\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"
	if string(out) != want {
		t.Errorf("the SDK was handed\n%q\nwant\n%q", out, want)
	}
}

// A line with no colon is a field with no value (the SSE spec): "data" is
// an empty data line, any other means nothing and is dropped, as is an id
// with a NUL, which the spec ignores, or another control byte. The SDK
// gave the connection up over the first ("malformed line"), and could not
// send the others as a Last-Event-ID.
func TestSSETeeFieldsTheSDKRefuses(t *testing.T) {
	body := "garbage line without colon\nid: a\x00b\nid: a\x01b\ndata: {\"jsonrpc\":\"2.0\",\ndata\ndata: \"method\":\"x\"}\n\n"
	var seen []string
	tee := &sseTee{ReadCloser: io.NopCloser(&oneByte{strings.NewReader(body)}), onData: func(b []byte) error {
		seen = append(seen, string(b))
		return nil
	}}
	out, _ := io.ReadAll(tee)
	want := "data: {\"jsonrpc\":\"2.0\",\ndata:\ndata: \"method\":\"x\"}\n\n"
	if string(out) != want || tee.lastID != "" {
		t.Errorf("the SDK was handed\n%q\nwant\n%q (last id %q)", out, want, tee.lastID)
	}
	if len(seen) != 1 || seen[0] != "{\"jsonrpc\":\"2.0\",\n\n\"method\":\"x\"}" {
		t.Errorf("onData saw %q", seen)
	}
}

// An event whose id came before on the connection is not passed on again
// (only its id): ids are unique across a session's streams, and
// server-everything, asked to resume its event stream, replays every
// stream's events, so that progress was told twice and a question asked
// twice.
func TestSSETeeRepeatedEvents(t *testing.T) {
	var ids eventIDs
	msg := func(id, method string) string {
		return "id: " + id + "\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"" + method + "\"}\n\n"
	}
	var seen []string
	read := func(body string) string {
		tee := &sseTee{ReadCloser: io.NopCloser(strings.NewReader(body)), repeated: ids.repeated, onData: func(b []byte) error {
			seen = append(seen, string(b))
			return nil
		}}
		out, _ := io.ReadAll(tee)
		return string(out)
	}
	read(msg("p1", "notifications/progress") + msg("q1", "elicitation/create"))
	out := read(msg("p1", "notifications/progress") + msg("q1", "elicitation/create") + msg("n2", "notifications/message"))
	if want := "id:p1\n\nid:q1\n\n" + msg("n2", "notifications/message"); out != want {
		t.Errorf("the replay was handed on as\n%q\nwant\n%q", out, want)
	}
	if len(seen) != 3 {
		t.Errorf("onData saw %d events, want 3", len(seen))
	}
	// A server that counts each stream's events from 0 gives one id to
	// several: an event is the same only with the same data.
	if out := read(msg("p1", "notifications/tools/list_changed")); out != msg("p1", "notifications/tools/list_changed") {
		t.Errorf("a new event under an id used before was handed on as %q", out)
	}
	// The set forgets the oldest events beyond its size.
	for i := range len(ids.ring) + 1 {
		ids.repeated([]byte(strconv.Itoa(i)), nil)
	}
	if ids.repeated([]byte("0"), nil) || !ids.repeated([]byte("4096"), nil) || len(ids.set) != len(ids.ring) {
		t.Errorf("the set holds %d events", len(ids.set))
	}
}

// A stream that broke is told when it is not open again within the
// grace (the server degraded while it is not), and so is one that ended
// and could not be opened again; a stream opened again is told too, which
// makes the server ready.
func TestSSETeeTellsBreaks(t *testing.T) {
	for _, c := range []struct {
		name   string
		end    error
		reopen time.Duration // how long it takes; -1: it fails
		want   []string
	}{
		{"broke, opened again at once", io.ErrUnexpectedEOF, 0, []string{"reopen", "open"}},
		{"broke, opened again late", io.ErrUnexpectedEOF, 200 * time.Millisecond, []string{"reopen", "break: unexpected EOF", "open"}},
		{"broke, not opened again", io.ErrUnexpectedEOF, -1, []string{"reopen", "break: unexpected EOF"}},
		{"ended, opened again", io.EOF, 0, []string{"reopen", "open"}},
		{"ended, not opened again", io.EOF, -1, []string{"reopen", "break: " + errNotReopened.Error()}},
	} {
		var mu sync.Mutex
		var got []string
		note := func(s string) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, s)
		}
		tee := &sseTee{
			ReadCloser: io.NopCloser(io.MultiReader(strings.NewReader("data: {}\n\n"), errReader{c.end})),
			onData:     func([]byte) error { return nil },
			onBreak:    func(err error) { note("break: " + err.Error()) },
			onReopen:   func() { note("open") },
			lived:      time.Millisecond,
			opened:     time.Now().Add(-time.Second),
			breakGrace: 50 * time.Millisecond,
		}
		tee.reopen = func(string, time.Duration) io.ReadCloser {
			note("reopen")
			tee.reopen = nil
			if c.reopen < 0 {
				return nil
			}
			time.Sleep(c.reopen)
			return io.NopCloser(strings.NewReader(""))
		}
		io.ReadAll(tee)
		time.Sleep(100 * time.Millisecond) // a break told late would come by now
		mu.Lock()
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		mu.Unlock()
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
