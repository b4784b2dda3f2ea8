package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A line longer than serve reads is answered and dropped, to its end, and
// the lines around it go through.
func TestFilterLinesTooLong(t *testing.T) {
	defer func(n int) { maxServeLine = n }(maxServeLine)
	maxServeLine = 100
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"` + strings.Repeat("x", 200<<10) + `"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	passed, err := io.ReadAll(filterLines(io.NopCloser(strings.NewReader(in)), &out))
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n"; string(passed) != want {
		t.Errorf("passed on %q, want %q", passed, want)
	}
	if want := "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"Invalid Request: the message is longer than 0 MiB\"}}\n"; out.String() != want {
		t.Errorf("answered %q, want %q", out.String(), want)
	}
}

// The lines serve lets through are ones the SDK's transport takes: a
// message longer than the SDK's own default bound (16 MiB), a message
// pretty-printed over several lines; a batch that uses an id twice, which
// would end the SDK's connection, is answered instead.
func TestFilterLinesAsTheSDKTakesThem(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"` + strings.Repeat("x", 20<<20) + `"}}`
	in := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" + big + "\n" +
		"{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 3,\n  \"method\": \"ping\"\n}\n" +
		`[{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"ping"}]` + "\n" +
		`{"jsonrpc":"2.0","id":5,"method":"ping"}` + "\n"
	var out bytes.Buffer
	r := filterLines(io.NopCloser(strings.NewReader(in)), newLockedWriter(&out))
	conn, err := (&mcp.IOTransport{Reader: r, Writer: newLockedWriter(io.Discard), MaxLineLength: -1}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []any
	for range 4 {
		msg, err := conn.Read(context.Background())
		if err != nil {
			t.Fatalf("after %v: %v", ids, err)
		}
		ids = append(ids, msg.(*jsonrpc.Request).ID.Raw())
	}
	if want := []any{int64(1), int64(2), int64(3), int64(5)}; fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("the SDK read %v, want %v", ids, want)
	}
	if !strings.Contains(out.String(), `"error":{"code":-32600,"message":"Invalid Request: the batch uses the id 4 twice"}`) {
		t.Errorf("answered %q", out.String())
	}
}

// An id the SDK would read as another (a fraction, past int64), an id
// with neither a method nor a result or error (which the SDK drops), and a
// request's null id (which it takes for a notification's, unanswered) are
// answered -32600 with the id as sent; the line after goes through.
func TestFilterLinesIDs(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":7.5,"method":"ping"}` + "\n" +
		`{"jsonrpc":"2.0","id":12345678901234567890,"method":"ping"}` + "\n" +
		`{"jsonrpc":"2.0","id":42}` + "\n" +
		`[{"jsonrpc":"2.0","id":1e3,"method":"ping"}]` + "\n" +
		`{"jsonrpc":"2.0","id":null,"method":"ping"}` + "\n" +
		`{"jsonrpc":"2.0","id":-9,"method":"ping"}` + "\n"
	var out bytes.Buffer
	passed, err := io.ReadAll(filterLines(io.NopCloser(strings.NewReader(in)), &out))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"jsonrpc":"2.0","id":-9,"method":"ping"}` + "\n"; string(passed) != want {
		t.Errorf("passed on %q, want %q", passed, want)
	}
	want := `{"jsonrpc":"2.0","id":7.5,"error":{"code":-32600,"message":"Invalid Request: the id 7.5 is not a string or an integer of 64 bits"}}
{"jsonrpc":"2.0","id":12345678901234567890,"error":{"code":-32600,"message":"Invalid Request: the id 12345678901234567890 is not a string or an integer of 64 bits"}}
{"jsonrpc":"2.0","id":42,"error":{"code":-32600,"message":"Invalid Request: a message with an id needs a method (a request), or a result or an error (an answer)"}}
{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: the id 1e3 is not a string or an integer of 64 bits"}}
{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: a request's id is a string or an integer, never null"}}
`
	if out.String() != want {
		t.Errorf("answered\n%s\nwant\n%s", out.String(), want)
	}
}

// An error the SDK answers with that is not a JSON-RPC one goes out with a
// JSON-RPC code, not 0; a JSON-RPC error keeps its own.
func TestServeErrorCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int64
	}{
		{fmt.Errorf(`method "tools/list" is invalid during session initialization`), jsonrpc.CodeInvalidRequest},
		{fmt.Errorf(`duplicate "initialize" received`), jsonrpc.CodeInvalidRequest},
		{context.Canceled, jsonrpc.CodeInternalError},
		{&jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "nope"}, jsonrpc.CodeMethodNotFound},
	} {
		resp := withErrorCode(&jsonrpc.Response{Error: tc.err})
		data, err := jsonrpc.EncodeMessage(resp)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`"code":%d,"message":%q`, tc.code, tc.err.Error()); !strings.Contains(string(data), want) {
			t.Errorf("%v: %s, want %s", tc.err, data, want)
		}
	}
}

// A request whose id a request under way already has is answered -32600
// (the SDK dropped it in silence, and its client waited for good); once
// the first is answered, the id may be used again.
func TestServeDuplicateIDInFlight(t *testing.T) {
	id, _ := jsonrpc.MakeID(float64(7))
	in := &scriptedConn{msgs: []jsonrpc.Message{
		&jsonrpc.Request{ID: id, Method: "tools/call"},
		&jsonrpc.Request{ID: id, Method: "ping"},
	}}
	c := &drainingConn{Connection: in, pending: map[jsonrpc.ID]bool{}, cancelled: map[jsonrpc.ID]bool{}, changed: make(chan struct{}, 1), closing: make(chan struct{})}
	ctx := context.Background()
	if msg, err := c.Read(ctx); err != nil || msg.(*jsonrpc.Request).Method != "tools/call" {
		t.Fatalf("first read: %v %v", msg, err)
	}
	// The ping with the same id is answered here, and never reaches the SDK.
	if msg, err := c.Read(ctx); err != io.EOF {
		t.Fatalf("second read: %v %v, want the end of input", msg, err)
	}
	if len(in.written) != 1 {
		t.Fatalf("wrote %d answers, want 1", len(in.written))
	}
	resp, _ := in.written[0].(*jsonrpc.Response)
	var werr *jsonrpc.Error
	if resp == nil || resp.ID != id || !errors.As(resp.Error, &werr) || werr.Code != jsonrpc.CodeInvalidRequest ||
		werr.Message != "Invalid Request: the id 7 is the id of a request under way; give each request an id of its own" {
		t.Errorf("answered %#v", in.written[0])
	}
	// Answered, the id is free again.
	c.Write(ctx, &jsonrpc.Response{ID: id, Result: json.RawMessage(`{}`)})
	in.msgs = []jsonrpc.Message{&jsonrpc.Request{ID: id, Method: "ping"}}
	if msg, err := c.Read(ctx); err != nil || msg.(*jsonrpc.Request).Method != "ping" {
		t.Errorf("the id used again after its answer: %v %v", msg, err)
	}
}

// scriptedConn reads msgs in turn, then io.EOF, and keeps what is written.
type scriptedConn struct {
	mcp.Connection
	msgs    []jsonrpc.Message
	written []jsonrpc.Message
}

func (s *scriptedConn) Read(context.Context) (jsonrpc.Message, error) {
	if len(s.msgs) == 0 {
		return nil, io.EOF
	}
	msg := s.msgs[0]
	s.msgs = s.msgs[1:]
	return msg, nil
}

func (s *scriptedConn) Write(_ context.Context, msg jsonrpc.Message) error {
	s.written = append(s.written, msg)
	return nil
}

// A prompt argument that is not a string is answered -32602 in words, not
// with the Go struct field the SDK could not decode it into; over stdio
// and HTTP alike (both check with badLineReply).
func TestPromptArgumentsNotStrings(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"fake.greet","arguments":{"who":5,"b":"x"}}}`,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params: a prompt's arguments are strings: \"who\" is a number; send it as the string \"5\""}}`},
		{`{"jsonrpc":"2.0","id":"a","method":"prompts/get","params":{"name":"g","arguments":{"x":{"y":1}}}}`,
			`{"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"Invalid params: a prompt's arguments are strings: \"x\" is an object; send it as the string \"{\\\"y\\\":1}\""}}`},
		{`{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"g","arguments":["who"]}}`,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params: a prompt's arguments are an object of names and strings, e.g. {\"who\": \"Ada\"}"}}`},
		// Strings, null and no arguments are the SDK's to take.
		{`{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"g","arguments":{"who":"Ada","n":null}}}`, ``},
		{`{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"g"}}`, ``},
		{`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"t","arguments":{"method":"prompts/get","n":5}}}`, ``},
	} {
		if reply, _ := badLineReply([]byte(tc.line), false); strings.TrimSpace(string(reply)) != tc.want {
			got := strings.TrimSpace(string(reply))
			t.Errorf("%s\nanswered %s\nwant     %s", tc.line, got, tc.want)
		}
	}
}

// slowConn writes one message at a time, each taking a while, as the SDK's
// connection does behind its write lock.
type slowConn struct {
	mcp.Connection
	mu      sync.Mutex
	written atomic.Int32
}

func (c *slowConn) Write(context.Context, jsonrpc.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	time.Sleep(50 * time.Millisecond)
	c.written.Add(1)
	return nil
}

// A drain waits for the answers still being written: one queued behind
// another's write is no longer pending, but not yet out either (the end's
// abandon of the output after the wait would lose it).
func TestDrainWaitsForAnswersBeingWritten(t *testing.T) {
	inner := &slowConn{}
	c := &drainingConn{Connection: inner, pending: map[jsonrpc.ID]bool{}, cancelled: map[jsonrpc.ID]bool{}, changed: make(chan struct{}, 1), closing: make(chan struct{})}
	var ids []jsonrpc.ID
	for i := range 3 {
		id, _ := jsonrpc.MakeID(float64(i + 1))
		ids = append(ids, id)
		c.pending[id] = true
	}
	for _, id := range ids {
		go c.Write(context.Background(), &jsonrpc.Response{ID: id, Result: json.RawMessage(`{}`)})
	}
	if !c.wait(context.Background(), 5*time.Second) {
		t.Fatal("the drain gave up")
	}
	if n := inner.written.Load(); n != 3 {
		t.Errorf("the drain ended with %d of 3 answers written", n)
	}
}
