package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/internal/fakemcp"
)

// A server that answers one of its lists with an error still starts, and
// its tools and other lists serve: a start failed with exit 5 (calling
// off the other servers), and a command without a session listed nothing
// and exited 0, then called the prompt unknown. A list it leaves out says
// why, as a partial list's error, with the others' items; so do a get of
// a prompt it did not list, and a read no listed resource matches.
func TestListAnsweredWithError(t *testing.T) {
	broken := fakemcp.Spec{
		Tools:     []fakemcp.Tool{{Name: "echo"}},
		Prompts:   []fakemcp.Prompt{{Name: "p", Text: "x"}},
		Resources: []fakemcp.Resource{{URI: "x://y", Text: "t"}},
		Templates: []fakemcp.Template{{URITemplate: "x://t/{id}", Name: "t"}},
		Answers: map[string]json.RawMessage{
			"prompts/list":   json.RawMessage(`{"error": {"code": -32000, "message": "prompts broke"}}`),
			"resources/list": json.RawMessage(`{"error": {"code": -32601, "message": "Method not found"}}`),
		},
	}
	// Method not found for templates, from a server with resources and
	// no templates, is no template and no failure.
	good := fakemcp.Spec{Prompts: []fakemcp.Prompt{{Name: "hi", Text: "hi"}}, Resources: []fakemcp.Resource{{URI: "g://r", Text: "r"}},
		Answers: map[string]json.RawMessage{"resources/templates/list": json.RawMessage(`{"error": {"code": -32601, "message": "Method not found"}}`)}}
	for _, lazy := range []bool{false, true} {
		e := New(&config.Config{File: "mcp.json", Servers: []*config.Server{fakeServer(t, "s", broken), fakeServer(t, "g", good)}},
			&Options{ShutdownTimeout: 2 * time.Second, LazyLists: lazy})
		t.Cleanup(func() { e.Close() })
		if err := e.Start(ctx(t)); err != nil {
			t.Fatalf("lazy %v: start: %v", lazy, err)
		}
		if res, err := e.Resources("g"); err != nil || len(res.Resources) != 1 {
			t.Errorf("lazy %v: g's resources %+v, %v", lazy, res, err)
		}
		if tools, err := e.Tools("s"); err != nil || len(tools) != 1 {
			t.Errorf("lazy %v: tools %v %v", lazy, tools, err)
		}
		prompts, err := e.Prompts("")
		if KindOf(err) != KindProtocol || !strings.Contains(err.Error(), "server s could not list its prompts: it answered prompts/list with error -32000: prompts broke") ||
			len(prompts) != 1 || prompts[0].Name() != "g.hi" {
			t.Errorf("lazy %v: prompts %v, %v", lazy, prompts, err)
		}
		res, err := e.Resources("")
		if KindOf(err) != KindProtocol || !strings.Contains(err.Error(), "server s could not list its resources: it answered resources/list with error -32601") ||
			len(res.Resources) != 1 || len(res.Templates) != 1 || res.Templates[0].URITemplate != "x://t/{id}" {
			t.Errorf("lazy %v: resources %+v, %v", lazy, res, err)
		}
		if _, err := e.GetPrompt(ctx(t), &PromptRequest{Name: "s.p"}); KindOf(err) != KindProtocol || !strings.Contains(err.Error(), "could not list its prompts") {
			t.Errorf("lazy %v: get of an unlisted prompt: %v", lazy, err)
		}
		_, err = e.ReadResource(ctx(t), &ResourceRequest{URI: "x://y"})
		if KindOf(err) != KindUsage || !strings.Contains(strings.Join(asError(err).Hint, "\n"), "server s could not list its resources") {
			t.Errorf("lazy %v: read: %v %v", lazy, err, asError(err).Hint)
		}
		// Named, the server is asked all the same.
		if r, err := e.ReadResource(ctx(t), &ResourceRequest{URI: "x://y", Server: "s"}); err != nil || !strings.Contains(string(r.Result), `"t"`) {
			t.Errorf("lazy %v: read from s: %v", lazy, err)
		}
	}
}

// A list a server failed to give is asked for again at the next listing:
// a server that fails once is listed whole after. Eager, the failure was
// its start's, and the first listing asks again; lazy, the first listing
// fails and the second asks again.
func TestListFailureAskedAgain(t *testing.T) {
	once := fakemcp.Spec{
		Tools:       []fakemcp.Tool{{Name: "echo"}},
		Prompts:     []fakemcp.Prompt{{Name: "p", Text: "x"}},
		Answers:     map[string]json.RawMessage{"prompts/list": json.RawMessage(`{"error": {"code": -32000, "message": "not yet"}}`)},
		AnswerTimes: map[string]int{"prompts/list": 1},
	}
	for _, lazy := range []bool{false, true} {
		e := New(&config.Config{File: "mcp.json", Servers: []*config.Server{fakeServer(t, "s", once)}}, &Options{LazyLists: lazy})
		t.Cleanup(func() { e.Close() })
		if err := e.Start(ctx(t)); err != nil {
			t.Fatalf("lazy %v: start: %v", lazy, err)
		}
		if lazy {
			if _, err := e.Prompts(""); KindOf(err) != KindProtocol || !strings.Contains(err.Error(), "not yet") {
				t.Errorf("lazy: first listing: %v", err)
			}
		}
		prompts, err := e.Prompts("")
		if err != nil || len(prompts) != 1 || prompts[0].Name() != "s.p" {
			t.Errorf("lazy %v: next listing: %v %v", lazy, prompts, err)
		}
		if _, err := e.GetPrompt(ctx(t), &PromptRequest{Name: "s.p"}); err != nil {
			t.Errorf("lazy %v: get after the list came: %v", lazy, err)
		}
	}
}

// A list whose pages never end (a cursor given again) fails at once with
// why, where the SDK's iterator asked for the same page for good (a minute
// at full CPU, then nothing listed and no error). A prompts list is that
// list's failure, the rest serving; a tools list fails the start.
func TestListPagesNeverEnd(t *testing.T) {
	loop := json.RawMessage(`{"result": {"prompts": [{"name": "p"}], "nextCursor": "same"}}`)
	s := fakeServer(t, "s", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}, Prompts: []fakemcp.Prompt{{Name: "p", Text: "x"}},
		Answers: map[string]json.RawMessage{"prompts/list": loop}})
	e := newEngine(t, s)
	t0 := time.Now()
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	prompts, err := e.Prompts("")
	if KindOf(err) != KindProtocol || !strings.Contains(err.Error(), `server s's prompts/list never ends: page 2 gave the cursor page 1 gave ("same")`) || len(prompts) != 0 {
		t.Errorf("prompts %v, %v", prompts, err)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "s.echo"}); err != nil {
		t.Errorf("call: %v", err)
	}
	// Not asked again at each listing (up to maxPages pages each time):
	// the failure stays until the list changes or the server restarts.
	srv := e.servers["s"]
	srv.mu.Lock()
	unlisted := slices.Clone(srv.snap.unlisted)
	srv.mu.Unlock()
	if slices.Contains(unlisted, listPrompts) {
		t.Errorf("prompts are to be listed again: %v", unlisted)
	}
	if _, err := e.Prompts(""); !strings.Contains(fmt.Sprint(err), "never ends") {
		t.Errorf("second listing: %v", err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("took %v", d)
	}

	tools := json.RawMessage(`{"result": {"tools": [{"name": "t", "inputSchema": {"type": "object"}}], "nextCursor": "again"}}`)
	e = newEngine(t, fakeServer(t, "t", fakemcp.Spec{Answers: map[string]json.RawMessage{"tools/list": tools}}))
	err = e.Start(ctx(t))
	if KindOf(err) != KindProtocol || !strings.Contains(err.Error(), `server t's tools/list never ends: page 2 gave the cursor page 1 gave ("again")`) {
		t.Errorf("start: %v", err)
	}
}

// Cursors that are new each time end at maxPages pages.
func TestListPagesBounded(t *testing.T) {
	asked := 0
	list := func(_ context.Context, c string) (int, error) { asked++; return asked, nil }
	var n int
	var err error
	for _, err = range paged(t.Context(), &config.Server{Name: "s"}, "tools/list", list, func(i int) ([]int, string) { return []int{i}, fmt.Sprint("c", i) }) {
		if err != nil {
			break
		}
		n++
	}
	if n != maxPages || asked != maxPages || err == nil || err.Error() != "server s's tools/list did not end within 1000 pages" {
		t.Errorf("%d items, %d pages asked, err %v", n, asked, err)
	}
}
