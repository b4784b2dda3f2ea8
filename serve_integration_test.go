//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// everythingConfig is a config of the pinned server-everything (installed
// by scripts/setup) as "everything", and of the other servers given.
func everythingConfig(t *testing.T, others map[string]any) string {
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "node_modules", ".bin", "mcp-server-everything")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("server-everything is not installed; run scripts/setup first")
	}
	servers := map[string]any{"everything": map[string]any{"command": bin}}
	for k, v := range others {
		servers[k] = v
	}
	cfg, _ := json.Marshal(map[string]any{"servers": servers})
	return string(cfg)
}

// TestIntegrationServe: a go-sdk client connected to mcpctl serve (over
// stdio and over HTTP, with a session and without) uses server-everything
// through it: tools, a call, a prompt, a resource and a template, progress,
// log messages, and the server's sampling and elicitation requests, which
// serve relays to the client and back.
func TestIntegrationServe(t *testing.T) {
	for _, tc := range []struct{ mode, transport string }{
		{"oneshot", "stdio"}, {"session", "stdio"}, {"oneshot", "http"}, {"session", "http"},
	} {
		t.Run(tc.mode+"-"+tc.transport, func(t *testing.T) {
			t.Parallel()
			w := newServeWorld(t, map[string]string{"mcp.json": everythingConfig(t, nil)})
			if tc.mode == "session" {
				w.mcpctl("up")
			}
			var sc *serveClient
			if tc.transport == "http" {
				token := "tok-" + w.mark
				url, _ := w.serveHTTP([]string{"MCPCTL_SERVE_TOKEN=" + token})
				sc = w.connectHTTP(url, token)
			} else {
				sc = w.serveStdio()
			}
			checkEverything(t, sc)
			sc.cs.Close()
			if tc.mode == "session" {
				w.mcpctl("down")
			}
		})
	}
}

func checkEverything(t *testing.T, sc *serveClient) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cs := sc.cs

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.Name == "everything.echo" && (tl.Title != "Echo Tool" || tl.Annotations == nil || !tl.Annotations.ReadOnlyHint) {
			t.Errorf("everything.echo as listed: %+v", tl)
		}
	}
	for _, want := range []string{"everything.echo", "everything.get-sum", "everything.trigger-sampling-request", "everything.trigger-elicitation-request"} {
		if !slices.Contains(names, want) {
			t.Errorf("no %s in %v", want, names)
		}
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything.echo", Arguments: map[string]any{"message": "hi"}})
	if err != nil || res.IsError || callText(t, res) != "Echo: hi" {
		t.Errorf("everything.echo: %v %+v", err, res)
	}

	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "everything.args-prompt", Arguments: map[string]string{"city": "Paris"}})
	if err != nil || len(pr.Messages) == 0 || !strings.Contains(pr.Messages[0].Content.(*mcp.TextContent).Text, "Paris") {
		t.Errorf("everything.args-prompt: %v %+v", err, pr)
	}

	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/static/document/architecture.md"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].MIMEType != "text/markdown" || rr.Contents[0].Text == "" {
		t.Errorf("reading architecture.md: %v %+v", err, rr)
	}
	rr, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/dynamic/text/7"})
	if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, "7") {
		t.Errorf("reading demo://resource/dynamic/text/7: %v %+v", err, rr)
	}

	params := &mcp.CallToolParams{Name: "everything.trigger-long-running-operation", Arguments: map[string]any{"duration": 1, "steps": 2}}
	params.SetProgressToken("long-1")
	if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
		t.Errorf("trigger-long-running-operation: %v %+v", err, res)
	}
	if !within(10*time.Second, func() bool { sc.mu.Lock(); defer sc.mu.Unlock(); return len(sc.progress) >= 2 }) {
		t.Errorf("progress of trigger-long-running-operation: %d notifications", len(sc.progress))
	}

	// Sampling: the server asks, serve asks this client, the answer goes
	// back into the server's result.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything.trigger-sampling-request", Arguments: map[string]any{"prompt": "tell a joke"}})
	if err != nil || res.IsError || !strings.Contains(callText(t, res), "sampled: Resource trigger-sampling-request context: tell a joke") || !strings.Contains(callText(t, res), "test-model") {
		t.Errorf("trigger-sampling-request: %v %+v %q", err, res, callText(t, res))
	}
	// Elicitation: the same with a form.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything.trigger-elicitation-request"})
	if err != nil || res.IsError || !strings.Contains(callText(t, res), "- Name: Ada") {
		t.Errorf("trigger-elicitation-request: %v %+v %q", err, res, callText(t, res))
	}
	sc.mu.Lock()
	if len(sc.samplings) != 1 || len(sc.elicitations) != 1 || sc.elicitations[0].Message != "Please provide inputs for the following fields:" {
		t.Errorf("the client was asked %d samplings, elicitations %+v", len(sc.samplings), sc.elicitations)
	}
	sc.mu.Unlock()

	// Log messages come with the server's name as logger.
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything.toggle-simulated-logging"}); err != nil {
		t.Fatal(err)
	}
	if !within(30*time.Second, func() bool {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		return slices.ContainsFunc(sc.logs, func(l *mcp.LoggingMessageParams) bool { return l.Logger == "everything" })
	}) {
		t.Errorf("no log message from everything; serve's stderr:\n%s", sc.stderr)
	}
	cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything.toggle-simulated-logging"})
}

// TestIntegrationServeInspector: the MCP Inspector's CLI (pinned in
// package.json) lists the tools of mcpctl serve over stdio.
func TestIntegrationServeInspector(t *testing.T) {
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	inspector := filepath.Join(root, "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	if _, err := os.Stat(inspector); err != nil {
		t.Fatalf("the MCP Inspector is not installed; run scripts/setup first")
	}
	// A second server beside server-everything: serve shows both.
	w := newServeWorld(t, map[string]string{
		"mcp.json":  everythingConfig(t, map[string]any{"fake": map[string]any{"command": "mcp-fake", "args": []string{"fake.json"}}}),
		"fake.json": `{"tools": [{"name": "echo"}]}`,
	})
	// The inspector starts its server with a few variables of its own
	// environment (HOME, PATH, ...) and those given with -e.
	args := []string{inspector, "--cli", "--method", "tools/list"}
	for _, kv := range w.env {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "XDG_") || k == markKey {
			args = append(args, "-e", kv)
		}
	}
	args = append(args, "--", "mcpctl", "serve", "-c", filepath.Join(w.dir, "mcp.json"))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = w.dir
	cmd.Env = w.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the inspector: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var out struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("the inspector's output is not its tools/list JSON: %v\n%s", err, stdout.String())
	}
	var names []string
	for _, tl := range out.Tools {
		names = append(names, tl.Name)
	}
	for _, want := range []string{"fake.echo", "everything.echo", "everything.get-sum"} {
		if !slices.Contains(names, want) {
			t.Errorf("the inspector lists %v: no %s", names, want)
		}
	}
}
