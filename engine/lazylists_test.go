package engine

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/internal/fakemcp"
)

// With LazyLists a server lists only its tools as it starts, and its
// prompts, resources and templates when first asked for; a prompt can be
// got without listing them first.
func TestLazyLists(t *testing.T) {
	spec := fakemcp.Spec{
		Tools:     []fakemcp.Tool{{Name: "echo"}},
		Prompts:   []fakemcp.Prompt{{Name: "greet", Text: "hello"}},
		Resources: []fakemcp.Resource{{URI: "mem://doc", Name: "doc", Text: "the doc"}},
		Templates: []fakemcp.Template{{URITemplate: "mem://{name}", Name: "mem"}},
	}
	sent := func(t *testing.T, logDir, method string) bool {
		t.Helper()
		data, _ := os.ReadFile(filepath.Join(logDir, "srv.wire.jsonl"))
		return bytes.Contains(data, []byte(`"method":"`+method+`"`))
	}
	start := func(t *testing.T, lazy bool) (*Engine, string) {
		logDir := t.TempDir()
		e := New(&config.Config{File: "mcp.json", Servers: []*config.Server{fakeServer(t, "srv", spec)}},
			&Options{ShutdownTimeout: 2 * time.Second, LogDir: logDir, Trace: true, LazyLists: lazy})
		t.Cleanup(func() { e.Close() })
		if err := e.Start(ctx(t)); err != nil {
			t.Fatal(err)
		}
		return e, logDir
	}

	t.Run("eager", func(t *testing.T) {
		_, logDir := start(t, false)
		for _, m := range []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"} {
			if !sent(t, logDir, m) {
				t.Errorf("%s not sent at start", m)
			}
		}
	})
	t.Run("prompt first", func(t *testing.T) {
		e, logDir := start(t, true)
		if !sent(t, logDir, "tools/list") {
			t.Fatal("tools/list not sent at start")
		}
		for _, m := range []string{"prompts/list", "resources/list", "resources/templates/list"} {
			if sent(t, logDir, m) {
				t.Errorf("%s sent at start", m)
			}
		}
		res, err := e.GetPrompt(ctx(t), &PromptRequest{Name: "srv.greet"})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(res.Result, []byte("hello")) {
			t.Errorf("prompt: %s", res.Result)
		}
	})
	t.Run("listings", func(t *testing.T) {
		e, _ := start(t, true)
		prompts, err := e.Prompts("srv")
		if err != nil || len(prompts) != 1 || prompts[0].Prompt != "greet" {
			t.Fatalf("prompts: %v, %v", prompts, err)
		}
		res, err := e.Resources("")
		if err != nil || len(res.Resources) != 1 || len(res.Templates) != 1 {
			t.Fatalf("resources: %+v, %v", res, err)
		}
		tools, err := e.Tools("srv")
		if err != nil || len(tools) != 1 {
			t.Fatalf("tools: %v, %v", tools, err)
		}
	})
}
