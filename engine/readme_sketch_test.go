package engine_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/engine"
)

// readmeSketch is the README's Go API sketch, between the markers, as it
// is there (gofmt's layout aside): compiled here, it cannot go stale
// (TestREADMESketch).
func readmeSketch(ctx context.Context, mySampler, askMyUser engine.RequestHandler, text string) error {
	// README begin
	cfg, err := config.Load("mcp.json", config.Options{}) // or config.Parse(name, data, dir, nil)
	e := engine.New(cfg, &engine.Options{Sampling: mySampler})
	defer e.Close()    // stops every server, no process left
	err = e.Start(ctx) // in parallel, all or nothing
	// (e.StartAsync(ctx) returns at once, with a wait
	// func; requests meanwhile wait for their server)
	tools, err := e.Tools("") // t.Name(), t.Parameters(), t.Raw(); with an
	// error too when a lazy server could not start
	res, err := e.CallTool(ctx, &engine.CallRequest{Name: "fs.read_text_file", Pairs: []string{"path=README.md"}})
	res, err = e.CallTool(ctx, &engine.CallRequest{Name: "everything.trigger-elicitation-request",
		Elicitation: askMyUser}) // answers what the server asks during this call,
	// when no other request is in flight on that server
	// (MCP does not say which call a question is for;
	// else Options.Elicitation, a hook, or a decline)
	p, err := e.GetPrompt(ctx, &engine.PromptRequest{Name: "everything.simple-prompt"})
	r, err := e.ReadResource(ctx, &engine.ResourceRequest{URI: "demo://resource/static/document/architecture.md"})
	sub := e.Events(engine.EventFilter{}) // what happens, as it happens; sub.C closes at e.Close()
	m := e.Metrics()                      // per server and method
	safe := e.Redact(text)                // the servers' secrets hidden, as mcpctl's errors do

	// Follow the config file: apply each edit, keeping unchanged servers running.
	// Watch returns once it watches; the calls come until ctx ends. The files
	// are asked for again after each change: an edit may name new ones (envFile).
	err = config.Watch(ctx, func() []string { return e.Config().WatchFiles() }, 150*time.Millisecond, func() {
		if next, err := config.Load("mcp.json", config.Options{}); err != nil {
			e.ReloadFailed(err) // keeps the running config; see e.ConfigError()
		} else {
			e.Reload(ctx, next) // → added, removed, restarted, updated, unchanged
		}
	})
	// README end
	_, _, _, _, _, _, _ = tools, res, p, r, sub, m, safe
	return err
}

// TestREADMESketch checks that the README's Go API block is readmeSketch's.
func TestREADMESketch(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "## Go API")
	_, block, ok2 := strings.Cut(after, "```go\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README has no Go block under ## Go API")
	}
	src, err := os.ReadFile("readme_sketch_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, sketch, _ := strings.Cut(string(src), "\t// README begin\n")
	sketch, _, _ = strings.Cut(sketch, "\t// README end\n")
	// The README aligns its comments as gofmt would not: the words count,
	// not the spaces.
	if words := strings.Fields; strings.Join(words(sketch), " ") != strings.Join(words(block), " ") {
		t.Errorf("the README's Go API block is not readmeSketch's (engine/readme_sketch_test.go): make them say the same\nREADME:\n%s\nreadmeSketch:\n%s", block, sketch)
	}
}
