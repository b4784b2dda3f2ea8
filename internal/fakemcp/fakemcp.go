// Package fakemcp is an MCP server for mcpctl's tests: a go-sdk server on
// stdio whose tools, and whose faults, each test chooses in a JSON file.
//
// It stands beside the real reference servers in the tests, never instead of
// them: it reaches the edge cases they cannot (a crash mid-call, a banner on
// stdout, a result with a content type no SDK knows).
package fakemcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Spec is what the fake server does. Every field is optional.
type Spec struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
	// Stdout is printed on stdout before the server starts (a banner that
	// breaks the MCP rule that stdout carries only JSON-RPC).
	Stdout []string `json:"stdout,omitempty"`
	// Stderr is printed on stderr at start.
	Stderr []string `json:"stderr,omitempty"`
	// Exit, when set, makes the server exit with this code right after
	// printing Stderr, before it answers anything.
	Exit *int `json:"exit,omitempty"`
	// StartDelay is slept before serving.
	StartDelay string `json:"startDelay,omitempty"`
	// IgnoreStdinEOF keeps the process alive after stdin closes, as Node
	// servers do.
	IgnoreStdinEOF bool `json:"ignoreStdinEOF,omitempty"`
	// IgnoreSIGTERM makes only SIGKILL end the process.
	IgnoreSIGTERM bool `json:"ignoreSIGTERM,omitempty"`
	// ChildPIDFile, when set, starts a long-running child process (as npx
	// starts node) and writes its pid there.
	ChildPIDFile string `json:"childPidFile,omitempty"`
	// PIDFile, when set, receives the server's own pid.
	PIDFile string `json:"pidFile,omitempty"`
	// CallLog, when set, gets one JSON line per tools/call received.
	CallLog string `json:"callLog,omitempty"`
	// PageSize makes list results come in pages of this size.
	PageSize int    `json:"pageSize,omitempty"`
	Tools    []Tool `json:"tools,omitempty"`
}

// A Tool is one tool of the fake server and what a call to it does.
type Tool struct {
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// Extra fields are merged into the listed tool object as they are
	// (e.g. "execution"), to test that listings stay lossless.
	Extra map[string]json.RawMessage `json:"extra,omitempty"`

	// What a call does; the first one set wins. With none set the call
	// echoes its arguments as JSON text.
	Result   json.RawMessage `json:"result,omitempty"`   // sent as the raw result
	Error    string          `json:"error,omitempty"`    // an isError result with this text
	RPCError *jsonrpc.Error  `json:"rpcError,omitempty"` // a JSON-RPC error response
	Sleep    string          `json:"sleep,omitempty"`    // sleep (honouring cancellation), then echo
	// StopReading makes the server stop reading stdin for good and never
	// answer, as a hung server does.
	StopReading bool `json:"stopReading,omitempty"`
	// Stdout is printed on stdout before the answer (a JSON log line, say).
	Stdout string `json:"stdout,omitempty"`
	// CloseStdout closes stdout and keeps the process running: the
	// connection is gone, the process is not.
	CloseStdout bool `json:"closeStdout,omitempty"`
	// Env makes the call answer with the server's own view of the world:
	// {"args": [...], "cwd": "...", "env": {NAME: value}} for these names.
	Env   []string `json:"env,omitempty"`
	Crash *int     `json:"crash,omitempty"` // exit with this code mid-call
}

// Main runs the fake server with the spec file named in args[0]; further
// arguments are ignored (a tool with Env reports them). It returns the
// process exit code.
func Main(args []string) int {
	if len(args) < 1 {
		fmt.Fprintln(os.Stderr, "usage: mcp-fake SPEC.json [ARG]...")
		return 2
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcp-fake:", err)
		return 2
	}
	var spec Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		fmt.Fprintln(os.Stderr, "mcp-fake: bad spec:", err)
		return 2
	}
	return run(&spec)
}

func run(spec *Spec) int {
	if spec.IgnoreSIGTERM {
		signal.Ignore(syscall.SIGTERM)
	}
	if spec.PIDFile != "" {
		os.WriteFile(spec.PIDFile, []byte(strconv.Itoa(os.Getpid())), 0o644)
	}
	for _, l := range spec.Stderr {
		fmt.Fprintln(os.Stderr, l)
	}
	if spec.Exit != nil {
		return *spec.Exit
	}
	if spec.ChildPIDFile != "" {
		child := exec.Command("sleep", "3600")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "mcp-fake: child:", err)
			return 1
		}
		os.WriteFile(spec.ChildPIDFile, []byte(strconv.Itoa(child.Process.Pid)), 0o644)
	}
	if spec.StartDelay != "" {
		d, _ := time.ParseDuration(spec.StartDelay)
		time.Sleep(d)
	}
	for _, l := range spec.Stdout {
		fmt.Fprintln(os.Stdout, l)
	}
	name := spec.Name
	if name == "" {
		name = "fake"
	}
	version := spec.Version
	if version == "" {
		version = "1.0.0"
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: version}, &mcp.ServerOptions{PageSize: spec.PageSize})
	f := &fake{spec: spec, raw: map[jsonrpc.ID]Tool{}, stopReading: make(chan struct{})}
	for _, t := range spec.Tools {
		schema := t.InputSchema
		if len(schema) == 0 || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		srv.AddTool(&mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: schema}, f.handler(t))
	}
	err := srv.Run(context.Background(), &transport{f: f})
	if spec.IgnoreStdinEOF {
		select {}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcp-fake:", err)
	}
	return 0
}

type fake struct {
	spec        *Spec
	mu          sync.Mutex
	raw         map[jsonrpc.ID]Tool // calls whose response is replaced on the way out
	stopReading chan struct{}       // closed to stop reading stdin
}

func (f *fake) tool(name string) (Tool, bool) {
	for _, t := range f.spec.Tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

func (f *fake) handler(t Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.Params.Arguments
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		if f.spec.CallLog != "" {
			line, _ := json.Marshal(map[string]any{"tool": t.Name, "arguments": args})
			if fl, err := os.OpenFile(f.spec.CallLog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				fl.Write(append(line, '\n'))
				fl.Close()
			}
		}
		if t.Stdout != "" {
			fmt.Fprintln(os.Stdout, t.Stdout)
		}
		switch {
		case t.StopReading:
			close(f.stopReading)
			select {}
		case t.CloseStdout:
			os.Stdout.Close()
			select {}
		case t.Crash != nil:
			fmt.Fprintf(os.Stderr, "mcp-fake: crashing in %s\n", t.Name)
			os.Exit(*t.Crash)
		case t.Env != nil:
			cwd, _ := os.Getwd()
			vals := map[string]string{}
			for _, n := range t.Env {
				vals[n] = os.Getenv(n)
			}
			out, _ := json.Marshal(map[string]any{"args": os.Args[1:], "cwd": cwd, "env": vals})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}, nil
		case t.Error != "":
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: t.Error}}}, nil
		case t.Sleep != "":
			d, _ := time.ParseDuration(t.Sleep)
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(args)}}}, nil
	}
}

// transport is stdio with a hook that swaps in the spec's raw results and
// errors, which the SDK's typed results cannot express.
type transport struct{ f *fake }

func (t *transport) Connect(ctx context.Context) (mcp.Connection, error) {
	// The SDK reads stdin in a goroutine of its own; to play a server that
	// stops reading, the gate sits below it.
	inner, err := (&mcp.IOTransport{Reader: &gatedStdin{stop: t.f.stopReading}, Writer: nopCloser{os.Stdout}}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &conn{Connection: inner, f: t.f}, nil
}

type conn struct {
	mcp.Connection
	f *fake
}

// gatedStdin reads stdin until stop is closed, then blocks for good: the
// pipe fills and the client's writes block.
type gatedStdin struct{ stop chan struct{} }

func (g *gatedStdin) Read(p []byte) (int, error) {
	select {
	case <-g.stop:
		select {}
	default:
	}
	return os.Stdin.Read(p)
}

func (g *gatedStdin) Close() error { return os.Stdin.Close() }

type nopCloser struct{ *os.File }

func (nopCloser) Close() error { return nil }

func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" {
		var p struct {
			Name string `json:"name,omitempty"`
		}
		json.Unmarshal(req.Params, &p)
		if t, ok := c.f.tool(p.Name); ok && (t.Result != nil || t.RPCError != nil) {
			c.f.mu.Lock()
			c.f.raw[req.ID] = t
			c.f.mu.Unlock()
		}
	}
	return msg, err
}

func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.f.mu.Lock()
		t, found := c.f.raw[resp.ID]
		delete(c.f.raw, resp.ID)
		c.f.mu.Unlock()
		if found {
			if t.RPCError != nil {
				resp = &jsonrpc.Response{ID: resp.ID, Error: t.RPCError}
			} else {
				resp = &jsonrpc.Response{ID: resp.ID, Result: t.Result}
			}
			return c.Connection.Write(ctx, resp)
		}
		if extra := c.f.withExtras(resp.Result); extra != nil {
			return c.Connection.Write(ctx, &jsonrpc.Response{ID: resp.ID, Result: extra})
		}
	}
	return c.Connection.Write(ctx, msg)
}

// withExtras adds each tool's Extra fields to a tools/list result, or
// returns nil when result is not one or nothing needs adding.
func (f *fake) withExtras(result json.RawMessage) json.RawMessage {
	var page map[string]json.RawMessage
	if json.Unmarshal(result, &page) != nil || page["tools"] == nil {
		return nil
	}
	var tools []map[string]json.RawMessage
	if json.Unmarshal(page["tools"], &tools) != nil {
		return nil
	}
	changed := false
	for _, obj := range tools {
		var name string
		json.Unmarshal(obj["name"], &name)
		if t, ok := f.tool(name); ok {
			for k, v := range t.Extra {
				obj[k] = v
				changed = true
			}
		}
	}
	if !changed {
		return nil
	}
	page["tools"], _ = json.Marshal(tools)
	out, _ := json.Marshal(page)
	return out
}
