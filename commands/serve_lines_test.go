package commands

import (
	"bytes"
	"io"
	"strings"
	"testing"
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
