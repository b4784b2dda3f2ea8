package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpctl/mcpctl/internal/fakemcp"
)

// Arguments with bytes that are not UTF-8, in a pair or in the arguments
// object, are refused (KindUsage) before the server sees them: encoded,
// they would be U+FFFD, another file's name, in silence.
func TestArgumentsNotUTF8(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	for _, req := range []*CallRequest{
		{Name: "srv.echo", Pairs: []string{"path=f\xff.txt"}},
		{Name: "srv.echo", Arguments: json.RawMessage("{\"path\": \"f\xff.txt\"}")},
	} {
		_, err := e.CallTool(ctx(t), req)
		if KindOf(err) != KindUsage || !strings.Contains(err.Error(), "not UTF-8 text") {
			t.Errorf("%q %q: %v", req.Pairs, req.Arguments, err)
		}
	}
}
