package engine

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/internal/fakemcp"
	"github.com/mcpctl/mcpctl/internal/testutil"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// remoteStreams is an engine for the fake over streamable HTTP with get in
// front of its event streams' GETs: get answers one itself (nil), or
// returns the request to hand on to the server. A stream counts as lived
// after 100 ms. The engine is not started.
func remoteStreams(t *testing.T, get func(w http.ResponseWriter, r *http.Request) *http.Request) *Engine {
	t.Helper()
	srv := fakemcp.NewServer(remoteSpec)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			if r = get(w, r); r == nil {
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	e := newEngine(t, remoteServer("r", "http", ts.URL))
	e.streamLived = 100 * time.Millisecond
	return e
}

// idleTimeout is a proxy's idle timeout on r: its stream ends, cleanly,
// after d.
func idleTimeout(t *testing.T, r *http.Request, d time.Duration) *http.Request {
	ctx, cancel := context.WithTimeout(r.Context(), d)
	t.Cleanup(cancel)
	return r.WithContext(ctx)
}

// A server behind a proxy that ends idle event streams (nginx after 60 s)
// ends each GET stream cleanly, without event ids. The SDK counts each end
// as a reconnection without progress and gives the connection up after
// six (go-sdk #1175): a session behind such a proxy lost every server each
// few minutes. A stream that lived is opened again in its place, on the
// same MCP session, with nothing between (a dropped connection too, as
// a proxy's timeout may end it); a server that answers 409, not yet done
// with the stream that ended, is asked again.
func TestRemoteEventStreamEndsAreNotFailures(t *testing.T) {
	var mu sync.Mutex
	var sessions []string // of each GET, in order
	e := remoteStreams(t, func(w http.ResponseWriter, r *http.Request) *http.Request {
		mu.Lock()
		sessions = append(sessions, r.Header.Get("Mcp-Session-Id"))
		n := len(sessions)
		mu.Unlock()
		switch n {
		case 3, 4:
			// The server has not yet seen the end of the last.
			http.Error(w, "Conflict: Only one SSE stream is allowed per session", http.StatusConflict)
			return nil
		case 6:
			// A proxy that drops the connection instead.
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			time.Sleep(300 * time.Millisecond)
			if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
				c.Close()
			}
			return nil
		}
		return idleTimeout(t, r, 300*time.Millisecond)
	})
	states := e.Events(EventFilter{Types: []string{EventState}, Servers: []string{"r"}})
	defer states.Close()
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	waitState(t, e, "r", StateReady)
	const ends = 10
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		got := slices.Clone(sessions)
		mu.Unlock()
		if len(got) > ends || time.Now().After(deadline) {
			if len(got) <= ends {
				t.Fatalf("%d event streams opened in 30 s, want %d: %q; %+v", len(got), ends+1, got, e.Status()[0])
			}
			if uniq := slices.Compact(slices.Clone(got)); len(uniq) != 1 || uniq[0] == "" {
				t.Fatalf("the event streams were opened in more than one MCP session: %q", got)
			}
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "r.echo"}); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case ev := <-states.C:
			if ev.To != StateReady && ev.To != StateStarting {
				t.Errorf("the server went %s over the streams' ends: %+v", ev.To, ev)
			}
			continue
		default:
		}
		break
	}
	if st := e.Status()[0]; st.State != StateReady || st.LastError != "" {
		t.Errorf("status after the streams' ends: %s %q", st.State, st.LastError)
	}
}

// What a server's stream says of itself stays true across the splice: the
// id of its last event goes with the request for the next stream, and its
// retry delay is kept. The id stays the same, so that the SDK, left to
// itself, would see no progress and give the connection up after six
// ends. An event that is not a JSON-RPC message is dropped, not made the
// end of the connection.
func TestRemoteEventStreamResumesFromItsLastID(t *testing.T) {
	var mu sync.Mutex
	var lastIDs []string
	var opened []time.Time
	e := remoteStreams(t, func(w http.ResponseWriter, r *http.Request) *http.Request {
		mu.Lock()
		lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
		opened = append(opened, time.Now())
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		// An event with an id and a retry, and nothing more for a while;
		// its data is not a JSON-RPC message (server-everything replays
		// its streams' priming events so), which the SDK would give the
		// connection up over.
		w.Write([]byte("id: ev-1\nretry: 300\ndata: {}\n\n"))
		w.(http.Flusher).Flush()
		time.Sleep(200 * time.Millisecond)
		return nil
	})
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	waitState(t, e, "r", StateReady)
	const streams = 9
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		ids, at := slices.Clone(lastIDs), slices.Clone(opened)
		mu.Unlock()
		if len(ids) >= streams || time.Now().After(deadline) {
			if len(ids) < streams {
				t.Fatalf("%d event streams opened in 30 s, want %d; %+v", len(ids), streams, e.Status()[0])
			}
			if ids[0] != "" || slices.ContainsFunc(ids[1:], func(id string) bool { return id != "ev-1" }) {
				t.Errorf("Last-Event-ID of each stream: %q, want none, then ev-1", ids)
			}
			for i := 1; i < len(at); i++ {
				// 200 ms of stream, then the server's 300 ms.
				if gap := at[i].Sub(at[i-1]); gap < 450*time.Millisecond {
					t.Errorf("stream %d opened %v after the one before: the retry of 300 ms was not kept", i, gap)
				}
			}
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st := e.Status()[0]; st.State != StateReady {
		t.Errorf("status after the streams' ends: %s %q", st.State, st.LastError)
	}
}

// Only the connection's own event stream is opened again by mcpctl: a GET
// that resumes a call's stream (which ended before its answer) is the
// SDK's to end once the answer came; opened again, it asked the server
// for a stream nobody reads, held until the call's context ended.
func TestRemoteCallStreamResumptionIsNotReopened(t *testing.T) {
	srv := fakemcp.NewServer(remoteSpec)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var mu sync.Mutex
	var callID json.RawMessage
	var resumes []string
	calls := answeringCalls(h, func(w http.ResponseWriter, id json.RawMessage) {
		mu.Lock()
		callID = id
		mu.Unlock()
		// The call's stream ends after its priming event.
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("id: c-0\ndata:\n\n"))
	})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if last := r.Header.Get("Last-Event-ID"); r.Method == http.MethodGet && last != "" {
			mu.Lock()
			resumes = append(resumes, last)
			id := callID
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			if last == "c-0" {
				time.Sleep(300 * time.Millisecond)
				w.Write([]byte("id: c-1\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + string(id) + ",\"result\":{\"content\":[]}}\n\n"))
				return
			}
			<-r.Context().Done()
			return
		}
		calls.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	e := newEngine(t, remoteServer("r", "http", ts.URL))
	e.streamLived = 100 * time.Millisecond
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	waitState(t, e, "r", StateReady)
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "r.echo"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(resumes, []string{"c-0"}) {
		t.Errorf("GETs that resumed the call's stream, by Last-Event-ID: %q, want the SDK's one", resumes)
	}
}

// A stream that ended, whose server (or a proxy before it) then takes the
// request for the next and does not answer, makes the server degraded
// after a while: it stayed ready with no event stream, its notifications
// lost.
func TestRemoteEventStreamNotReopened(t *testing.T) {
	var mu sync.Mutex
	gets := 0
	e := remoteStreams(t, func(w http.ResponseWriter, r *http.Request) *http.Request {
		mu.Lock()
		gets++
		n := gets
		mu.Unlock()
		if n > 1 {
			<-r.Context().Done() // taken, never answered
			return nil
		}
		return idleTimeout(t, r, 300*time.Millisecond)
	})
	e.streamReopenWait = 300 * time.Millisecond
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	waitState(t, e, "r", StateReady)
	st := waitState(t, e, "r", StateDegraded)
	if !strings.Contains(st.LastError, "event stream broke: it ended, and is not open again") {
		t.Errorf("degraded for: %q", st.LastError)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "r.echo"}); err != nil {
		t.Errorf("a call while the event stream is down: %v", err)
	}
}

// A server that counts each stream's events from 0 gives each call's answer
// the same event id: an answer is not taken for one sent before unless its
// data is the same, and answers on a call's own stream are never dropped.
// Dropped, its call was resumed from that id, which the server refused,
// and the connection was lost.
func TestRemoteEventIDsCountedPerStream(t *testing.T) {
	srv := fakemcp.NewServer(remoteSpec)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(answeringCalls(h, func(w http.ResponseWriter, id json.RawMessage) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + string(id) + ",\"result\":{\"content\":[]}}\n\n"))
	}))
	t.Cleanup(ts.Close)
	e := newEngine(t, remoteServer("r", "http", ts.URL))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		c, cancel := context.WithTimeout(ctx(t), 5*time.Second)
		_, err := e.CallTool(c, &CallRequest{Name: "r.echo"})
		cancel()
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
}

// A remote server's stop closes its HTTP connections: each start makes a
// transport of its own, whose kept-alive connections (two goroutines each)
// stayed 90 s, one more with each restart or reload.
func TestRemoteStopClosesItsConnections(t *testing.T) {
	srv := fakemcp.NewServer(remoteSpec)
	ts := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	var open atomic.Int32
	ts.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		switch state {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	e := remoteCalled(t, ts.URL)
	for range 3 {
		if err := e.Restart(ctx(t), "r"); err != nil {
			t.Fatal(err)
		}
	}
	e.Close()
	deadline := time.Now().Add(5 * time.Second)
	for open.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := open.Load(); n > 0 {
		t.Errorf("%d connections still open after Close", n)
	}
}

// The data of an event that is not a JSON-RPC message is logged with the
// server's secrets hidden, as its other output is.
func TestRemoteDroppedEventLoggedRedacted(t *testing.T) {
	srv := fakemcp.NewServer(remoteSpec)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.Write([]byte("data: you sent " + r.Header.Get("Authorization") + "\n\n"))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	cfg, err := config.Parse("mcp.json", []byte(`{"servers": {"r": {"url": "`+ts.URL+`", "headers": {"Authorization": "Bearer ${TOK}"}}}}`), "", func(k string) (string, bool) {
		return "s3cret-token", k == "TOK"
	})
	if err != nil {
		t.Fatal(err)
	}
	var log testutil.Buffer
	e := New(cfg, &Options{ShutdownTimeout: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	t.Cleanup(func() { e.Close() })
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(log.String(), "not a JSON-RPC message") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if out := log.String(); !strings.Contains(out, "you sent") || strings.Contains(out, "s3cret-token") {
		t.Errorf("the log:\n%s", out)
	}
}

// Close does not wait for a sampling handler that does not watch its ctx,
// for a remote server either: the SDK's close waits for the handlers of
// the server's requests, and closing a remote connection waited for that
// close after giving up its HTTP requests.
func TestRemoteCloseDoesNotWaitForAHandler(t *testing.T) {
	srv := fakemcp.NewServer(fakemcp.Spec{ProtocolVersion: "2025-11-25", Tools: []fakemcp.Tool{{Name: "ask", Sample: "?"}}})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	closeWhileAsked(t, remoteServer("r", "http", ts.URL), "r.ask", nil)
}
