package engine

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The stdio connection reads plain messages, error responses and batches
// as the SDK decodes them, skips what is not JSON-RPC, writes one line per
// message, and a Read waiting on a silent server ends with its context or
// the connection.
func TestStdioConn(t *testing.T) {
	outR, outW := io.Pipe()
	inR, inW := io.Pipe()
	var skipped []string
	c := newStdioConn(newJSONLines(outR, func(line []byte, _ string) { skipped = append(skipped, string(line)) }), inW)
	lines := []string{
		`Starting server...`,
		`{"jsonrpc":"2.0","id":1,"result":{"ok":true}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no such method"}}`,
		`[{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}},{"jsonrpc":"2.0","id":"r1","method":"roots/list"}]`,
	}
	go outW.Write([]byte(strings.Join(lines, "\n") + "\n"))
	ctx := context.Background()
	var got []jsonrpc.Message
	for range 4 {
		msg, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, msg)
	}
	for i, raw := range []string{lines[1], lines[2], `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}`, `{"jsonrpc":"2.0","id":"r1","method":"roots/list"}`} {
		want, _ := jsonrpc.DecodeMessage([]byte(raw))
		if g, w := describe(got[i]), describe(want); g != w {
			t.Errorf("message %d: got %s, want %s", i, g, w)
		}
	}
	if len(skipped) != 1 || skipped[0] != lines[0] {
		t.Errorf("skipped %q", skipped)
	}

	id, _ := jsonrpc.MakeID(float64(7))
	go func() { c.Write(ctx, &jsonrpc.Request{ID: id, Method: "tools/list", Params: []byte(`{}`)}) }()
	buf := make([]byte, 256)
	n, _ := inR.Read(buf)
	if want := `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}` + "\n"; string(buf[:n]) != want {
		t.Errorf("wrote %q, want %q", buf[:n], want)
	}

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := c.Read(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("read with an ended context: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := c.Read(ctx); done <- err }()
	c.Close()
	select {
	case err := <-done:
		if !errors.Is(err, io.EOF) {
			t.Errorf("read of a closed connection: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a waiting Read")
	}
}

func describe(m jsonrpc.Message) string {
	data, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return err.Error()
	}
	return string(data)
}
