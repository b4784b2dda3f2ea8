package wsmcp

import (
	"context"
	"errors"
	"fmt"
	"github.com/mcpctl/mcpctl/internal/testutil"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func textOf(t *testing.T, r *mcp.CallToolResult) string {
	t.Helper()
	if len(r.Content) != 1 {
		t.Fatalf("want one content item, got %d", len(r.Content))
	}
	tc, ok := r.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("want text content, got %T", r.Content[0])
	}
	return tc.Text
}

// newServer builds the test server; auth is what its request carried.
func newServer(auth string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "ws-test", Version: "1"}, nil)
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return text(in.Text), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "whoami"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return text(auth), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "work"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: req.Params.GetProgressToken(), Progress: 1, Total: 2, Message: "half way",
		})
		return text("done"), nil, err
	})
	mcp.AddTool(s, &mcp.Tool{Name: "slow"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
		return text("slept"), nil, nil
	})
	type bigIn struct {
		Bytes int `json:"bytes"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "big"}, func(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
		return text(strings.Repeat("x", in.Bytes)), nil, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "name"}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{
				Role: "user", Content: &mcp.TextContent{Text: "hello " + req.Params.Arguments["name"]},
			}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "test://hello", Name: "hello", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
				URI: req.Params.URI, MIMEType: "text/plain", Text: "hello resource",
			}}}, nil
		})
	return s
}

// serve runs Handler for srv (nil: a fresh server per request) on 127.0.0.1.
func serve(t *testing.T, srv *mcp.Server) string {
	t.Helper()
	ts := httptest.NewServer(Handler(func(r *http.Request) *mcp.Server {
		if srv != nil {
			return srv
		}
		return newServer(r.Header.Get("Authorization"))
	}))
	t.Cleanup(ts.Close)
	return "ws" + strings.TrimPrefix(ts.URL, "http")
}

func connect(t *testing.T, tr *ClientTransport, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "ws-client", Version: "1"}, opts).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func waitOrFail(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return", what)
		return nil
	}
}

// TestFeatures drives every kind of exchange a host makes through the
// socket, including both kinds of server-to-client notification.
func TestFeatures(t *testing.T) {
	srv := newServer("")
	url := serve(t, srv)
	listChanged := make(chan struct{}, 10)
	progress := make(chan *mcp.ProgressNotificationParams, 10)
	cs := connect(t, &ClientTransport{URL: url}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { listChanged <- struct{}{} },
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress <- req.Params
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if got := cs.InitializeResult().ServerInfo.Name; got != "ws-test" {
		t.Errorf("server name %q", got)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 5 {
		t.Errorf("want 5 tools, got %d", len(tools.Tools))
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, res); got != "hi" {
		t.Errorf("echo: %q", got)
	}
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "ws"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := pr.Messages[0].Content.(*mcp.TextContent).Text; got != "hello ws" {
		t.Errorf("prompt: %q", got)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://hello"})
	if err != nil {
		t.Fatal(err)
	}
	if got := rr.Contents[0].Text; got != "hello resource" {
		t.Errorf("resource: %q", got)
	}

	params := &mcp.CallToolParams{Name: "work"}
	params.SetProgressToken("tok-1")
	if _, err := cs.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-progress:
		if p.ProgressToken != "tok-1" || p.Progress != 1 || p.Message != "half way" {
			t.Errorf("progress: %+v", p)
		}
	case <-ctx.Done():
		t.Fatal("no progress notification")
	}

	srv.AddTool(&mcp.Tool{Name: "late", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("late"), nil })
	select {
	case <-listChanged:
	case <-ctx.Done():
		t.Fatal("no tools/list_changed notification")
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "late"})
	if err != nil || textOf(t, res) != "late" {
		t.Fatalf("late tool: %v", err)
	}
}

// TestConcurrentCalls shows frames from concurrent writers never interleave
// and every answer reaches its own caller.
func TestConcurrentCalls(t *testing.T) {
	cs := connect(t, &ClientTransport{URL: serve(t, nil)}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			want := fmt.Sprintf("call-%d-%s", i, strings.Repeat("y", i*50))
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": want}})
			if err != nil {
				errs <- err
				return
			}
			if got := res.Content[0].(*mcp.TextContent).Text; got != want {
				errs <- fmt.Errorf("call %d answered %.20q", i, got)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestConnectCtxBoundsOnlyHandshake: cancelling the ctx given to Connect
// must not take the connection down with it.
func TestConnectCtxBoundsOnlyHandshake(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).
		Connect(ctx, &ClientTransport{URL: serve(t, nil)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	cancel()
	time.Sleep(50 * time.Millisecond)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := cs.Ping(ctx2, nil); err != nil {
		t.Fatalf("ping after the Connect ctx ended: %v", err)
	}
}

// TestCancelledCallKeepsSession: coder/websocket closes the socket when a
// Write's ctx ends, so a caller giving up must not reach it.
func TestCancelledCallKeepsSession(t *testing.T) {
	cs := connect(t, &ClientTransport{URL: serve(t, nil)}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow call: want deadline exceeded, got %v", err)
	}
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	if _, err := cs.CallTool(done, &mcp.CallToolParams{Name: "echo"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("call on a cancelled ctx: want canceled, got %v", err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	res, err := cs.CallTool(ctx2, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still here"}})
	if err != nil || textOf(t, res) != "still here" {
		t.Fatalf("session broken after cancelled calls: %v", err)
	}
}

// TestServerCloseEndsClientSession: the server ending the session closes
// the socket normally, and the client's Wait returns without error.
func TestServerCloseEndsClientSession(t *testing.T) {
	srv := newServer("")
	cs := connect(t, &ClientTransport{URL: serve(t, srv)}, nil)
	var n int
	for ss := range srv.Sessions() {
		ss.Close()
		n++
	}
	if n != 1 {
		t.Fatalf("want one server session, got %d", n)
	}
	if err := waitOrFail(t, "client Wait", cs.Wait); err != nil {
		t.Errorf("Wait after a normal closure: %v", err)
	}
}

// TestClientCloseEndsServerSession: the other direction, and Close is quick
// because the server answers the close handshake.
func TestClientCloseEndsServerSession(t *testing.T) {
	srv := newServer("")
	cs := connect(t, &ClientTransport{URL: serve(t, srv)}, nil)
	var ss *mcp.ServerSession
	for s := range srv.Sessions() {
		ss = s
	}
	start := time.Now()
	if err := cs.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v", d)
	}
	waitOrFail(t, "server Wait", ss.Wait)
}

// TestHeaderReachesServer: handshake headers such as Authorization are
// what the server's handler sees on its request.
func TestHeaderReachesServer(t *testing.T) {
	cs := connect(t, &ClientTransport{
		URL:    serve(t, nil),
		Header: http.Header{"Authorization": {"Bearer s3cret"}},
	}, nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, res); got != "Bearer s3cret" {
		t.Errorf("server saw Authorization %q", got)
	}
}

// TestServerWithoutSubprotocolRefused: a WebSocket server that does not
// agree to "mcp" is not spoken to.
func TestServerWithoutSubprotocolRefused(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil) // picks no subprotocol
		if err != nil {
			return
		}
		defer ws.CloseNow()
		for {
			if _, _, err := ws.Read(r.Context()); err != nil {
				return
			}
		}
	}))
	defer ts.Close()
	_, err := (&ClientTransport{URL: ts.URL}).Connect(context.Background())
	if err == nil || !strings.Contains(err.Error(), `did not agree to the subprotocol "mcp" (it chose none)`) {
		t.Fatalf("want a refusal naming the subprotocol, got %v", err)
	}
}

// TestHandlerRefusesClientWithoutSubprotocol: Handler answers 400 before
// upgrading, and the client's error quotes why.
func TestHandlerRefusesClientWithoutSubprotocol(t *testing.T) {
	url := serve(t, nil)
	_, resp, err := websocket.Dial(context.Background(), url, nil)
	if err == nil {
		t.Fatal("dial without subprotocol succeeded")
	}
	if resp == nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("want 400, got %v", resp)
	}
	// A non-WebSocket request is left to coder/websocket's own answer.
	r, err := http.Get("http" + strings.TrimPrefix(url, "ws"))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode < 400 {
		t.Errorf("plain GET answered %d", r.StatusCode)
	}
}

// TestHandshakeRefusalQuoted: a server refusing the upgrade is quoted in
// the error, which is usually where the reason is.
func TestHandshakeRefusalQuoted(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "token expired", http.StatusUnauthorized)
	}))
	defer ts.Close()
	_, err := (&ClientTransport{URL: ts.URL}).Connect(context.Background())
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "token expired") {
		t.Fatalf("want the status and body in the error, got %v", err)
	}
}

// TestTooLargeMessage: an answer over the bound closes the socket with
// 1009 and fails the call with an error that names the size, rather than
// buffering without limit.
func TestTooLargeMessage(t *testing.T) {
	cs := connect(t, &ClientTransport{URL: serve(t, nil), MaxMessage: 1 << 20}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"bytes": 1000}})
	if err != nil || len(textOf(t, res)) != 1000 {
		t.Fatalf("small answer: %v", err)
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"bytes": 2 << 20}})
	const want = "a message from the server was longer than 1 MiB"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("want %q, got %v", want, err)
	}
	if err := waitOrFail(t, "client Wait", cs.Wait); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Wait: want %q, got %v", want, err)
	}
}

// TestNoiseSkipped: frames that are not JSON-RPC are logged and skipped,
// as mcpctl treats noise on stdio, instead of ending the session.
func TestNoiseSkipped(t *testing.T) {
	srv := newServer("")
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{Subprotocol}})
		if err != nil {
			return
		}
		ctx := r.Context()
		ws.Write(ctx, websocket.MessageBinary, []byte(`{"jsonrpc":"2.0","method":"x"}`))
		ws.Write(ctx, websocket.MessageText, []byte("server starting..."))
		ws.Write(ctx, websocket.MessageText, []byte(`{"level":"info","msg":"ready"}`))
		ss, err := srv.Connect(ctx, serverTransport{newConn(ws, "client", nil, 0)}, nil)
		if err != nil {
			return
		}
		ss.Wait()
	}))
	defer ts.Close()
	var logBuf testutil.Buffer
	cs := connect(t, &ClientTransport{URL: ts.URL, Logger: slog.New(slog.NewTextHandler(&logBuf, nil))}, nil)
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	log := logBuf.String()
	for _, want := range []string{"binary frame", "server starting...", `{\"level\":\"info\"`} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if n := strings.Count(log, "skipped a WebSocket frame from the server"); n != 3 {
		t.Errorf("want 3 skipped frames, got %d:\n%s", n, log)
	}
}

// TestDroppedConnectionIsAnError: a server that vanishes without a close
// frame ends the session with an error, unlike a normal closure.
func TestDroppedConnectionIsAnError(t *testing.T) {
	srv := newServer("")
	drop := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{Subprotocol}})
		if err != nil {
			return
		}
		if _, err := srv.Connect(r.Context(), serverTransport{newConn(ws, "client", nil, 0)}, nil); err != nil {
			return
		}
		<-drop
		ws.CloseNow()
	}))
	defer ts.Close()
	cs := connect(t, &ClientTransport{URL: ts.URL}, nil)
	close(drop)
	err := waitOrFail(t, "client Wait", cs.Wait)
	t.Logf("Wait: %v", err)
	if err == nil || !strings.Contains(err.Error(), "dropped the connection without closing the WebSocket") {
		t.Fatalf("want a dropped-connection error, got %v", err)
	}
}

// TestHandlerNoServer: getServer returning nil answers 404, which the
// client quotes.
func TestHandlerNoServer(t *testing.T) {
	ts := httptest.NewServer(Handler(func(*http.Request) *mcp.Server { return nil }))
	defer ts.Close()
	_, err := (&ClientTransport{URL: ts.URL}).Connect(context.Background())
	if err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "no MCP server here") {
		t.Fatalf("want a 404 naming the reason, got %v", err)
	}
}
