package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mcpctl/mcpctl/internal/testutil"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/engine"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A serveWorld is a directory with a config and the environment mcpctl
// runs in there: its own HOME, XDG directories and session sockets, and a
// mark every process it starts inherits, so that none is left behind.
type serveWorld struct {
	t    *testing.T
	dir  string
	env  []string
	mark string
}

func newServeWorld(t *testing.T, files map[string]string) *serveWorld {
	t.Helper()
	dir := t.TempDir()
	// Socket paths must stay short; t.TempDir() is long.
	rt, err := os.MkdirTemp("", "mcx")
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 8)
	rand.Read(b)
	w := &serveWorld{t: t, dir: dir, mark: hex.EncodeToString(b)}
	marksMu.Lock()
	marks = append(marks, w.mark)
	marksMu.Unlock()
	home := filepath.Join(dir, "home")
	vars := map[string]string{
		"HOME":            home,
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"XDG_STATE_HOME":  filepath.Join(home, ".local", "state"),
		"XDG_CACHE_HOME":  filepath.Join(home, ".cache"),
		"XDG_DATA_HOME":   filepath.Join(home, ".local", "share"),
		"XDG_RUNTIME_DIR": rt,
		markKey:           w.mark,
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ours := vars[k]; ours || strings.HasPrefix(k, "MCPCTL_") {
			continue
		}
		w.env = append(w.env, kv)
	}
	for k, v := range vars {
		w.env = append(w.env, k+"="+v)
		if k != "XDG_RUNTIME_DIR" && k != markKey {
			os.MkdirAll(v, 0o700)
		}
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		socks, _ := filepath.Glob(filepath.Join(rt, "mcpctl", "*.sock"))
		for _, s := range socks {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			(&engine.Client{Socket: s}).Shutdown(ctx)
			cancel()
		}
		w.noneLeft()
		os.RemoveAll(rt)
	})
	return w
}

// noneLeft fails the test when a process it started still runs (after a
// short grace), and kills it.
func (w *serveWorld) noneLeft() {
	w.t.Helper()
	if eventually(func() bool { return len(markedProcesses(w.mark)) == 0 }) {
		return
	}
	left := markedProcesses(w.mark)
	desc := describe(left)
	for _, pid := range left {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	w.t.Errorf("processes left behind:\n%s", strings.Join(desc, "\n"))
}

func (w *serveWorld) command(extraEnv []string, args ...string) *exec.Cmd {
	cmd := exec.Command("mcpctl", args...)
	cmd.Dir = w.dir
	cmd.Env = append(slices.Clone(w.env), extraEnv...)
	return cmd
}

// mcpctl runs mcpctl to its end and returns its stdout; it fails the test
// when mcpctl fails.
func (w *serveWorld) mcpctl(args ...string) string {
	w.t.Helper()
	cmd := w.command(nil, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		w.t.Fatalf("mcpctl %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// waitFile waits until the file name in the world matches re.
func (w *serveWorld) waitFile(name, re string) {
	w.t.Helper()
	rx := regexp.MustCompile(re)
	p := filepath.Join(w.dir, name)
	if !within(60*time.Second, func() bool { data, _ := os.ReadFile(p); return rx.Match(data) }) {
		data, _ := os.ReadFile(p)
		w.t.Fatalf("%s has nothing matching %s:\n%s", name, re, data)
	}
}

// A serveClient is a go-sdk client connected to mcpctl serve, with what it
// was sent.
type serveClient struct {
	cs     *mcp.ClientSession
	stderr *testutil.Buffer

	mu           sync.Mutex
	toolsChanged int
	progress     []*mcp.ProgressNotificationParams
	logs         []*mcp.LoggingMessageParams
	elicitations []*mcp.ElicitParams
	samplings    []*mcp.CreateMessageParams
	updated      []string // URIs of resources/updated, in order
}

// updates returns the URIs of the resources/updated the client got.
func (sc *serveClient) updates() []string {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return slices.Clone(sc.updated)
}

// newServeClient builds a client that answers sampling (with "sampled:
// TEXT") and elicitation (accepting with name "Ada"), and records
// notifications.
func newServeClient() (*serveClient, *mcp.Client) {
	sc := &serveClient{stderr: &testutil.Buffer{}}
	c := mcp.NewClient(&mcp.Implementation{Name: "serve-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			sc.mu.Lock()
			sc.toolsChanged++
			sc.mu.Unlock()
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			sc.mu.Lock()
			sc.progress = append(sc.progress, req.Params)
			sc.mu.Unlock()
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			sc.mu.Lock()
			sc.logs = append(sc.logs, req.Params)
			sc.mu.Unlock()
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			sc.mu.Lock()
			sc.samplings = append(sc.samplings, req.Params)
			sc.mu.Unlock()
			text := ""
			if len(req.Params.Messages) > 0 {
				if tc, ok := req.Params.Messages[0].Content.(*mcp.TextContent); ok {
					text = tc.Text
				}
			}
			return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant", Content: &mcp.TextContent{Text: "sampled: " + text}}, nil
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			sc.mu.Lock()
			sc.updated = append(sc.updated, req.Params.URI)
			sc.mu.Unlock()
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			sc.mu.Lock()
			sc.elicitations = append(sc.elicitations, req.Params)
			sc.mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	})
	return sc, c
}

// serveStdio starts mcpctl serve over stdio and connects a client to it.
func (w *serveWorld) serveStdio(args ...string) *serveClient {
	w.t.Helper()
	sc, c := newServeClient()
	cmd := w.command(nil, append([]string{"serve"}, args...)...)
	cmd.Stderr = sc.stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		w.t.Fatalf("connecting to mcpctl serve: %v\nstderr:\n%s", err, sc.stderr)
	}
	sc.cs = cs
	w.t.Cleanup(func() { cs.Close() })
	return sc
}

// serveHTTP starts mcpctl serve --http on a free loopback port and returns
// its URL, read from its stderr, and the process (stopped at the end).
func (w *serveWorld) serveHTTP(extraEnv []string, args ...string) (url string, stderr *testutil.Buffer) {
	w.t.Helper()
	stderr = &testutil.Buffer{}
	cmd := w.command(extraEnv, append([]string{"serve", "--http", "127.0.0.1:0"}, args...)...)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	w.t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			w.t.Errorf("mcpctl serve --http did not end on SIGINT")
		}
	})
	rx := regexp.MustCompile(`serving MCP on (http://\S+/mcp)`)
	if !within(60*time.Second, func() bool { return rx.MatchString(stderr.String()) }) {
		w.t.Fatalf("mcpctl serve --http never said where it serves; stderr:\n%s", stderr)
	}
	return rx.FindStringSubmatch(stderr.String())[1], stderr
}

// connectHTTP connects a client to url, sending token as a bearer token.
func (w *serveWorld) connectHTTP(url, token string) *serveClient {
	w.t.Helper()
	sc, c := newServeClient()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
	if err != nil {
		w.t.Fatalf("connecting to %s: %v", url, err)
	}
	sc.cs = cs
	w.t.Cleanup(func() { cs.Close() })
	return sc
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// toolNames lists the tools serve offers sc, sorted.
func toolNames(ctx context.Context, t *testing.T, sc *serveClient) []string {
	t.Helper()
	tools, err := sc.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range tools.Tools {
		out = append(out, tl.Name)
	}
	slices.Sort(out)
	return out
}

func callText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

const serveFakeSpec = `{
  "callLog": "calls.log",
  "protocolVersion": "2025-11-25",
  "instructions": "Use fake.echo to echo.",
  "completions": {"who": ["Ann", "Bob"]},
  "tools": [
    {"name": "echo", "description": "echo input", "inputSchema": {"type": "object", "properties": {"x": {"type": "number"}}, "additionalProperties": false}},
    {"name": "fail", "error": "it broke"},
    {"name": "quota", "rpcError": {"code": -32010, "message": "quota for key sk-serve-secret-1", "data": {"retryAfter": 5, "key": "sk-serve-secret-1", "big": 12345678901234567890}}},
    {"name": "structured", "result": {"content": [{"type": "text", "text": "{\"n\":1.5}"}], "structuredContent": {"n": 1.5, "s": "x"}, "_meta": {"k": "v"}}},
    {"name": "slow", "sleep": "60s"},
    {"name": "steps", "sleep": "900ms", "progress": 3},
    {"name": "grow", "addTools": ["grown"]},
    {"name": "hidden"},
    {"name": "sample", "sample": "say hi"},
    {"name": "say", "log": "hello log"},
    {"name": "ask", "elicit": {"message": "Your name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}
  ],
  "prompts": [{"name": "greet", "description": "a greeting", "arguments": [{"name": "who", "required": true}], "text": "Hello {{who}}"}],
  "resources": [{"uri": "file:///notes.txt", "name": "notes", "mimeType": "text/plain", "text": "some notes"}],
  "templates": [{"uriTemplate": "file:///docs/{name}", "name": "docs", "text": "doc"}]
}`

const serveFakeConfig = `{"servers": {"fake": {"command": "mcp-fake", "args": ["fake.json"], "excludeTools": ["hidden"], "env": {"FAKE_KEY": "sk-serve-secret-1"}}}}`

// TestServe connects a go-sdk client to mcpctl serve over stdio, with a
// session running and without one, and uses everything the fake server
// offers through it.
func TestServe(t *testing.T) {
	for _, mode := range []string{"oneshot", "session"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			w := newServeWorld(t, map[string]string{"mcp.json": serveFakeConfig, "fake.json": serveFakeSpec})
			if mode == "session" {
				w.mcpctl("up")
			}
			sc := w.serveStdio()
			checkServe(t, w, sc)
			if mode == "session" {
				// serve used the session: its server got the call that
				// added a tool.
				if out := w.mcpctl("tools", "--jq", ".[].name", "-r"); !strings.Contains(out, "fake.grown") {
					t.Errorf("the session's tools after serve: %s", out)
				}
			}
			// The client goes (stdin closes): serve ends, and stops the
			// servers it started itself.
			sc.cs.Close()
			if mode == "session" {
				w.mcpctl("down")
			}
			w.noneLeft()
		})
	}
}

// checkServe is what a client sees of the fake server through serve.
func checkServe(t *testing.T, w *serveWorld, sc *serveClient) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cs := sc.cs

	init := cs.InitializeResult()
	if init.ServerInfo.Name != "mcpctl" || !strings.Contains(init.Instructions, "Use fake.echo to echo.") {
		t.Errorf("initialize: server %+v, instructions %q", init.ServerInfo, init.Instructions)
	}
	if init.ProtocolVersion >= "2026-07-28" {
		t.Errorf("protocol version %s: serve speaks up to 2025-11-25", init.ProtocolVersion)
	}

	// Tools, named server.tool, excludeTools applied, schemas as listed.
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var echo *mcp.Tool
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.Name == "fake.echo" {
			echo = tl
		}
	}
	for _, want := range []string{"fake.echo", "fake.fail", "fake.slow", "fake.sample", "fake.ask"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v: no %s", names, want)
		}
	}
	if slices.Contains(names, "fake.hidden") {
		t.Errorf("tools %v: fake.hidden is excluded by the config", names)
	}
	if echo == nil {
		t.Fatalf("no fake.echo in %v", names)
	}
	schema, _ := json.Marshal(echo.InputSchema)
	if echo.Description != "echo input" || string(schema) != `{"additionalProperties":false,"properties":{"x":{"type":"number"}},"type":"object"}` {
		t.Errorf("fake.echo: description %q, schema %s", echo.Description, schema)
	}

	// Calls: the result as the server sent it.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.echo", Arguments: map[string]any{"x": 1}})
	if err != nil || res.IsError || callText(t, res) != `{"x":1}` {
		t.Errorf("fake.echo: %v %+v %q", err, res, callText(t, res))
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.fail"})
	if err != nil || !res.IsError || callText(t, res) != "it broke" {
		t.Errorf("fake.fail: %v %+v", err, res)
	}
	// A server's own JSON-RPC error goes on as it sent it, its data too
	// (numbers exact), the secrets of its config redacted.
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.quota"})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != -32010 || werr.Message != "quota for key <redacted>" ||
		string(werr.Data) != `{"big":12345678901234567890,"key":"<redacted>","retryAfter":5}` {
		t.Errorf("fake.quota: %#v", err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.structured"})
	if err != nil {
		t.Fatal(err)
	}
	sc2, _ := json.Marshal(res.StructuredContent)
	if string(sc2) != `{"n":1.5,"s":"x"}` || res.Meta["k"] != "v" || callText(t, res) != `{"n":1.5}` {
		t.Errorf("fake.structured: structuredContent %s, _meta %v, text %q", sc2, res.Meta, callText(t, res))
	}
	// Arguments that break the schema: a result marked isError, so a
	// model sees why.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.echo", Arguments: map[string]any{"x": "one"}})
	if err != nil || !res.IsError || !strings.Contains(callText(t, res), "invalid arguments for fake.echo") {
		t.Errorf("fake.echo with a bad argument: %v %+v", err, res)
	}
	// An unknown tool is a JSON-RPC error.
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.nope"})
	if err == nil || !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("fake.nope: %v", err)
	}
	// A tool named without its server: which one it may mean.
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo"})
	if !errors.As(err, &werr) || werr.Message != "\"echo\" is not a server.tool name\nhint: did you mean fake.echo? a tool is named server.tool" {
		t.Errorf("echo: %v", err)
	}
	// What the config hides is unknown to the client: neither that it
	// exists nor how to unhide it, for the name or a near one.
	// It is told as a name far from any is: nothing else would tell it
	// is there.
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.qqqqqq"})
	if !errors.As(err, &werr) || !strings.HasPrefix(werr.Message, "unknown tool fake.qqqqqq\nhint: known tools: fake.ask, fake.echo") {
		t.Fatalf("fake.qqqqqq: %v", err)
	}
	far := werr.Message
	for _, name := range []string{"fake.hidden", "fake.hiddn"} {
		_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: name})
		if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || werr.Message != strings.Replace(far, "fake.qqqqqq", name, 1) {
			t.Errorf("%s: %v; a far name's: %q", name, err, far)
		}
	}

	// A prompt, with completion of its argument.
	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(prompts.Prompts) != 1 || prompts.Prompts[0].Name != "fake.greet" || prompts.Prompts[0].Description != "a greeting" {
		t.Errorf("prompts: %v %+v", err, prompts)
	}
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "fake.greet", Arguments: map[string]string{"who": "Ann"}})
	if err != nil || len(pr.Messages) != 1 || pr.Messages[0].Content.(*mcp.TextContent).Text != "Hello Ann" {
		t.Errorf("fake.greet: %v %+v", err, pr)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "fake.greet"}); err == nil || !strings.Contains(err.Error(), "who: required") {
		t.Errorf("fake.greet without its argument: %v", err)
	}
	comp, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "fake.greet"}, Argument: mcp.CompleteParamsArgument{Name: "who", Value: "A"}})
	if err != nil || !slices.Equal(comp.Completion.Values, []string{"Ann"}) {
		t.Errorf("completing who of fake.greet: %v %+v", err, comp)
	}

	// Resources and templates keep their URIs.
	rl, err := cs.ListResources(ctx, nil)
	if err != nil || len(rl.Resources) != 1 || rl.Resources[0].URI != "file:///notes.txt" || rl.Resources[0].MIMEType != "text/plain" {
		t.Errorf("resources: %v %+v", err, rl)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///notes.txt"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "some notes" {
		t.Errorf("reading file:///notes.txt: %v %+v", err, rr)
	}
	tl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tl.ResourceTemplates) != 1 || tl.ResourceTemplates[0].URITemplate != "file:///docs/{name}" {
		t.Errorf("templates: %v %+v", err, tl)
	}
	rr, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///docs/a"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "doc file:///docs/a" {
		t.Errorf("reading file:///docs/a: %v %+v", err, rr)
	}

	// Progress, with the client's token.
	params := &mcp.CallToolParams{Name: "fake.steps"}
	params.SetProgressToken("tok-7")
	if _, err := cs.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	if !within(10*time.Second, func() bool { sc.mu.Lock(); defer sc.mu.Unlock(); return len(sc.progress) >= 3 }) {
		t.Errorf("progress: got %d notifications, want 3", len(sc.progress))
	}
	sc.mu.Lock()
	for i, p := range sc.progress {
		if p.ProgressToken != "tok-7" || p.Progress != float64(i+1) || p.Total != 3 || p.Message != fmt.Sprintf("step %d of 3", i+1) {
			t.Errorf("progress %d: %+v", i, p)
		}
	}
	sc.mu.Unlock()

	// The server's questions go to the client: sampling, elicitation.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.sample"})
	if err != nil || res.IsError || !strings.Contains(callText(t, res), "sampled: say hi") {
		t.Errorf("fake.sample: %v %+v %q", err, res, callText(t, res))
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.ask"})
	if err != nil || res.IsError || !strings.Contains(callText(t, res), `"action":"accept"`) || !strings.Contains(callText(t, res), `"name":"Ada"`) {
		t.Errorf("fake.ask: %v %+v %q", err, res, callText(t, res))
	}
	sc.mu.Lock()
	if len(sc.elicitations) != 1 || sc.elicitations[0].Message != "Your name?" {
		t.Errorf("elicitations the client saw: %+v", sc.elicitations)
	}
	sc.mu.Unlock()

	// Log messages: the level the client sets goes on to the server, and
	// what it logs comes back with the server's name as logger. A level
	// MCP does not have is refused.
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "loud"}); !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, `unknown log level "loud"`) {
		t.Errorf("logging/setLevel loud: %v", err)
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.say"}); err != nil {
		t.Fatal(err)
	}
	if !within(30*time.Second, func() bool {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		return slices.ContainsFunc(sc.logs, func(l *mcp.LoggingMessageParams) bool {
			return l.Logger == "fake" && l.Level == "info" && l.Data == "hello log"
		})
	}) {
		t.Errorf("no log message from fake; got %+v", sc.logs)
	}

	// Cancellation reaches the server.
	cctx, ccancel := context.WithCancel(ctx)
	called := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "fake.slow"})
		called <- err
	}()
	w.waitFile("calls.log", `"tool":"slow"`)
	ccancel()
	if err := <-called; err == nil {
		t.Errorf("a cancelled call answered")
	}
	w.waitFile("calls.log", `"cancelled":true,"tool":"slow"`)

	// A server's list changes: the client is told, and the next list has
	// the new tool.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.grow"}); err != nil {
		t.Fatal(err)
	}
	if !within(30*time.Second, func() bool { sc.mu.Lock(); defer sc.mu.Unlock(); return sc.toolsChanged > 0 }) {
		t.Fatalf("no tools/list_changed after fake.grow; serve's stderr:\n%s", sc.stderr)
	}
	tools, err = cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "fake.grown" }) {
		t.Errorf("after list_changed, no fake.grown in the tools")
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.grown", Arguments: map[string]any{"y": 2}}); err != nil {
		t.Errorf("fake.grown: %v", err)
	}
}

// Base64 that is not standard padded base64 (unpadded, URL-safe), as some
// servers send it, is served as standard base64: the SDK's types refused
// it, and the read or prompt failed whole, a tool's image became text.
func TestServeNonStandardBase64(t *testing.T) {
	t.Parallel()
	w := newServeWorld(t, map[string]string{
		"mcp.json": serveFakeConfig,
		"fake.json": `{"tools": [{"name": "pic", "result": {"content": [{"type": "image", "mimeType": "image/png", "data": "AAEC_w"}], "structuredContent": {"b": 1, "a": 2}}}],
		  "prompts": [{"name": "p", "text": "hi"}], "resources": [{"uri": "file:///a", "text": "a"}],
		  "answers": {
		    "prompts/get": {"result": {"messages": [{"role": "user", "content": {"type": "image", "mimeType": "image/png", "data": "AAEC/w"}}]}},
		    "resources/read": {"result": {"contents": [{"uri": "file:///a", "mimeType": "image/png", "blob": "AAEC/w"}]}}}}`,
	})
	sc := w.serveStdio()
	want := []byte{0, 1, 2, 255}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := sc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.pic"})
	if err != nil || len(res.Content) != 1 {
		t.Fatalf("call: %+v %v", res, err)
	}
	if img, ok := res.Content[0].(*mcp.ImageContent); !ok || !bytes.Equal(img.Data, want) {
		t.Errorf("the tool's image: %#v", res.Content[0])
	}
	if sc, _ := json.Marshal(res.StructuredContent); string(sc) != `{"a":2,"b":1}` {
		t.Errorf("structuredContent: %s", sc)
	}
	p, err := sc.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "fake.p"})
	if err != nil || len(p.Messages) != 1 {
		t.Fatalf("prompt: %+v %v", p, err)
	}
	if img, ok := p.Messages[0].Content.(*mcp.ImageContent); !ok || !bytes.Equal(img.Data, want) {
		t.Errorf("the prompt's image: %#v", p.Messages[0].Content)
	}
	r, err := sc.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///a"})
	if err != nil || len(r.Contents) != 1 || !bytes.Equal(r.Contents[0].Blob, want) {
		t.Errorf("read: %+v %v", r, err)
	}
}

// TestServeHTTP serves streamable HTTP with a bearer token, with a session
// and without: a client with the token uses it all; without it, or with a
// wrong one, a request is refused with 401.
func TestServeHTTP(t *testing.T) {
	for _, mode := range []string{"oneshot", "session"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			w := newServeWorld(t, map[string]string{"mcp.json": serveFakeConfig, "fake.json": serveFakeSpec})
			if mode == "session" {
				w.mcpctl("up")
			}
			token := "test-token-" + w.mark
			url, stderr := w.serveHTTP([]string{"MCPCTL_SERVE_TOKEN=" + token})
			for _, auth := range []string{"", "Bearer wrong-token", "Basic " + token, token} {
				req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("Authorization %q: %s %q, WWW-Authenticate %q", auth, resp.Status, body, resp.Header.Get("WWW-Authenticate"))
				}
			}
			// Told once on stderr for the burst, not once per request.
			for i := 0; i < 100 && !strings.Contains(stderr.String(), "warning: refused "); i++ {
				time.Sleep(20 * time.Millisecond)
			}
			if n := strings.Count(stderr.String(), "warning: refused "); n != 1 || !strings.Contains(stderr.String(), "warning: refused 1 request(s) without the right token, the last from 127.0.0.1:") {
				t.Errorf("refusals on serve's stderr (%d lines):\n%s", n, stderr)
			}
			// The Host in any case: host names are not case-sensitive.
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
			req.Host = strings.Replace(strings.TrimPrefix(strings.TrimSuffix(url, "/mcp"), "http://"), "127.0.0.1", "LOCALHOST", 1)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+token)
			if resp, err := http.DefaultClient.Do(req); err != nil {
				t.Error(err)
			} else {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("Host %s: %s %q", req.Host, resp.Status, body)
				}
			}
			// A message the SDK would misread is answered with its JSON-RPC
			// error, as over stdio: a request's null id (taken for a
			// notification's), an id of 7.5 (taken for 7), with 400; a
			// prompt argument that is not a string (refused by the SDK in
			// Go's words), with 200, as the SDK answers a request's error.
			type answer struct {
				status int
				body   string
			}
			for body, want := range map[string]answer{
				`{"jsonrpc":"2.0","id":null,"method":"ping"}`:                                                          {400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: a request's id is a string or an integer, never null"}}`},
				`{"jsonrpc":"2.0","id":7.5,"method":"ping"}`:                                                           {400, `{"jsonrpc":"2.0","id":7.5,"error":{"code":-32600,"message":"Invalid Request: the id 7.5 is not a string or an integer of 64 bits"}}`},
				`{"jsonrpc":"2.0","id":8,"method":"prompts/get","params":{"name":"fake.greet","arguments":{"who":5}}}`: {200, `{"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"Invalid params: a prompt's arguments are strings: \"who\" is a number; send it as the string \"5\""}}`},
				// What the SDK refuses in plain text: in JSON-RPC's terms, as
				// over stdio (a method not found is the request's error; a
				// notification of one is taken, and ignored).
				`{"jsonrpc":"2.0","id":13,"method":"foo/bar"}`:    {200, `{"jsonrpc":"2.0","id":13,"error":{"code":-32601,"message":"method not found: \"foo/bar\""}}`},
				`{"jsonrpc":"2.0","method":"notifications/foo"}`:  {202, ``},
				`{"jsonrpc":"2.0","id":14,"method":"tools/call"}`: {400, `{"jsonrpc":"2.0","id":14,"error":{"code":-32600,"message":"Invalid Request: missing required \"params\""}}`},
				`{nope`: {400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: malformed payload: …`},
			} {
				req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				matches := strings.TrimSpace(string(got)) == want.body
				if prefix, ok := strings.CutSuffix(want.body, "…"); ok {
					matches = strings.HasPrefix(string(got), prefix) // the rest is Go's words
				}
				if resp.StatusCode != want.status || !matches {
					t.Errorf("POST %s: %s %s\nwant %d %s", body, resp.Status, got, want.status, want.body)
				}
			}
			sc := w.connectHTTP(url, token)
			checkServe(t, w, sc)
			// A request as big as stdio takes (the SDK's own limit is 4 MiB).
			big := strings.Repeat("a", 5<<20)
			bctx, bcancel := context.WithTimeout(context.Background(), 60*time.Second)
			res, err := sc.cs.GetPrompt(bctx, &mcp.GetPromptParams{Name: "fake.greet", Arguments: map[string]string{"who": big}})
			bcancel()
			if err != nil || len(res.Messages) != 1 || len(res.Messages[0].Content.(*mcp.TextContent).Text) != len("Hello ")+len(big) {
				t.Errorf("a 5 MiB prompt argument over HTTP: %v", err)
			}
			if mode == "session" {
				if out := w.mcpctl("tools", "--jq", ".[].name", "-r"); !strings.Contains(out, "fake.grown") {
					t.Errorf("the session's tools after serve: %s", out)
				}
			}
			sc.cs.Close()
			if strings.Contains(stderr.String(), token) {
				t.Errorf("the token is on serve's stderr:\n%s", stderr)
			}
			if mode == "session" {
				w.mcpctl("down")
			}
		})
	}
}

const serveSubsSpec = `{
  "callLog": "calls.log", "protocolVersion": "2025-11-25", "subscribe": true,
  "tools": [{"name": "touch", "touch": "file:///notes.txt"}, {"name": "touch-other", "touch": "file:///other.txt"}],
  "resources": [{"uri": "file:///notes.txt", "name": "notes", "text": "n"}, {"uri": "file:///other.txt", "name": "other", "text": "o"}]
}`

// TestServeSubscriptions: a client subscribed through serve gets the
// server's resources/updated for that URI and no other; its unsubscribe,
// and its going away without one, reach the server once no other client
// follows the URI; a URI no server has is refused. Over stdio with and
// without a session, and over HTTP with two clients.
func TestServeSubscriptions(t *testing.T) {
	for _, mode := range []string{"oneshot", "session", "http"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			w := newServeWorld(t, map[string]string{
				"mcp.json":  `{"servers": {"fake": {"command": "mcp-fake", "args": ["fake.json"]}}}`,
				"fake.json": serveSubsSpec,
			})
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			var sc, other *serveClient
			if mode == "http" {
				w.mcpctl("up")
				defer w.mcpctl("down")
				token := "test-token-" + w.mark
				url, _ := w.serveHTTP([]string{"MCPCTL_SERVE_TOKEN=" + token})
				sc, other = w.connectHTTP(url, token), w.connectHTTP(url, token)
			} else {
				if mode == "session" {
					w.mcpctl("up")
					defer w.mcpctl("down")
				}
				sc = w.serveStdio()
			}
			if caps := sc.cs.InitializeResult().Capabilities; caps.Resources == nil || !caps.Resources.Subscribe {
				t.Fatalf("serve does not declare resource subscriptions: %+v", caps.Resources)
			}
			notes := &mcp.SubscribeParams{URI: "file:///notes.txt"}
			for _, uri := range []string{"file:///notes.txt", "file:///other.txt"} {
				if err := sc.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
					t.Fatal(err)
				}
			}
			if other != nil {
				if err := other.cs.Subscribe(ctx, notes); err != nil {
					t.Fatal(err)
				}
			}
			call := func(name string) {
				t.Helper()
				if _, err := sc.cs.CallTool(ctx, &mcp.CallToolParams{Name: name}); err != nil {
					t.Fatal(err)
				}
			}
			call("fake.touch-other")
			call("fake.touch")
			if !within(10*time.Second, func() bool { return len(sc.updates()) >= 2 }) {
				t.Fatalf("updates: %q, want one for each URI subscribed to", sc.updates())
			}
			time.Sleep(100 * time.Millisecond) // for any update too many
			if got := slices.Sorted(slices.Values(sc.updates())); !slices.Equal(got, []string{"file:///notes.txt", "file:///other.txt"}) {
				t.Errorf("updates: %q, want one for each URI subscribed to", got)
			}
			err := sc.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "file:///nowhere.txt"})
			if err == nil || !strings.Contains(err.Error(), "nowhere.txt") {
				t.Errorf("subscribing to a URI no server has: %v", err)
			}
			unsubscribed := func() bool {
				data, _ := os.ReadFile(filepath.Join(w.dir, "calls.log"))
				return strings.Contains(string(data), `{"unsubscribe":"file:///notes.txt"}`)
			}
			if err := sc.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "file:///notes.txt"}); err != nil {
				t.Fatal(err)
			}
			if other != nil {
				// Another client still follows it: the server is not told,
				// and that client still gets its updates.
				call("fake.touch")
				if !within(10*time.Second, func() bool { return len(other.updates()) >= 2 }) {
					t.Errorf("the other client's updates: %q, want two", other.updates())
				}
				if unsubscribed() {
					t.Error("the server was unsubscribed while a client still followed the URI")
				}
				// It goes away without unsubscribing.
				other.cs.Close()
			}
			if !within(10*time.Second, unsubscribed) {
				data, _ := os.ReadFile(filepath.Join(w.dir, "calls.log"))
				t.Errorf("the server was never unsubscribed; it saw:\n%s", data)
			}
			if n := len(sc.updates()); n != 2 {
				t.Errorf("%d updates after unsubscribing, want the two before", n)
			}
		})
	}
}

// A URI two servers list is followed on the one serve offers it from (the
// first in the config), as it is read from it: it was refused as offered by
// several.
func TestServeSubscribeURIOfTwoServers(t *testing.T) {
	t.Parallel()
	spec := func(name string) string {
		return `{"name": "` + name + `", "subscribe": true, "callLog": "` + name + `.log",
		 "tools": [{"name": "touch", "touch": "file:///dup"}],
		 "resources": [{"uri": "file:///dup", "name": "dup", "text": "from ` + name + `"}]}`
	}
	w := newServeWorld(t, map[string]string{
		"mcp.json": `{"servers": {"a": {"command": "mcp-fake", "args": ["a.json"]}, "b": {"command": "mcp-fake", "args": ["b.json"]}}}`,
		"a.json":   spec("a"),
		"b.json":   spec("b"),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sc := w.serveStdio()
	if err := sc.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "file:///dup"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "a.touch"}); err != nil {
		t.Fatal(err)
	}
	if !within(10*time.Second, func() bool { return len(sc.updates()) > 0 }) {
		t.Error("no update from the server serve offers file:///dup from")
	}
	if data, _ := os.ReadFile(filepath.Join(w.dir, "a.log")); !strings.Contains(string(data), `"subscribe":"file:///dup"`) {
		t.Errorf("a was not subscribed: %s", data)
	}
	if data, _ := os.ReadFile(filepath.Join(w.dir, "b.log")); strings.Contains(string(data), "subscribe") {
		t.Errorf("b was subscribed: %s", data)
	}
}

// TestServeServerGone: a call that times out, and one that kills its
// server, answer isError saying so; a server that dies takes its tools out
// of serve's list (the client is told), and when it is started again its
// tools come back.
func TestServeServerGone(t *testing.T) {
	t.Parallel()
	w := newServeWorld(t, map[string]string{
		"mcp.json":   `{"servers": {"fake": {"command": "mcp-fake", "args": ["fake.json"], "requestTimeout": "2s"}, "other": {"command": "mcp-fake", "args": ["other.json"]}}}`,
		"fake.json":  `{"tools": [{"name": "echo"}, {"name": "die", "crash": 9}, {"name": "stall", "sleep": "60s"}], "prompts": [{"name": "greet", "text": "hi"}], "resources": [{"uri": "file:///notes.txt", "name": "notes", "text": "n"}]}`,
		"other.json": `{"name": "other", "tools": [{"name": "ping"}]}`,
	})
	w.mcpctl("up")
	sc := w.serveStdio()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	names := func() []string { return toolNames(ctx, t, sc) }
	changes := func() int { sc.mu.Lock(); defer sc.mu.Unlock(); return sc.toolsChanged }
	if got := names(); !slices.Equal(got, []string{"fake.die", "fake.echo", "fake.stall", "other.ping"}) {
		t.Fatalf("tools: %v", got)
	}
	// A call that times out answers isError, saying so.
	res, err := sc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.stall"})
	if err != nil || !res.IsError || !strings.Contains(callText(t, res), "the call to fake.stall did not answer within 2s") {
		t.Fatalf("fake.stall: %v %+v %q", err, res, callText(t, res))
	}
	res, err = sc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.die"})
	if err != nil || !res.IsError || !strings.Contains(callText(t, res), "server fake exited with code 9") {
		t.Fatalf("fake.die: %v %+v %q", err, res, callText(t, res))
	}
	if !within(30*time.Second, func() bool { return changes() > 0 && slices.Equal(names(), []string{"other.ping"}) }) {
		t.Fatalf("after fake died: %d list changes, tools %v", changes(), names())
	}
	// No longer offered, its names are still answered, saying why they
	// cannot be used: a client may hold an older list.
	res, err = sc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.echo"})
	if err != nil || !res.IsError || !strings.Contains(callText(t, res), "server fake exited with code 9") {
		t.Errorf("fake.echo of a dead server: %v %+v", err, res)
	}
	_, err = sc.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "fake.greet"})
	if err == nil || !strings.Contains(err.Error(), "server fake exited with code 9") {
		t.Errorf("fake.greet of a dead server: %v", err)
	}
	_, err = sc.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///notes.txt"})
	if err == nil || !strings.Contains(err.Error(), "server fake exited with code 9") {
		t.Errorf("a read of a dead server's resource: %v", err)
	}
	// A name no server has is invalid params, with what it may mean.
	_, err = sc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "other.pong"})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, "did you mean other.ping?") {
		t.Errorf("other.pong: %v", err)
	}
	before := changes()
	w.mcpctl("restart", "fake")
	if !within(30*time.Second, func() bool { return changes() > before && len(names()) == 4 }) {
		t.Fatalf("after fake restarted: tools %v", names())
	}
	if res, err := sc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.echo"}); err != nil || res.IsError {
		t.Errorf("fake.echo after the restart: %v %+v", err, res)
	}
	sc.cs.Close()
	w.mcpctl("down")
}

// Without a session, serve started the servers itself: a call whose server
// died does not tell the client to run "mcpctl restart", which needs a
// session.
func TestServeStandaloneHint(t *testing.T) {
	t.Parallel()
	w := newServeWorld(t, map[string]string{
		"mcp.json":  `{"servers": {"fake": {"command": "mcp-fake", "args": ["fake.json"]}}}`,
		"fake.json": `{"tools": [{"name": "die", "crash": 9}]}`,
	})
	sc := w.serveStdio()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := sc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.die"})
	if err != nil || !res.IsError {
		t.Fatalf("fake.die: %v %+v", err, res)
	}
	// Its client cannot run a command again: it is told the server
	// stays down until serve starts again.
	if text := callText(t, res); strings.Contains(text, "mcpctl restart") || !strings.Contains(text, "it stays down until mcpctl serve starts again") {
		t.Errorf("fake.die without a session: %q", text)
	}
}

// TestServeClientWithoutSampling: a server's sampling request, when serve's
// client does not answer sampling and no hook is set, is declined with
// words for that client (and the model reading the tool's result), not the
// CLI's flag alone.
func TestServeClientWithoutSampling(t *testing.T) {
	t.Parallel()
	w := newServeWorld(t, map[string]string{
		"mcp.json":  `{"servers": {"fake": {"command": "mcp-fake", "args": ["fake.json"]}}}`,
		"fake.json": `{"protocolVersion": "2025-11-25", "tools": [{"name": "sample", "sample": "say hi"}]}`,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stderr := &testutil.Buffer{}
	cmd := w.command(nil, "serve")
	cmd.Stderr = stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "no-sampling", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connecting to mcpctl serve: %v\nstderr:\n%s", err, stderr)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.sample"})
	if err != nil {
		t.Fatal(err)
	}
	if text := callText(t, res); !res.IsError || !strings.Contains(text, "no sampling hook is set (sampling.command in the config), and its caller does not answer sampling") || !strings.Contains(text, "mcpctl serve when its client does") {
		t.Errorf("fake.sample, the client answering no sampling: isError %v, %q", res.IsError, text)
	}
}

// TestServeManage: with --manage, serve offers mcpctl.status and
// mcpctl.restart, with a session and without one: a client sees a dead
// server's state and error, restarts it, and gets its tools back; a
// server named mcpctl is not offered; an unknown name is an isError
// result. Without --manage there are no such tools.
func TestServeManage(t *testing.T) {
	for _, mode := range []string{"oneshot", "session"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			w := newServeWorld(t, map[string]string{
				"mcp.json":    `{"servers": {"fake": {"command": "mcp-fake", "args": ["fake.json"]}, "mcpctl": {"command": "mcp-fake", "args": ["hidden.json"]}}}`,
				"fake.json":   `{"tools": [{"name": "echo"}, {"name": "die", "crash": 9}], "resources": [{"uri": "file:///fake.txt", "name": "f", "text": "fake text"}]}`,
				"hidden.json": `{"subscribe": true, "tools": [{"name": "echo"}, {"name": "die", "crash": 9}], "prompts": [{"name": "greet", "text": "hi from hidden"}], "resources": [{"uri": "file:///hidden.txt", "name": "h", "text": "hidden text"}]}`,
			})
			if mode == "session" {
				w.mcpctl("up")
			}
			sc := w.serveStdio("--manage")
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			names := func() []string { return toolNames(ctx, t, sc) }
			if got := names(); !slices.Equal(got, []string{"fake.die", "fake.echo", "mcpctl.restart", "mcpctl.status"}) {
				t.Fatalf("tools: %v", got)
			}
			if !within(10*time.Second, func() bool {
				return strings.Contains(sc.stderr.String(), "server mcpctl is not offered: with --manage, mcpctl.* are serve's own tools")
			}) {
				t.Errorf("serve's stderr: %s", sc.stderr)
			}
			type states struct {
				Servers []engine.ServerStatus `json:"servers"`
			}
			call := func(name string, args any) (*mcp.CallToolResult, states) {
				t.Helper()
				res, err := sc.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				var st states
				if !res.IsError {
					if err := json.Unmarshal([]byte(callText(t, res)), &st); err != nil {
						t.Fatalf("%s: %v: %s", name, err, callText(t, res))
					}
				}
				return res, st
			}
			stateOf := func(st states, name string) engine.ServerStatus {
				for _, s := range st.Servers {
					if s.Name == name {
						return s
					}
				}
				t.Fatalf("no %s in %+v", name, st)
				return engine.ServerStatus{}
			}
			_, st := call("mcpctl.status", nil)
			first := stateOf(st, "fake")
			if first.State != engine.StateReady || first.PID == 0 || first.Tools != 2 {
				t.Fatalf("fake's status: %+v", first)
			}
			call("fake.die", nil)
			if !within(30*time.Second, func() bool { return !slices.Contains(names(), "fake.echo") }) {
				t.Fatalf("fake's tools after it died: %v", names())
			}
			_, st = call("mcpctl.status", nil)
			if dead := stateOf(st, "fake"); dead.State != engine.StateUnavailable || !strings.Contains(dead.LastError, "exited with code 9") {
				t.Errorf("fake's status after it died: %+v", dead)
			}
			res, st := call("mcpctl.restart", map[string]any{"server": "fake"})
			if back := stateOf(st, "fake"); res.IsError || back.State != engine.StateReady || back.PID == first.PID {
				t.Fatalf("restart: %q, %+v", callText(t, res), back)
			}
			if !within(30*time.Second, func() bool { return slices.Contains(names(), "fake.echo") }) {
				t.Fatalf("fake's tools after the restart: %v", names())
			}
			if res, err := sc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.echo"}); err != nil || res.IsError {
				t.Errorf("fake.echo after the restart: %v %+v", err, res)
			}
			res, _ = call("mcpctl.restart", map[string]any{"server": "nosuch"})
			if !res.IsError || !strings.Contains(callText(t, res), "unknown server nosuch") {
				t.Errorf("restart of an unknown server: %+v %q", res, callText(t, res))
			}
			res, _ = call("mcpctl.restart", map[string]any{"server": "mcpctl"})
			if !res.IsError || !strings.Contains(callText(t, res), "server mcpctl is not offered by serve --manage") {
				t.Errorf("restart of the hidden server: %+v %q", res, callText(t, res))
			}
			// Nor are its prompts and resources, asked for by name.
			if _, err := sc.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcpctl.greet"}); err == nil || strings.Contains(err.Error(), "hi from hidden") {
				t.Errorf("prompt of the hidden server: %v", err)
			}
			if r, err := sc.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///hidden.txt"}); err == nil || !strings.Contains(err.Error(), "Resource not found") {
				t.Errorf("resource of the hidden server: %+v %v", r, err)
			}
			// One no server has is not found; one not named is said so.
			if _, err := sc.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///nowhere.txt"}); err == nil || !strings.Contains(err.Error(), "Resource not found") {
				t.Errorf("resource no server has: %v", err)
			}
			if _, err := sc.cs.ReadResource(ctx, &mcp.ReadResourceParams{}); err == nil || !strings.Contains(err.Error(), "URI") {
				t.Errorf("resource without a URI: %v", err)
			}
			if err := sc.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "file:///hidden.txt"}); err == nil {
				t.Error("a subscription to the hidden server's resource was made")
			}
			if _, err := sc.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "mcpctl.greet"}, Argument: mcp.CompleteParamsArgument{Name: "x"}}); err == nil || !strings.Contains(err.Error(), `unknown prompt "mcpctl.greet"`) {
				t.Errorf("completion of the hidden server's prompt: %v", err)
			}
			_, st = call("mcpctl.status", nil)
			for _, s := range st.Servers {
				if s.Name == "mcpctl" {
					t.Errorf("mcpctl.status shows the hidden server: %+v", s)
				}
			}
			// Their arguments are checked as their schemas say.
			for _, bad := range []struct {
				tool string
				args any
				want string
			}{
				{"mcpctl.restart", map[string]any{"server": "fake", "x": 2}, `unknown argument "x": mcpctl.restart takes {"server": "NAME"}`},
				{"mcpctl.restart", map[string]any{"server": 5}, `server is not a string: mcpctl.restart takes {"server": "NAME"}`},
				{"mcpctl.status", map[string]any{"extra": 1}, `unknown argument "extra": mcpctl.status takes no arguments`},
			} {
				if res, _ = call(bad.tool, bad.args); !res.IsError || callText(t, res) != bad.want {
					t.Errorf("%s %v: %+v %q, want %q", bad.tool, bad.args, res, callText(t, res), bad.want)
				}
			}
			if mode == "session" {
				// A stop by hand is not the agent's to undo.
				w.mcpctl("stop", "fake")
				_, st = call("mcpctl.status", nil)
				if stopped := stateOf(st, "fake"); stopped.State != engine.StateStopped || !stopped.StoppedByHand {
					t.Errorf("fake's status after mcpctl stop: %+v", stopped)
				}
				res, _ = call("mcpctl.restart", map[string]any{"server": "fake"})
				if !res.IsError || !strings.Contains(callText(t, res), "server fake was stopped by hand (mcpctl stop); only a person starts it again") {
					t.Errorf("restart of a server stopped by hand: %+v %q", res, callText(t, res))
				}
				// Its resource is not offered, but a read of it says why
				// it cannot be read, not that it does not exist.
				if _, err := sc.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///fake.txt"}); err == nil || !strings.Contains(err.Error(), "server fake was stopped with mcpctl stop") {
					t.Errorf("read of a server stopped by hand: %v", err)
				}
			}
			sc.cs.Close()
			if mode == "session" {
				w.mcpctl("down")
			}
		})
	}
	t.Run("off", func(t *testing.T) {
		t.Parallel()
		w := newServeWorld(t, map[string]string{"mcp.json": serveFakeConfig, "fake.json": serveFakeSpec})
		sc := w.serveStdio()
		tools, err := sc.cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools.Tools {
			if strings.HasPrefix(tl.Name, "mcpctl.") {
				t.Errorf("without --manage: tool %s", tl.Name)
			}
		}
		sc.cs.Close()
	})
}

// A call the client cancels gets no answer (MCP: the receiver of
// notifications/cancelled does not respond to the request): not the
// cancellation as an error. Requests after it are answered as ever.
func TestServeCancelledNotAnswered(t *testing.T) {
	t.Parallel()
	w := newServeWorld(t, map[string]string{
		"mcp.json":  `{"servers": {"fake": {"command": "mcp-fake", "args": ["fake.json"]}}}`,
		"fake.json": `{"tools": [{"name": "stall", "sleep": "60s"}]}`,
	})
	cmd := w.command(nil, "serve")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr testutil.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	send := func(msg string) {
		if _, err := io.WriteString(stdin, msg+"\n"); err != nil {
			t.Fatalf("writing to serve: %v", err)
		}
	}
	var seen []string
	// await reads serve's lines until the answer to id; every line read is
	// kept in seen.
	await := func(id int) {
		t.Helper()
		want := fmt.Sprintf(`"id":%d`, id)
		timeout := time.After(60 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("serve ended before answering %d; it wrote %q\nstderr:\n%s", id, seen, stderr.String())
				}
				seen = append(seen, l)
				if strings.Contains(l, want) && !strings.Contains(l, `"method"`) {
					return
				}
			case <-timeout:
				t.Fatalf("no answer to %d; serve wrote %q", id, seen)
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	await(1)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fake.stall","arguments":{}}}`)
	time.Sleep(300 * time.Millisecond) // for the call to reach the server
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"the user gave up"}}`)
	// The cancelled call ends within moments; what serve would write for
	// it comes before the answers to requests made well after.
	send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	await(3)
	time.Sleep(time.Second)
	send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	await(4)
	stdin.Close()
	for l := range lines {
		seen = append(seen, l)
	}
	cmd.Wait()
	for _, l := range seen {
		if strings.Contains(l, `"id":2`) {
			t.Errorf("the cancelled call was answered: %s", l)
		}
	}
}

// SIGTERM (or Ctrl-C) ends serve while a call is under way: the call is
// cancelled (its server is told), not waited for, and answered with why
// before serve closes its output (the SDK writes nothing once it closes).
func TestServeSignalEndsCalls(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			w := newServeWorld(t, map[string]string{
				"mcp.json":  `{"servers": {"fake": {"command": "mcp-fake", "args": ["fake.json"]}}}`,
				"fake.json": `{"tools": [{"name": "stall", "sleep": "60s"}]}`,
			})
			sc := w.serveStdio()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			called := make(chan error, 1)
			go func() {
				_, err := sc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.stall"})
				called <- err
			}()
			time.Sleep(500 * time.Millisecond) // for the call to reach the server
			pids := markedProcesses(w.mark)
			serve := -1
			for _, pid := range pids {
				if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.HasPrefix(string(cmdline), "mcpctl\x00serve") {
					serve = pid
				}
			}
			if serve < 0 {
				t.Fatalf("no mcpctl serve among %v", pids)
			}
			t0 := time.Now()
			syscall.Kill(serve, sig)
			if !within(3*time.Second, func() bool { return procState(serve) == "" }) {
				t.Fatalf("serve still runs 3s after %v", sig)
			}
			select {
			case err := <-called:
				// Answered, saying why: not the end of serve's output.
				if err == nil || !strings.Contains(err.Error(), "mcpctl serve is ending (interrupted by") {
					t.Errorf("the call's answer: %v", err)
				}
			case <-time.After(3*time.Second - time.Since(t0)):
				t.Fatalf("the call still runs 3s after %v to serve", sig)
			}
			t.Logf("serve ended %v after %v", time.Since(t0).Round(time.Millisecond), sig)
		})
	}
}

// A serve that uses a session ends with it (mcpctl down) while a call is
// under way: the call is answered, saying why, before serve closes its
// output; the client does not only see its end.
func TestServeSessionEndAnswersCalls(t *testing.T) {
	t.Parallel()
	w := newServeWorld(t, map[string]string{
		"mcp.json":  `{"servers": {"fake": {"command": "mcp-fake", "args": ["fake.json"]}}}`,
		"fake.json": `{"tools": [{"name": "stall", "sleep": "60s"}]}`,
	})
	w.mcpctl("up")
	sc := w.serveStdio()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	called := make(chan answer, 1)
	go func() {
		res, err := sc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake.stall"})
		called <- answer{res, err}
	}()
	time.Sleep(500 * time.Millisecond) // for the call to reach the server
	w.mcpctl("down")
	select {
	case a := <-called:
		// The session's stopped server (an isError result), or serve's
		// end: either says why.
		switch {
		case a.err != nil && strings.Contains(a.err.Error(), "mcpctl serve is ending (the session serve used ended"):
		case a.err == nil && a.res.IsError && len(a.res.Content) > 0:
			t.Logf("answered: %s", a.res.Content[0].(*mcp.TextContent).Text)
		default:
			t.Errorf("the call's answer: %+v, %v", a.res, a.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call still runs 30s after mcpctl down")
	}
	w.noneLeft()
}

// A call still under way when stdin has been closed for its grace (5s),
// as a shell pipe does once it has written its requests, is cancelled and
// answered with why; it got no answer at all.
func TestServeInputClosedAnswersCalls(t *testing.T) {
	t.Parallel()
	w := newServeWorld(t, map[string]string{
		"mcp.json":  serveFakeConfig,
		"fake.json": `{"callLog": "calls.log", "tools": [{"name": "stall", "sleep": "60s"}, {"name": "hang", "hang": true}]}`,
	})
	cmd := w.command(nil, "serve")
	cmd.Stdin = strings.NewReader(strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fake.stall","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fake.hang","arguments":{}}}`,
	}, "\n") + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("serve: %v\nstderr:\n%s", err, stderr.String())
	}
	for _, id := range []string{"2", "3"} {
		want := `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32603,"message":"mcpctl serve is ending (its input closed, and the request was still under way 5s later): the request was cancelled on its server"}}`
		if !strings.Contains(string(out), want) {
			t.Errorf("no answer to %s that says why; serve wrote:\n%s", id, out)
		}
	}
	calls, _ := os.ReadFile(filepath.Join(w.dir, "calls.log"))
	if !strings.Contains(string(calls), `"cancelled":true,"tool":"stall"`) {
		t.Errorf("the stalled call was not cancelled on its server:\n%s", calls)
	}
	w.noneLeft()
}

// SIGTERM ends serve --http at once: a client's event stream is ended by
// serve (a clean end of its body), not held until a grace runs out and
// then cut, and a call under way is answered with why.
func TestServeHTTPSignalEndsStreams(t *testing.T) {
	t.Parallel()
	w := newServeWorld(t, map[string]string{"mcp.json": serveFakeConfig, "fake.json": `{"tools": [{"name": "stall", "sleep": "60s"}]}`})
	token := "test-token-" + w.mark
	url, _ := w.serveHTTP([]string{"MCPCTL_SERVE_TOKEN=" + token})
	post := func(session, body string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return nil, ""
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(got)
	}
	init, _ := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	if init == nil {
		t.FailNow()
	}
	session := init.Header.Get("Mcp-Session-Id")
	if session == "" {
		t.Fatalf("initialize: %s, no session id", init.Status)
	}
	post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	called := make(chan string, 1)
	go func() {
		_, body := post(session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fake.stall","arguments":{}}}`)
		called <- body
	}()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", session)
	stream, err := http.DefaultClient.Do(req)
	if err != nil || stream.StatusCode != http.StatusOK {
		t.Fatalf("the event stream: %v %v", stream, err)
	}
	defer stream.Body.Close()
	serve := -1
	for _, pid := range markedProcesses(w.mark) {
		if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.HasPrefix(string(cmdline), "mcpctl\x00serve") {
			serve = pid
		}
	}
	if serve < 0 {
		t.Fatal("no mcpctl serve among the processes")
	}
	time.Sleep(500 * time.Millisecond) // for the call to reach the server
	t0 := time.Now()
	syscall.Kill(serve, syscall.SIGTERM)
	if _, err := io.ReadAll(stream.Body); err != nil {
		t.Errorf("the event stream was cut (%v) %v after SIGTERM, not ended by serve", err, time.Since(t0).Round(time.Millisecond))
	}
	if body := <-called; !strings.Contains(body, `"id":2,"error":{"code":-32603,"message":"mcpctl serve is ending (interrupted by terminated)`) {
		t.Errorf("the call under way was answered %q", body)
	}
	if !within(5*time.Second, func() bool { return procState(serve) == "" }) {
		t.Fatal("serve still runs 5s after SIGTERM")
	}
	t.Logf("serve ended %v after SIGTERM", time.Since(t0).Round(time.Millisecond))
}
