package fakemcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Tool is one tool of the fake server and what a call to it does. With
// nothing set, a call echoes its arguments as JSON text.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// Extra fields are merged into the listed tool object as they are
	// (e.g. "execution"), to test that listings stay lossless.
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
	// TaskSupport is listed as execution.taskSupport; with Spec.Tasks the
	// tool then runs as a task when asked (and must be, when "required").
	TaskSupport string `json:"taskSupport,omitempty"`

	// Side effects, done before the answer, in this order.
	Stdout    string   `json:"stdout,omitempty"`    // printed on stdout (a JSON log line, say)
	Stderr    string   `json:"stderr,omitempty"`    // printed on stderr
	StderrEnv []string `json:"stderrEnv,omitempty"` // NAME=value printed on stderr for each
	Log       string   `json:"log,omitempty"`       // sent as a log message at level info
	Progress  int      `json:"progress,omitempty"`  // progress notifications sent, Sleep apart (for a task tool: steps of its status, see tasks.go)
	// ProgressBurst notifications are sent at once when the call begins,
	// before its Sleep.
	ProgressBurst int      `json:"progressBurst,omitempty"`
	AddTools      []string `json:"addTools,omitempty"`    // tools added (list_changed follows)
	RemoveTool    []string `json:"removeTools,omitempty"` // tools removed
	AddPrompt     string   `json:"addPrompt,omitempty"`   // a prompt added
	Touch         string   `json:"touch,omitempty"`       // resources/updated sent for this URI
	Sample        string   `json:"sample,omitempty"`      // asks the client to sample this text; answers with what came back
	// Elicit is sent as elicitation/create params; the call answers with
	// the result as JSON text. A URL-mode one is reported complete
	// (notifications/elicitation/complete) CompleteAfter after it is sent,
	// when that is set.
	Elicit        *Elicit `json:"elicit,omitempty"`
	CompleteAfter string  `json:"completeAfter,omitempty"`
	// URLRequired makes every other call fail with -32042 (URL elicitation
	// required) naming this URL; the calls between answer "url visited".
	URLRequired string `json:"urlRequired,omitempty"`
	Allocate    int    `json:"allocate,omitempty"` // MiB allocated, written to and held for good
	// Raw lines are written to stdout as they are, RawRepeat times (once
	// when 0), between the SDK's messages: garbage, a response to an id
	// nobody asked, a storm of notifications.
	Raw       []string `json:"raw,omitempty"`
	RawRepeat int      `json:"rawRepeat,omitempty"`
	// StderrMiB MiB of 100-byte lines are written to stderr, then one
	// line of 1 MiB: a flood.
	StderrMiB int  `json:"stderrMiB,omitempty"`
	Spin      bool `json:"spin,omitempty"` // burn CPU until the call is cancelled

	// What a call answers; the first one set wins.
	Result      json.RawMessage `json:"result,omitempty"`      // sent as the raw result
	Error       string          `json:"error,omitempty"`       // an isError result with this text
	RPCError    *jsonrpc.Error  `json:"rpcError,omitempty"`    // a JSON-RPC error response
	Sleep       string          `json:"sleep,omitempty"`       // sleep (honouring cancellation), then echo
	ResultBytes int             `json:"resultBytes,omitempty"` // a text of this many bytes ("xxx…"), written raw
	Hang        bool            `json:"hang,omitempty"`        // never answer, ignoring cancellation
	Crash       *int            `json:"crash,omitempty"`       // exit with this code mid-call
	// CrashUnless names a file: the call crashes (exit 9) unless it
	// exists, and creates it; so it crashes once, and the server's next run
	// answers.
	CrashUnless string `json:"crashUnless,omitempty"`
	StopReading bool   `json:"stopReading,omitempty"` // stop reading stdin for good; never answer
	// PauseReading answers at once, then reads no more of stdin for this
	// long (the read under way takes what comes next): the pipe fills
	// and the client's writes block until it is over.
	PauseReading string `json:"pauseReading,omitempty"`
	CloseStdout  bool   `json:"closeStdout,omitempty"` // close stdout, keep running
	// CloseStdin closes stdin (no reader is left on the pipe: the client's
	// next write fails with EPIPE), answers, and keeps running.
	CloseStdin bool `json:"closeStdin,omitempty"`
	// Env answers with the server's own view of the world:
	// {"args": [...], "cwd": "...", "env": {NAME: value}} for these names.
	Env []string `json:"env,omitempty"`
	// Roots answers with the URIs of the client's roots, asked for with
	// roots/list.
	Roots bool `json:"roots,omitempty"`
	// Headers answers with these HTTP request headers as the server got
	// them: {"Name": "value"} (HTTP only).
	Headers []string `json:"headers,omitempty"`
	// Limits answers with the process's own resource limits (soft):
	// {"nofile": N, "cpu": seconds, "data": bytes}.
	Limits bool `json:"limits,omitempty"`
}

// Elicit is an elicitation/create request of a tool.
type Elicit struct {
	Mode            string          `json:"mode,omitempty"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	URL             string          `json:"url,omitempty"`
	ElicitationID   string          `json:"elicitationId,omitempty"`
	// Detached asks with a context of its own: the call's cancellation
	// does not cancel the question, as with server-everything.
	Detached bool `json:"detached,omitempty"`
}

func (f *fake) handler(t Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.Params.Arguments
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		f.logCall(map[string]any{"tool": t.Name, "arguments": args})
		if n := f.calls.Add(1); int(n) == f.spec.CrashOnCall {
			fmt.Fprintf(os.Stderr, "mcp-fake: crashing on call %d (%s)\n", n, t.Name)
			os.Exit(9)
		}
		if err := f.sideEffects(ctx, t, req); err != nil {
			f.logCall(map[string]any{"tool": t.Name, "cancelled": true})
			return nil, err
		}
		switch {
		case t.Sample != "":
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
				MaxTokens: 100,
				Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: t.Sample}}},
			})
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "sampling failed: " + err.Error()}}}, nil
			}
			out, _ := json.Marshal(res)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}, nil
		case t.Elicit != nil:
			if t.CompleteAfter != "" {
				d, _ := time.ParseDuration(t.CompleteAfter)
				go func() {
					time.Sleep(d)
					req.Session.NotifyElicitationComplete(context.Background(), &mcp.ElicitationCompleteParams{ElicitationID: t.Elicit.ElicitationID})
				}()
			}
			// The schema goes out as written: a form's fields keep their order.
			var schema any
			if t.Elicit.RequestedSchema != nil {
				schema = t.Elicit.RequestedSchema
			}
			ectx := ctx
			if t.Elicit.Detached {
				ectx = context.Background()
			}
			res, err := req.Session.Elicit(ectx, &mcp.ElicitParams{Mode: t.Elicit.Mode, Message: t.Elicit.Message, URL: t.Elicit.URL,
				ElicitationID: t.Elicit.ElicitationID, RequestedSchema: schema})
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "elicitation failed: " + err.Error()}}}, nil
			}
			out, _ := json.Marshal(res)
			return text(string(out)), nil
		case t.URLRequired != "":
			if f.urlAsked.Add(1)%2 == 1 {
				return nil, mcp.URLElicitationRequiredError([]*mcp.ElicitParams{{Mode: "url", URL: t.URLRequired, Message: "Sign in first.", ElicitationID: "el-1"}})
			}
			return text("url visited"), nil
		case t.Hang:
			select {}
		case t.StopReading:
			close(f.stopReading)
			select {}
		case t.PauseReading != "":
			d, err := time.ParseDuration(t.PauseReading)
			if err != nil {
				return nil, err
			}
			f.pausedUntil.Store(time.Now().Add(d).UnixNano())
			return text("paused"), nil
		case t.CloseStdout:
			os.Stdout.Close()
			select {}
		case t.CloseStdin:
			f.stdinClosed.Store(true)
			os.Stdin.Close()
			return text("closed stdin"), nil
		case t.Crash != nil:
			fmt.Fprintf(os.Stderr, "mcp-fake: crashing in %s\n", t.Name)
			os.Exit(*t.Crash)
		case t.CrashUnless != "":
			if _, err := os.Stat(t.CrashUnless); err != nil {
				os.WriteFile(t.CrashUnless, nil, 0o644)
				fmt.Fprintf(os.Stderr, "mcp-fake: crashing in %s\n", t.Name)
				os.Exit(9)
			}
			return text("survived"), nil
		case t.Roots:
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return nil, err
			}
			uris := []string{}
			for _, r := range res.Roots {
				uris = append(uris, r.URI)
			}
			out, _ := json.Marshal(uris)
			return text(string(out)), nil
		case t.Headers != nil:
			vals := map[string]string{}
			for _, n := range t.Headers {
				if req.Extra != nil {
					vals[n] = req.Extra.Header.Get(n)
				}
			}
			out, _ := json.Marshal(vals)
			return text(string(out)), nil
		case t.Env != nil:
			cwd, _ := os.Getwd()
			vals := map[string]string{}
			for _, n := range t.Env {
				vals[n] = os.Getenv(n)
			}
			out, _ := json.Marshal(map[string]any{"args": os.Args[1:], "cwd": cwd, "env": vals})
			return text(string(out)), nil
		case t.Limits:
			out, _ := json.Marshal(map[string]uint64{
				"nofile": rlimit(syscall.RLIMIT_NOFILE), "cpu": rlimit(syscall.RLIMIT_CPU), "data": rlimit(syscall.RLIMIT_DATA),
			})
			return text(string(out)), nil
		case t.Error != "":
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: t.Error}}}, nil
		}
		return text(string(args)), nil
	}
}

func rlimit(res int) uint64 {
	var l syscall.Rlimit
	syscall.Getrlimit(res, &l)
	return l.Cur
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// sideEffects does what t does before answering; it fails only when the
// call is cancelled.
func (f *fake) sideEffects(ctx context.Context, t Tool, req *mcp.CallToolRequest) error {
	if t.Stdout != "" {
		fmt.Fprintln(stdout, t.Stdout)
	}
	printEnv(t.StderrEnv)
	if t.Stderr != "" {
		fmt.Fprintln(os.Stderr, t.Stderr)
	}
	if t.Log != "" {
		req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "fake", Data: t.Log})
	}
	for _, n := range t.AddTools {
		f.addTool(f.srv, Tool{Name: n})
	}
	if len(t.RemoveTool) > 0 {
		f.srv.RemoveTools(t.RemoveTool...)
	}
	if t.AddPrompt != "" {
		addPrompt(f.srv, Prompt{Name: t.AddPrompt, Text: "added"})
	}
	if t.Touch != "" {
		f.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: t.Touch})
	}
	if t.Allocate > 0 {
		// Held for good, so collecting is pointless; and Go 1.26's
		// collector can itself die of a failed allocation, with a SIGSEGV
		// and no word of memory (1 run in 20 under a limit), where the
		// allocator's own death says "out of memory". Stopping it waits
		// for a cycle under way.
		debug.SetGCPercent(-1)
	}
	for range t.Allocate {
		chunk := make([]byte, 1<<20)
		for i := range chunk {
			chunk[i] = 1
		}
		f.mu.Lock()
		f.held = append(f.held, chunk)
		f.mu.Unlock()
	}
	for range max(t.RawRepeat, 1) {
		for _, l := range t.Raw {
			fmt.Fprintln(stdout, l)
		}
	}
	if t.StderrMiB > 0 {
		// Big writes, so the flood is as fast as the pipe drains.
		line := strings.Repeat("f", 99) + "\n"
		chunk := []byte(strings.Repeat(line, 1<<20/100))
		for range t.StderrMiB {
			os.Stderr.Write(chunk)
		}
		os.Stderr.Write([]byte(strings.Repeat("y", 1<<20) + "\n"))
	}
	for t.Spin && ctx.Err() == nil {
	}
	if token := req.Params.GetProgressToken(); token != nil {
		for i := 1; i <= t.ProgressBurst; i++ {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Message: fmt.Sprintf("burst %d", i)})
		}
	}
	d, _ := time.ParseDuration(t.Sleep)
	steps := max(t.Progress, 1)
	for i := 1; i <= steps; i++ {
		select {
		case <-time.After(d / time.Duration(steps)):
		case <-ctx.Done():
			return ctx.Err()
		}
		if t.Progress > 0 {
			if token := req.Params.GetProgressToken(); token != nil {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: float64(i), Total: float64(steps), Message: fmt.Sprintf("step %d of %d", i, steps),
				})
			}
		}
	}
	return nil
}

func decodeBase64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return []byte(s)
	}
	return b
}
