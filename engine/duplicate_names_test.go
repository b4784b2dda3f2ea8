package engine

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/internal/fakemcp"
	"github.com/mcpctl/mcpctl/internal/testutil"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// duplicating starts an engine on one fake server, logging to the
// returned buffer.
func duplicating(t *testing.T, spec fakemcp.Spec) (*Engine, *testutil.Buffer) {
	t.Helper()
	var logs testutil.Buffer
	e := New(&config.Config{File: "mcp.json", Servers: []*config.Server{fakeServer(t, "d", spec)}},
		&Options{ShutdownTimeout: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	t.Cleanup(func() { e.Close() })
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	return e, &logs
}

// warned returns the log lines that say so.
func warned(logs *testutil.Buffer, says ...string) []string {
	var out []string
	for _, line := range strings.Split(logs.String(), "\n") {
		ok := strings.Contains(line, "level=WARN")
		for _, s := range says {
			ok = ok && strings.Contains(line, s)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

// A prompt a server lists twice by one name is listed once, as the server
// listed it first: the second was listed twice and the first never (the
// raw objects were matched to the names by a map, the last one winning).
// A get by that name checks its arguments against that first one, and one
// warning names the server, the list and the name.
func TestDuplicatePromptListedOnce(t *testing.T) {
	e, logs := duplicating(t, fakemcp.Spec{
		Prompts: []fakemcp.Prompt{{Name: "greet", Text: "hello", Arguments: []*mcp.PromptArgument{{Name: "a"}, {Name: "b"}}}},
		Answers: map[string]json.RawMessage{"prompts/list": json.RawMessage(`{"result": {"prompts": [
			{"name": "greet", "description": "first", "arguments": [{"name": "a"}]},
			{"name": "other", "description": "other"},
			{"name": "greet", "description": "second", "arguments": [{"name": "b"}]}]}}`)},
	})
	prompts, err := e.Prompts("")
	var got [][2]string
	for _, p := range prompts {
		got = append(got, [2]string{p.Name(), p.Description()})
	}
	if err != nil || len(got) != 2 || got[0] != [2]string{"d.greet", "first"} || got[1] != [2]string{"d.other", "other"} {
		t.Errorf("prompts %v, %v", got, err)
	}
	if p, err := e.Prompts("d.greet"); err != nil || len(p) != 1 || p[0].Description() != "first" {
		t.Errorf("d.greet: %v, %v", p, err)
	}
	if _, err := e.GetPrompt(ctx(t), &PromptRequest{Name: "d.greet", Arguments: map[string]string{"a": "x"}}); err != nil {
		t.Errorf("get with the first's argument: %v", err)
	}
	if _, err := e.GetPrompt(ctx(t), &PromptRequest{Name: "d.greet", Arguments: map[string]string{"b": "x"}}); KindOf(err) != KindUsage {
		t.Errorf("get with the second's argument: %v", err)
	}
	if w := warned(logs, "server=d", "list=prompts/list", "names=[greet]"); len(w) != 1 || strings.Contains(w[0], "other") {
		t.Errorf("warnings %q in the log:\n%s", w, logs)
	}
}

// A tool a server lists twice by one name is listed once, as the server
// listed it first, and a call is checked against that one's schema.
func TestDuplicateToolListedOnce(t *testing.T) {
	e, logs := duplicating(t, fakemcp.Spec{
		Tools: []fakemcp.Tool{{Name: "ok"}, {Name: "b"}},
		Answers: map[string]json.RawMessage{"tools/list": json.RawMessage(`{"result": {"tools": [
			{"name": "ok", "description": "first", "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false}},
			{"name": "b", "inputSchema": {"type": "object"}},
			{"name": "ok", "description": "second", "inputSchema": {"type": "object", "properties": {"b": {"type": "string"}}, "additionalProperties": false}},
			{"name": "b", "inputSchema": {"type": "object"}}]}}`)},
	})
	tools, err := e.Tools("")
	var names []string
	for _, t := range tools {
		names = append(names, t.Name()+":"+t.Description())
	}
	if err != nil || strings.Join(names, " ") != "d.ok:first d.b:" {
		t.Errorf("tools %q, %v", names, err)
	}
	if tl, err := e.Tools("d.ok"); err != nil || len(tl) != 1 || tl[0].Description() != "first" {
		t.Errorf("d.ok: %v, %v", tl, err)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "d.ok", Arguments: json.RawMessage(`{"a": "x"}`)}); err != nil {
		t.Errorf("call with the first's argument: %v", err)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "d.ok", Arguments: json.RawMessage(`{"b": "x"}`)}); KindOf(err) != KindUsage {
		t.Errorf("call with the second's argument: %v", err)
	}
	if w := warned(logs, "server=d", "list=tools/list", `names="[ok b]"`); len(w) != 1 {
		t.Errorf("warnings %q in the log:\n%s", w, logs)
	}
}

// A prompt listed without a name is dropped, and said to be; so are a
// resource without a URI and a URI listed twice.
func TestNamelessItemDropped(t *testing.T) {
	e, logs := duplicating(t, fakemcp.Spec{
		Prompts:   []fakemcp.Prompt{{Name: "p", Text: "x"}},
		Resources: []fakemcp.Resource{{URI: "x://r", Text: "r"}},
		Templates: []fakemcp.Template{{URITemplate: "x://t/{id}", Name: "t"}},
		Answers: map[string]json.RawMessage{
			"prompts/list": json.RawMessage(`{"result": {"prompts": [{"name": "", "description": "nameless"}, {"name": "p"}]}}`),
			"resources/list": json.RawMessage(`{"result": {"resources": [
				{"uri": "x://r", "name": "first"}, {"uri": "x://r", "name": "second"}, {"uri": "", "name": "none"}]}}`),
			"resources/templates/list": json.RawMessage(`{"result": {"resourceTemplates": [
				{"uriTemplate": "x://t/{id}", "name": "first"}, {"uriTemplate": "x://t/{id}", "name": "second"}]}}`),
		},
	})
	if p, err := e.Prompts(""); err != nil || len(p) != 1 || p[0].Name() != "d.p" {
		t.Errorf("prompts %v, %v", p, err)
	}
	if w := warned(logs, "server=d", "list=prompts/list", "key=name", "count=1"); len(w) != 1 {
		t.Errorf("warnings %q in the log:\n%s", w, logs)
	}
	res, err := e.Resources("")
	if err != nil || len(res.Resources) != 1 || res.Resources[0].Name() != "first" || len(res.Templates) != 1 || res.Templates[0].Name() != "first" {
		t.Errorf("resources %+v, %v", res, err)
	}
	if w := warned(logs, "server=d", "list=resources/list", "uris=[x://r]"); len(w) != 1 {
		t.Errorf("warnings of duplicates %q in the log:\n%s", w, logs)
	}
	if w := warned(logs, "server=d", "list=resources/list", "key=uri", "count=1"); len(w) != 1 {
		t.Errorf("warnings of resources %q in the log:\n%s", w, logs)
	}
	if w := warned(logs, "server=d", "list=resources/templates/list", "uriTemplates=[x://t/{id}]"); len(w) != 1 {
		t.Errorf("warnings of templates %q in the log:\n%s", w, logs)
	}
}

// Listed again while the SDK answers from its cache (a 2026-07-28 server's
// ttlMs), with no page on the wire, a list is made of the pages seen last
// time: still each name once, the first kept, and said again.
func TestDuplicateFromCachedPages(t *testing.T) {
	e, logs := duplicating(t, fakemcp.Spec{
		Prompts: []fakemcp.Prompt{{Name: "greet", Text: "hello"}},
		Answers: map[string]json.RawMessage{"prompts/list": json.RawMessage(`{"result": {"ttlMs": 600000, "prompts": [
			{"name": "greet", "description": "first"}, {"name": "greet", "description": "second"}]}}`)},
		// Asked on the wire again, it would list its own "greet" alone,
		// without a description.
		AnswerTimes: map[string]int{"prompts/list": 1},
	})
	s, _ := e.lookup("d")
	s.refreshMu.Lock()
	s.mu.Lock()
	cs, conn, prev := s.cs, s.conn, s.snap
	s.mu.Unlock()
	sn, err := s.list(ctx(t), cs, conn, prev, listPrompts)
	s.refreshMu.Unlock()
	if err != nil || len(sn.prompts) != 1 || sn.prompts[0].Description() != "first" || sn.promptByName["greet"] != sn.prompts[0] {
		t.Fatalf("listed again: %v %v", sn, err)
	}
	if w := warned(logs, "server=d", "list=prompts/list", "names=[greet]"); len(w) != 2 {
		t.Errorf("warnings %q in the log:\n%s", w, logs)
	}
}
