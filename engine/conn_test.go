package engine

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A captured tools/call result is kept as the server sent it, and the SDK
// is told so instead of getting it to decode; a result asking for input
// (which the SDK answers), another method's result and a result nobody
// captured reach the SDK whole.
func TestCapturedCallResultSparesTheSDK(t *testing.T) {
	const (
		answer = `{"content":[{"type":"text","text":"hi"}],"structuredContent":{"n":1}}`
		asks   = `{"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create"}}}`
		list   = `{"tools":[{"name":"echo"}]}`
	)
	c := newCaptureConn(nil)
	for i, tc := range []struct {
		method, result string
		captured       bool
		sdkGets        string
	}{
		{"tools/call", answer, true, ""},
		{"tools/call", asks, true, asks},
		{"tools/list", list, true, list},
		{"tools/call", answer, false, answer},
	} {
		ctx := context.Background()
		var cp *capture
		if tc.captured {
			ctx, cp = withCapture(ctx)
		}
		id, _ := jsonrpc.MakeID(float64(i + 1))
		c.outgoing(ctx, &jsonrpc.Request{ID: id, Method: tc.method, Params: json.RawMessage(`{}`)})
		resp := &jsonrpc.Response{ID: id, Result: json.RawMessage(tc.result)}
		c.incoming(resp)
		if string(resp.Result) != tc.sdkGets || (tc.sdkGets == "") != (resp.Error == errResultKept) {
			t.Errorf("%d: the SDK gets %s (error %v), want %s", i, resp.Result, resp.Error, tc.sdkGets)
		}
		if cp == nil {
			continue
		}
		raw, ok := cp.last(tc.method)
		if !ok || string(raw.result) != tc.result {
			t.Errorf("%d: captured %s (%v), want %s", i, raw.result, ok, tc.result)
		}
	}
}
