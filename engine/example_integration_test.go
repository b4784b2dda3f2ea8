//go:build integration

package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/engine"
)

// These examples run the reference servers that scripts/setup installs
// (go test -tags integration ./engine).

// The acceptance scenario of the MCP Host seed: start the filesystem server,
// check its tools and their parameter names and types, shut down cleanly.
func Example_filesystem() {
	dir, _ := os.MkdirTemp("", "fs")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello, world\n"), 0o644)
	repo, _ := filepath.Abs("..") // where node_modules is
	// The project directory is dir: the server is offered it as its root
	// (server-filesystem serves the roots it is offered, if any).
	cfg, err := config.Parse("example", []byte(`{"servers": {"fs": {
		"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${DIR}"], "cwd": "${REPO}"}}}`),
		dir, func(k string) (string, bool) {
			return map[string]string{"DIR": dir, "REPO": repo}[k], k == "DIR" || k == "REPO"
		})
	if err != nil {
		log.Fatal(err)
	}
	e := engine.New(cfg, nil)
	ctx := context.Background()
	if err := e.Start(ctx); err != nil {
		log.Fatal(err)
	}
	tools, _ := e.Tools("fs")
	fmt.Println(len(tools), "tools")
	for _, name := range []string{"fs.read_text_file", "fs.write_file", "fs.list_directory"} {
		t, err := e.Tools(name)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Print(name, ":")
		for _, p := range t[0].Parameters() {
			fmt.Printf(" %s %s", p.Name, p.Type)
			if p.Required {
				fmt.Print(" (required)")
			}
			fmt.Print(";")
		}
		fmt.Println()
	}
	res, err := e.CallTool(ctx, &engine.CallRequest{Name: "fs.read_text_file", Pairs: []string{"path=" + filepath.Join(dir, "hello.txt")}})
	if err != nil {
		log.Fatal(err)
	}
	var r struct {
		Content []struct{ Text string } `json:"content"`
	}
	json.Unmarshal(res.Result, &r)
	fmt.Print(r.Content[0].Text)
	e.Close()
	fmt.Println(e.Status()[0].State)
	// Output:
	// 14 tools
	// fs.read_text_file: path string (required); head number; tail number;
	// fs.write_file: content string (required); path string (required);
	// fs.list_directory: path string (required);
	// hello, world
	// stopped
}

// Tools, prompts and resources of server-everything.
func Example_everything() {
	repo, _ := filepath.Abs("..")
	cfg, err := config.Parse("example", []byte(`{"servers": {"everything": {
		"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]}}}`), repo, nil)
	if err != nil {
		log.Fatal(err)
	}
	e := engine.New(cfg, nil)
	defer e.Close()
	ctx := context.Background()
	if err := e.Start(ctx); err != nil {
		log.Fatal(err)
	}
	res, _ := e.CallTool(ctx, &engine.CallRequest{Name: "everything.get-sum", Arguments: json.RawMessage(`{"a": 2, "b": 3}`)})
	fmt.Println(string(res.Result))
	_, err = e.CallTool(ctx, &engine.CallRequest{Name: "everything.get-sum", Pairs: []string{"a=x", "b=3"}})
	fmt.Println(engine.KindOf(err), err)
	p, _ := e.GetPrompt(ctx, &engine.PromptRequest{Name: "everything.args-prompt", Arguments: map[string]string{"city": "Paris"}})
	fmt.Println(string(p.Result))
	r, _ := e.ReadResource(ctx, &engine.ResourceRequest{URI: "demo://resource/static/document/architecture.md"})
	fmt.Println(r.Server)
	// Output:
	// {"content":[{"type":"text","text":"The sum of 2 and 3 is 5."}]}
	// usage invalid arguments for everything.get-sum: a: expected number, got string
	// {"messages":[{"role":"user","content":{"type":"text","text":"What's weather in Paris?"}}]}
	// everything
}
