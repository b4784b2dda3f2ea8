package engine

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An answer over HTTP longer than mcpctl reads in one message fails the
// call at once with the error a stdio server's gets, whether it comes as
// the POST's JSON body or as an event of its stream; the server goes on.
func TestRemoteOverlongAnswer(t *testing.T) {
	for _, jsonResponse := range []bool{true, false} {
		name := map[bool]string{true: "json", false: "event stream"}[jsonResponse]
		t.Run(name, func(t *testing.T) {
			srv := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "1"}, nil)
			mcp.AddTool(srv, &mcp.Tool{Name: "huge"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", maxMessage+1)}}}, nil, nil
			})
			mcp.AddTool(srv, &mcp.Tool{Name: "small"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "fits"}}}, nil, nil
			})
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
			ts := httptest.NewServer(h)
			t.Cleanup(ts.Close)
			e := newEngine(t, remoteServer("r", "http", ts.URL))
			if err := e.Start(ctx(t)); err != nil {
				t.Fatal(err)
			}
			// 64 MiB to encode and read: under the race detector on a
			// busy machine that took over ctx(t)'s 30 s once in CI.
			long, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			_, err := e.CallTool(long, &CallRequest{Name: "r.huge"})
			if KindOf(err) != KindProtocol || !strings.Contains(err.Error(), "server r answered tools/call with one message longer than 64 MiB, the most mcpctl reads; the answer was dropped") {
				t.Errorf("call answered too long: %v (kind %s)", err, KindOf(err))
			}
			res, err := e.CallTool(ctx(t), &CallRequest{Name: "r.small"})
			if err != nil || !strings.Contains(string(res.Result), "fits") {
				t.Errorf("the next call: %v %v", res, err)
			}
		})
	}
}
