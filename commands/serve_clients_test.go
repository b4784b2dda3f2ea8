package commands

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serve's HTTP side over an SDK server with one tool, "block", that runs
// until its call is cancelled, spoken to in raw HTTP: a client's
// connections can be dropped one by one, as a killed client's are.

type presenceWorld struct {
	t       *testing.T
	url     string
	started chan struct{} // a block call began
	ended   chan error    // a block call's context ended, with why

	mu       sync.Mutex
	closings []string // what presence said of each session it closed
	lastCall int      // the JSON-RPC id of the last call
}

func newPresenceWorld(t *testing.T, grace, idle time.Duration) *presenceWorld {
	w := &presenceWorld{t: t, started: make(chan struct{}, 8), ended: make(chan error, 8)}
	srv := mcp.NewServer(&mcp.Implementation{Name: "s"}, nil)
	srv.AddTool(&mcp.Tool{Name: "block", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		w.started <- struct{}{}
		select {
		case <-ctx.Done():
		case <-t.Context().Done(): // the test failed: the server's close waits for it
		}
		w.ended <- ctx.Err()
		return nil, ctx.Err()
	})
	hb := &hub{srv: srv}
	p := newPresence(grace, idle, func(client, why string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.closings = append(w.closings, client+": "+why)
	})
	ts := httptest.NewServer(hb.httpHandler("", p, nil))
	t.Cleanup(ts.Close)
	w.url = ts.URL + "/mcp"
	return w
}

// do sends one request of session sid ("" for a new one) and returns the
// response, its body unread; ctx ending drops its connection.
func (w *presenceWorld) do(ctx context.Context, method, sid, body string) *http.Response {
	w.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, method, w.url, strings.NewReader(body))
	req.Header.Set("Accept", "application/json, text/event-stream")
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatalf("%s: %v", method, err)
	}
	return resp
}

func (w *presenceWorld) finish(resp *http.Response) int {
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// connect initializes a session of a client named "c".
func (w *presenceWorld) connect() string {
	w.t.Helper()
	resp := w.do(w.t.Context(), http.MethodPost, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if code := w.finish(resp); code != http.StatusOK || sid == "" {
		w.t.Fatalf("initialize: %d, session %q", code, sid)
	}
	w.finish(w.do(w.t.Context(), http.MethodPost, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	return sid
}

// stream opens the session's event stream, until ctx ends. A stream that
// replaces a dropped one is refused (409) until the server has seen the
// drop: a client tries again.
func (w *presenceWorld) stream(ctx context.Context, sid string) {
	w.t.Helper()
	for tries := 0; ; tries++ {
		resp := w.do(ctx, http.MethodGet, sid, "")
		if resp.StatusCode == http.StatusConflict && tries < 100 {
			w.finish(resp)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if resp.StatusCode != http.StatusOK {
			w.t.Fatalf("GET: %s", resp.Status)
		}
		go w.finish(resp)
		return
	}
}

// call starts a block call, whose connection ctx ending drops.
func (w *presenceWorld) call(ctx context.Context, sid string) {
	w.t.Helper()
	w.mu.Lock()
	w.lastCall++
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"call-%d","method":"tools/call","params":{"name":"block","arguments":{}}}`, w.lastCall)
	w.mu.Unlock()
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, w.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			w.finish(resp)
		}
	}()
	select {
	case <-w.started:
	case <-time.After(10 * time.Second):
		w.t.Fatal("the block call never started")
	}
}

func (w *presenceWorld) ping(sid string) int {
	return w.finish(w.do(w.t.Context(), http.MethodPost, sid, `{"jsonrpc":"2.0","id":3,"method":"ping"}`))
}

func (w *presenceWorld) said() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.closings...)
}

func (w *presenceWorld) callEnded(what string) {
	w.t.Helper()
	select {
	case err := <-w.ended:
		if err != context.Canceled {
			w.t.Errorf("%s: the call ended with %v", what, err)
		}
	case <-time.After(10 * time.Second):
		w.t.Fatalf("%s: the call was never cancelled", what)
	}
}

func (w *presenceWorld) callRunning(what string) {
	w.t.Helper()
	select {
	case err := <-w.ended:
		w.t.Fatalf("%s: the call ended (%v)", what, err)
	default:
	}
}

// A client whose event stream drops and which does not come back has
// its session closed once the grace is over; one whose event stream
// reconnects keeps it.
func TestServeHTTPClientGone(t *testing.T) {
	t.Parallel()
	const grace = time.Second
	w := newPresenceWorld(t, grace, time.Hour)
	sid := w.connect()
	first, dropFirst := context.WithCancel(t.Context())
	w.stream(first, sid)
	dropFirst()
	second, dropSecond := context.WithCancel(t.Context())
	defer dropSecond()
	w.stream(second, sid)
	time.Sleep(3 * grace)
	if said := w.said(); len(said) != 0 {
		t.Fatalf("a client that came back was closed: %q", said)
	}
	if code := w.ping(sid); code != http.StatusOK {
		t.Fatalf("ping of a client that came back: %d", code)
	}

	dropSecond()
	eventually(t, "the session of the client that went was never closed", func() bool { return len(w.said()) == 1 })
	if said := w.said()[0]; !strings.HasPrefix(said, "c: its connection dropped") {
		t.Errorf("closing said %q", said)
	}
	if code := w.ping(sid); code != http.StatusNotFound {
		t.Errorf("a request of the closed session: %d, want 404 (the client starts again)", code)
	}
}

// A call whose own connection drops is cancelled at once, while its
// client stays, event stream open: with no event store its answer could
// never be sent. The client's other calls and its session go on.
func TestServeHTTPDroppedCallIsCancelled(t *testing.T) {
	t.Parallel()
	w := newPresenceWorld(t, time.Hour, time.Hour)
	sid := w.connect()
	w.stream(t.Context(), sid)
	w.call(t.Context(), sid)
	dropped, drop := context.WithCancel(t.Context())
	w.call(dropped, sid)
	drop()
	w.callEnded("its connection dropped")
	time.Sleep(200 * time.Millisecond)
	w.callRunning("the other call, whose connection is open")
	if code := w.ping(sid); code != http.StatusOK {
		t.Errorf("ping of the client whose call dropped: %d", code)
	}
	if said := w.said(); len(said) != 0 {
		t.Errorf("a client with its stream open was closed: %q", said)
	}
}

// A client that closes its connection as soon as it has read its answer
// (a POST whose requests were all answered) has not gone: its session is
// not closed after the grace, as one whose call dropped unanswered is.
func TestServeHTTPClosingAfterTheAnswerIsNotGone(t *testing.T) {
	t.Parallel()
	const grace = 500 * time.Millisecond
	srv := mcp.NewServer(&mcp.Implementation{Name: "s"}, nil)
	w := &presenceWorld{t: t}
	p := newPresence(grace, time.Hour, func(client, why string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.closings = append(w.closings, client+": "+why)
	})
	srv.AddReceivingMiddleware(p.track)
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	type goneKey struct{}
	// Each connection closes right after its answer is out, before
	// presence looks at the request: as a client that reads its answer
	// and closes at once can make it.
	h := p.handler(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		sdk.ServeHTTP(rw, r)
		r.Context().Value(goneKey{}).(context.CancelFunc)()
	}))
	ts := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		h.ServeHTTP(rw, r.WithContext(context.WithValue(ctx, goneKey{}, cancel)))
	}))
	t.Cleanup(ts.Close)
	w.url = ts.URL
	sid := w.connect()
	if code := w.ping(sid); code != http.StatusOK {
		t.Fatalf("ping: %d", code)
	}
	time.Sleep(3 * grace)
	if said := w.said(); len(said) != 0 {
		t.Fatalf("a client whose every request was answered was closed: %q", said)
	}
	if code := w.ping(sid); code != http.StatusOK {
		t.Errorf("ping after the grace: %d, want 200", code)
	}
}

// A DELETE ends its session at once, cancelling its calls (the SDK's
// close would wait for them).
func TestServeHTTPDeleteCancelsCalls(t *testing.T) {
	t.Parallel()
	w := newPresenceWorld(t, time.Hour, time.Hour)
	sid := w.connect()
	w.call(t.Context(), sid)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if code := w.finish(w.do(ctx, http.MethodDelete, sid, "")); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", code)
	}
	w.callEnded("DELETE")
	if said := w.said(); len(said) != 0 {
		t.Errorf("a DELETE is not a client gone: %q", said)
	}
}

// A session with no request and no stream open is closed after the idle
// time; one with its event stream open is not.
func TestServeHTTPIdleClient(t *testing.T) {
	t.Parallel()
	// The listening session's stream must open within idle of its
	// initialize: a wide margin on a busy machine.
	const idle = 1500 * time.Millisecond
	w := newPresenceWorld(t, time.Hour, idle)
	listening := w.connect()
	w.stream(t.Context(), listening)
	quiet := w.connect()
	eventually(t, "the idle session was never closed", func() bool { return len(w.said()) == 1 })
	if said := w.said()[0]; said != "c: no request for 1.5s" {
		t.Errorf("closing said %q", said)
	}
	if code := w.ping(quiet); code != http.StatusNotFound {
		t.Errorf("a request of the idle session: %d, want 404", code)
	}
	time.Sleep(2 * idle)
	if code := w.ping(listening); code != http.StatusOK {
		t.Errorf("the session with its stream open: %d, want 200", code)
	}
}
