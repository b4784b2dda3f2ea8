package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/internal/fakemcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestCacheBounds(t *testing.T) {
	c := newCache(3, 100)
	val := json.RawMessage(`{"v":1}`)
	for i := range 5 {
		c.put(fmt.Sprint(i), "s", "m", "", val, time.Minute)
	}
	if c.ll.Len() != 3 {
		t.Fatalf("%d entries, bound 3", c.ll.Len())
	}
	if _, ok := c.get("0"); ok {
		t.Error("the least recently used entry was kept")
	}
	c.get("2") // now most recently used
	c.put("5", "s", "m", "", val, time.Minute)
	if _, ok := c.get("2"); !ok {
		t.Error("a recently used entry was evicted")
	}
	if _, ok := c.get("3"); ok {
		t.Error("the least recently used entry was kept")
	}

	// Bytes: a big value pushes out the rest; one bigger than the bound
	// is not cached at all.
	big := json.RawMessage(`{"v":"` + strings.Repeat("x", 80) + `"}`)
	c.put("big", "s", "m", "", big, time.Minute)
	if c.bytes > 100 {
		t.Errorf("%d bytes, bound 100", c.bytes)
	}
	huge := json.RawMessage(`{"v":"` + strings.Repeat("x", 200) + `"}`)
	c.put("huge", "s", "m", "", huge, time.Minute)
	if _, ok := c.get("huge"); ok {
		t.Error("a value larger than the byte bound was cached")
	}

	// TTL.
	c.put("short", "s", "m", "", val, time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	if _, ok := c.get("short"); ok {
		t.Error("an expired entry was served")
	}

	// Invalidation by method and by URI, per server.
	c = newCache(10, 1000)
	c.put("a", "s1", "prompts/get", "", val, time.Minute)
	c.put("b", "s1", "resources/read", "u1", val, time.Minute)
	c.put("c", "s1", "resources/read", "u2", val, time.Minute)
	c.put("d", "s2", "resources/read", "u1", val, time.Minute)
	c.invalidateURI("s1", "u1")
	c.invalidate("s1", "prompts/get")
	for key, want := range map[string]bool{"a": false, "b": false, "c": true, "d": true} {
		if _, ok := c.get(key); ok != want {
			t.Errorf("%s cached: %v, want %v", key, ok, want)
		}
	}
}

// A cached answer is the server's answer plus _meta: text the server wrote
// with "<" and "&" is not HTML-escaped on the way (Node servers write them
// raw, and an uncached answer passes them through as written).
func TestCachedAnswerKeepsServerText(t *testing.T) {
	c := newCache(3, 1000)
	c.put("k", "s", "prompts/get", "", json.RawMessage(`{"messages":[{"role":"user","content":{"type":"text","text":"<p> & q"}}],"_meta":{"x":"<y>"}}`), time.Minute)
	got, ok := c.get("k")
	if !ok {
		t.Fatal("not cached")
	}
	for _, want := range []string{`"text":"<p> & q"`, `"x":"<y>"`, `"hit":true`} {
		if !strings.Contains(string(got), want) {
			t.Errorf("cached answer %s lacks %s", got, want)
		}
	}
}

// A fresh cached answer is given when its server is down, and without
// starting a server that starts on use; --no-cache still asks the server,
// and a server stopped by hand answers nothing.
func TestCachedAnswerWithoutServer(t *testing.T) {
	crash := 2
	spec := fakemcp.Spec{
		Tools:     []fakemcp.Tool{{Name: "die", Crash: &crash}},
		Prompts:   []fakemcp.Prompt{{Name: "greet", Text: "hello", Arguments: []*mcp.PromptArgument{{Name: "who"}}}},
		Resources: []fakemcp.Resource{{URI: "mem://doc", Name: "doc", Text: "the doc"}},
		ReadTTLMs: 300_000, // its reads stay fresh for cacheTTL (2026-07-28)
	}
	gone := fakeServer(t, "gone", spec)
	brief := fakeServer(t, "brief", spec)
	brief.Activation = "transient"
	e := newEngine(t, gone, brief)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	ask := func(server string, noCache bool) (prompt *PromptResult, read *ResourceResult, err error) {
		prompt, err = e.GetPrompt(ctx(t), &PromptRequest{Name: server + ".greet", Pairs: []string{"who=you"}, NoCache: noCache})
		if err != nil {
			return nil, nil, err
		}
		read, err = e.ReadResource(ctx(t), &ResourceRequest{URI: "mem://doc", Server: server, NoCache: noCache})
		return prompt, read, err
	}
	for _, server := range []string{"gone", "brief"} {
		if p, r, err := ask(server, false); err != nil || p.Cached || r.Cached {
			t.Fatalf("%s: first answers: %v, %+v, %+v", server, err, p, r)
		}
	}
	e.CallTool(ctx(t), &CallRequest{Name: "gone.die"})
	waitState(t, e, "gone", StateUnavailable)
	waitState(t, e, "brief", StateStopped)

	sub := e.Events(EventFilter{Types: []string{EventState}, Servers: []string{"brief"}})
	defer sub.Close()
	for _, server := range []string{"gone", "brief"} {
		p, r, err := ask(server, false)
		if err != nil || !p.Cached || !r.Cached || !strings.Contains(string(r.Result), "the doc") {
			t.Errorf("%s: cached answers: %v, %+v, %+v", server, err, p, r)
		}
	}
	select {
	case ev := <-sub.C:
		t.Errorf("brief was started for a cached answer: %+v", ev)
	default:
	}
	if _, _, err := ask("gone", true); KindOf(err) != KindUnavailable {
		t.Errorf("--no-cache to a server down: %v", err)
	}
	// Stopped by hand, a server answers nothing, not from the cache either.
	if err := e.Stop("brief"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ask("brief", false); KindOf(err) != KindUnavailable || !strings.Contains(err.Error(), "stopped with mcpctl stop") {
		t.Errorf("a server stopped by hand: %v", err)
	}
}

// An answer got while the server's question went unanswered (declined for
// want of anyone to ask: a prompt in flight answers no question) is not
// cached: it was kept for the cache's ttl, so an asker that came later
// got the decline's answer too.
func TestAnswerAfterUnansweredQuestionNotCached(t *testing.T) {
	srv := fakeServer(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25", Prompts: []fakemcp.Prompt{
		{Name: "ask", Elicit: &fakemcp.Elicit{Message: "which?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`)}},
		{Name: "plain", Text: "hello"},
	}})
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, false} {
		res, err := e.GetPrompt(ctx(t), &PromptRequest{Name: "srv.ask"})
		if err != nil || res.Cached != want {
			t.Fatalf("get %d: cached %v, want %v (%v)", i+1, res != nil && res.Cached, want, err)
		}
	}
	// One that asked nothing still is.
	for i, want := range []bool{false, true} {
		res, err := e.GetPrompt(ctx(t), &PromptRequest{Name: "srv.plain"})
		if err != nil || res.Cached != want {
			t.Fatalf("plain get %d: cached %v, want %v (%v)", i+1, res != nil && res.Cached, want, err)
		}
	}
}

// A prompts/get or resources/read answered with a null result, or one
// without its messages or contents, breaks MCP: a protocol error, not a
// success printed as null (QA), and nothing cached.
func TestResultWithoutItsArray(t *testing.T) {
	for _, answer := range []string{`{"result": null}`, `{"result": {}}`, `{"result": {"messages": "x", "contents": "x"}}`} {
		srv := fakeServer(t, "srv", fakemcp.Spec{
			Prompts:   []fakemcp.Prompt{{Name: "p", Text: "hi"}},
			Resources: []fakemcp.Resource{{URI: "file:///a", Text: "a"}},
			Answers:   map[string]json.RawMessage{"prompts/get": json.RawMessage(answer), "resources/read": json.RawMessage(answer)},
		})
		e := newEngine(t, srv)
		if err := e.Start(ctx(t)); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			_, err := e.GetPrompt(ctx(t), &PromptRequest{Name: "srv.p"})
			if KindOf(err) != KindProtocol || !strings.Contains(err.Error(), "answered prompts/get with a result that breaks MCP: it has no messages array") {
				t.Errorf("%s: prompt: %v", answer, err)
			}
			_, err = e.ReadResource(ctx(t), &ResourceRequest{URI: "file:///a"})
			if KindOf(err) != KindProtocol || !strings.Contains(err.Error(), "answered resources/read with a result that breaks MCP: it has no contents array") {
				t.Errorf("%s: resource: %v", answer, err)
			}
		}
	}
}

// A read or prompt whose blob or image data is not strict base64 (no
// padding, here), which the SDK's decoding refuses, is passed on as sent,
// as a call's is: the result has its array (QA: "it has no contents
// array", exit 5).
func TestResultPassedOnAsSent(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{
		Prompts:   []fakemcp.Prompt{{Name: "p", Text: "hi"}},
		Resources: []fakemcp.Resource{{URI: "file:///a", Text: "a"}},
		Answers: map[string]json.RawMessage{
			"prompts/get":    json.RawMessage(`{"result": {"messages": [{"role": "user", "content": {"type": "image", "mimeType": "image/png", "data": "AAEC/w"}}]}}`),
			"resources/read": json.RawMessage(`{"result": {"contents": [{"uri": "file:///a", "mimeType": "image/png", "blob": "AAEC/w"}]}}`),
		},
	})
	p, err := e.GetPrompt(ctx(t), &PromptRequest{Name: "srv.p"})
	if err != nil || !strings.Contains(string(p.Result), `"data":"AAEC/w"`) {
		t.Errorf("prompt: %v, %+v", err, p)
	}
	r, err := e.ReadResource(ctx(t), &ResourceRequest{URI: "file:///a"})
	if err != nil || !strings.Contains(string(r.Result), `"blob":"AAEC/w"`) {
		t.Errorf("resource: %v, %+v", err, r)
	}
}

// A read's ttlMs (2026-07-28) bounds how long it is kept, never beyond
// cacheTTL, a huge one included (it overflowed to below zero: not kept).
func TestReadTTL(t *testing.T) {
	for _, tc := range []struct {
		raw    string
		modern bool
		want   time.Duration
	}{
		{`{"ttlMs":0,"contents":[]}`, true, 0},
		{`{"ttlMs":60000,"contents":[]}`, true, time.Minute},
		{`{"ttlMs":1e15,"contents":[]}`, true, 5 * time.Minute},
		{`{"contents":[]}`, true, 5 * time.Minute},
		{`{"ttlMs":0,"contents":[]}`, false, 5 * time.Minute},
	} {
		if got := readTTL(json.RawMessage(tc.raw), 5*time.Minute, tc.modern); got != tc.want {
			t.Errorf("%s (modern %v): %v, want %v", tc.raw, tc.modern, got, tc.want)
		}
	}
}
