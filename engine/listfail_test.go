package engine

import (
	"encoding/json"
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
