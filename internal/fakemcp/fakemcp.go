// Package fakemcp is an MCP server for mcpctl's tests: a go-sdk server on
// stdio whose tools, prompts, resources, and faults each test chooses in a
// JSON file.
//
// It stands beside the real reference servers in the tests, never instead of
// them: it reaches the edge cases they cannot (a crash mid-call, a banner on
// stdout, a result with a content type no SDK knows, a task that never ends).
package fakemcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Spec is what the fake server does. Every field is optional.
type Spec struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
	// Instructions are sent in the initialize result.
	Instructions string `json:"instructions,omitempty"`
	// ProtocolVersion, when set to a version before 2026-07-28, makes the
	// server refuse server/discover, so clients fall back to initialize
	// (as the TypeScript reference servers do).
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// IgnoreDiscover: server/discover gets no answer at all, as from a
	// server that ignores requests it does not know (each is logged as
	// {"ignored": "server/discover"}).
	IgnoreDiscover bool `json:"ignoreDiscover,omitempty"`
	// DiscoverFirst: nothing after a server/discover is read until it is
	// answered, as from a server that handles requests in order (the
	// go-sdk answers it concurrently with what follows, so an initialize
	// right behind it may be taken first).
	DiscoverFirst bool `json:"discoverFirst,omitempty"`
	// ReadTTLMs is the ttlMs of its resources/read results (2026-07-28
	// and later; the go-sdk sends 0, "stale at once", unless told).
	ReadTTLMs int `json:"readTTLMs,omitempty"`
	// AnswerVersion, when set, is the protocolVersion of the server's
	// answer to initialize, whatever was asked: a server that speaks a
	// version its client does not.
	AnswerVersion string `json:"answerVersion,omitempty"`
	// Stdout is printed on stdout before the server starts (a banner that
	// breaks the MCP rule that stdout carries only JSON-RPC).
	Stdout []string `json:"stdout,omitempty"`
	// Stderr is printed on stderr at start.
	Stderr []string `json:"stderr,omitempty"`
	// StderrEnv prints "NAME=value" on stderr at start for each of these
	// environment variables, and then "args: ..." with the arguments (a
	// server that logs its credentials).
	StderrEnv []string `json:"stderrEnv,omitempty"`
	// StderrEvery prints "tick N" on stderr at this interval.
	StderrEvery string `json:"stderrEvery,omitempty"`
	// Exit, when set, makes the server exit with this code right after
	// printing Stderr, before it answers anything.
	Exit *int `json:"exit,omitempty"`
	// KilledUnless names a file: unless it exists, the server creates it
	// and kills itself with SIGKILL at start (as an OOM killer might), so
	// only its first start fails.
	KilledUnless string `json:"killedUnless,omitempty"`
	// StartDelay is slept before serving.
	StartDelay string `json:"startDelay,omitempty"`
	// MethodDelay is slept, honouring cancellation, before answering a
	// request of the method: "logging/setLevel": "20s".
	MethodDelay map[string]string `json:"methodDelay,omitempty"`
	// IgnoreStdinEOF keeps the process alive after stdin closes, as Node
	// servers do.
	IgnoreStdinEOF bool `json:"ignoreStdinEOF,omitempty"`
	// SaveOnEOF, when stdin closes, works (on the CPU) for a while and
	// then writes a file, as a server that saves its state on the way out.
	SaveOnEOF *Save `json:"saveOnEOF,omitempty"`
	// IgnoreSIGTERM makes only SIGKILL end the process.
	IgnoreSIGTERM bool `json:"ignoreSIGTERM,omitempty"`
	// TermLog, when set, gets "SIGTERM" appended when the server receives
	// one, before it dies of it as it would have.
	TermLog string `json:"termLog,omitempty"`
	// ChildPIDFile, when set, starts a long-running child process (as npx
	// starts node) and writes its pid there.
	ChildPIDFile string `json:"childPidFile,omitempty"`
	// DescendantsPIDFile, when set, starts a child shell that starts a
	// grandchild; both ignore SIGTERM and stdin EOF and hold the server's
	// stdout and stderr, as a wrapper's children do. Their two pids are
	// written there, one a line.
	DescendantsPIDFile string `json:"descendantsPidFile,omitempty"`
	// CrashOnCall, when N > 0, makes the Nth tools/call (counting every
	// call to every tool, from 1) exit the process with code 9 instead of
	// answering.
	CrashOnCall int `json:"crashOnCall,omitempty"`
	// Answers replaces the answer to these methods with the given JSON-RPC
	// response members: {"initialize": {"error": {...}}} or
	// {"tools/list": {"result": ...}}.
	Answers map[string]json.RawMessage `json:"answers,omitempty"`
	// AnswerTimes limits Answers for a method to its first N requests;
	// the later ones get the server's own answer.
	AnswerTimes map[string]int `json:"answerTimes,omitempty"`
	// ExitOnInitialize, when set, makes the server exit with this code as
	// soon as it has read the handshake request it would answer
	// (server/discover, or initialize when ProtocolVersion refuses
	// discovery), before answering it.
	ExitOnInitialize *int `json:"exitOnInitialize,omitempty"`
	// PIDFile, when set, receives the server's own pid.
	PIDFile string `json:"pidFile,omitempty"`
	// EventLog, when set, gets "NAME start" appended when the process
	// starts and "NAME serving" when, after StartDelay, it begins to
	// serve; several servers may share one file, to show start order.
	EventLog string `json:"eventLog,omitempty"`
	// CallLog, when set, gets one JSON line per thing the server saw: each
	// tools/call, a cancelled call, a (un)subscription, a task cancel, a
	// notifications/cancelled, a request MethodDelay holds.
	CallLog string `json:"callLog,omitempty"`
	// PageSize makes list results come in pages of this size.
	PageSize int `json:"pageSize,omitempty"`
	// Tasks declares the tasks capability and runs tools with a
	// TaskSupport as tasks (MCP 2025-11-25).
	Tasks bool `json:"tasks,omitempty"`
	// Subscribe declares resource subscriptions.
	Subscribe bool `json:"subscribe,omitempty"`
	// Completions offers completion: argument name → values; the values
	// that start with the typed prefix are returned.
	Completions map[string][]string `json:"completions,omitempty"`

	Tools     []Tool     `json:"tools,omitempty"`
	Prompts   []Prompt   `json:"prompts,omitempty"`
	Resources []Resource `json:"resources,omitempty"`
	Templates []Template `json:"templates,omitempty"`
}

// A Prompt is one prompt. Getting it returns Text with each {{arg}}
// replaced by the argument's value, as one user message.
type Prompt struct {
	Name        string                `json:"name"`
	Description string                `json:"description,omitempty"`
	Arguments   []*mcp.PromptArgument `json:"arguments,omitempty"`
	Text        string                `json:"text,omitempty"`
	// Elicit, when set, is asked first (elicitation/create); the answer
	// is the prompt's text.
	Elicit *Elicit `json:"elicit,omitempty"`
	Sleep  string  `json:"sleep,omitempty"` // sleep (honouring cancellation), then answer
}

// A Resource is one resource with fixed text or blob (base64) content.
type Resource struct {
	URI      string `json:"uri"`
	Name     string `json:"name,omitempty"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"`
	// SubscribeWaitFor names a file: a subscription to the resource is
	// answered once it exists (a server slow to answer).
	SubscribeWaitFor string `json:"subscribeWaitFor,omitempty"`
	// UnsubscribeWaitFor: the same for an unsubscribe.
	UnsubscribeWaitFor string `json:"unsubscribeWaitFor,omitempty"`
}

// waitFor waits, until ctx ends, for the file that file names for the
// resource uri of resources, if it names one.
func waitFor(ctx context.Context, resources []Resource, uri string, file func(Resource) string) error {
	for _, r := range resources {
		if r.URI != uri || file(r) == "" {
			continue
		}
		for {
			if _, err := os.Stat(file(r)); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return nil
}

// A Template is one resource template; reading a URI that matches it
// returns "TEXT <uri>".
type Template struct {
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name,omitempty"`
	Text        string `json:"text,omitempty"`
}

// Main runs the fake server with the spec file named in args[0]; further
// arguments are ignored (a tool with Env reports them). It returns the
// process exit code.
func Main(args []string) int {
	httpAddr, oauth := "", false
	if len(args) >= 2 && args[0] == "-http" {
		// -http URLFILE: serve streamable HTTP on a free port of
		// 127.0.0.1 instead of stdio, and write the server's URL to
		// URLFILE once it listens. -oauth after it puts the server behind
		// the test authorization server (see NewAuthServer).
		httpAddr, args = args[1], args[2:]
		if len(args) > 0 && args[0] == "-oauth" {
			oauth, args = true, args[1:]
		}
	}
	if len(args) < 1 {
		fmt.Fprintln(os.Stderr, "usage: mcp-fake [-http URLFILE] SPEC.json [ARG]...")
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
	if httpAddr != "" {
		return serveHTTP(spec, httpAddr, oauth)
	}
	return run(&spec)
}

func serveHTTP(spec Spec, urlFile string, oauth bool) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcp-fake:", err)
		return 1
	}
	srv := NewServer(spec)
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	if oauth {
		as := NewAuthServer(h, time.Hour)
		as.URL = "http://" + ln.Addr().String()
		h = as
	}
	url := "http://" + ln.Addr().String() + "/mcp"
	if err := os.WriteFile(urlFile+".tmp", []byte(url), 0o644); err != nil || os.Rename(urlFile+".tmp", urlFile) != nil {
		fmt.Fprintln(os.Stderr, "mcp-fake: cannot write", urlFile)
		return 1
	}
	fmt.Fprintln(os.Stderr, "mcp-fake: serving streamable HTTP at", url)
	return map[bool]int{true: 0, false: 1}[http.Serve(ln, h) == nil]
}

func run(spec *Spec) int {
	if spec.IgnoreSIGTERM {
		signal.Ignore(syscall.SIGTERM)
	} else if spec.TermLog != "" {
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		go func() {
			<-term
			if fl, err := os.OpenFile(spec.TermLog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				fl.Write([]byte("SIGTERM\n"))
				fl.Close()
			}
			signal.Reset(syscall.SIGTERM)
			syscall.Kill(os.Getpid(), syscall.SIGTERM)
		}()
	}
	if spec.PIDFile != "" {
		os.WriteFile(spec.PIDFile, []byte(strconv.Itoa(os.Getpid())), 0o644)
	}
	logEvent(spec, "start")
	for _, l := range spec.Stderr {
		fmt.Fprintln(os.Stderr, l)
	}
	if len(spec.StderrEnv) > 0 {
		printEnv(spec.StderrEnv)
		fmt.Fprintln(os.Stderr, "args:", strings.Join(os.Args[1:], " "))
	}
	if spec.Exit != nil {
		return *spec.Exit
	}
	if spec.KilledUnless != "" {
		if _, err := os.Stat(spec.KilledUnless); err != nil {
			os.WriteFile(spec.KilledUnless, nil, 0o644)
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	if spec.ChildPIDFile != "" {
		child := exec.Command("sleep", "3600")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "mcp-fake: child:", err)
			return 1
		}
		os.WriteFile(spec.ChildPIDFile, []byte(strconv.Itoa(child.Process.Pid)), 0o644)
	}
	if spec.DescendantsPIDFile != "" {
		// The ignored SIGTERM is inherited by the grandchild; sleep never
		// reads stdin, so EOF on it means nothing to either.
		script := `trap '' TERM; sleep 3600 & echo $$ > "$1.tmp"; echo $! >> "$1.tmp"; mv "$1.tmp" "$1"; wait`
		child := exec.Command("sh", "-c", script, "sh", spec.DescendantsPIDFile)
		child.Stdout, child.Stderr = os.Stdout, os.Stderr
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "mcp-fake: descendants:", err)
			return 1
		}
	}
	if spec.StartDelay != "" {
		d, _ := time.ParseDuration(spec.StartDelay)
		time.Sleep(d)
	}
	for _, l := range spec.Stdout {
		fmt.Fprintln(stdout, l)
	}
	if d, err := time.ParseDuration(spec.StderrEvery); err == nil && d > 0 {
		go func() {
			for i := 1; ; i++ {
				time.Sleep(d)
				fmt.Fprintf(os.Stderr, "tick %d\n", i)
			}
		}()
	}
	if slices.ContainsFunc(spec.Tools, func(t Tool) bool { return t.CloseStdin }) {
		// Read through the poller, so that closing stdin ends the read
		// under way and lets go of the pipe at once; a blocking read would
		// hold it until the next line came.
		syscall.SetNonblock(0, true)
		// The old *os.File of fd 0 is kept: collected, its cleanup would
		// close fd 0 from under the new one.
		blockingStdin = os.Stdin
		os.Stdin = os.NewFile(0, "/dev/stdin")
	}
	logEvent(spec, "serving")
	f := &fake{spec: spec, raw: map[jsonrpc.ID]Tool{}, stopReading: make(chan struct{}), tasks: map[string]*fakeTask{}}
	f.srv = f.newServer()
	err := f.srv.Run(context.Background(), &transport{f: f})
	if spec.SaveOnEOF != nil {
		saveOnEOF(spec.SaveOnEOF)
	}
	if spec.IgnoreStdinEOF {
		select {}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcp-fake:", err)
	}
	return 0
}

// blockingStdin holds os.Stdin as it was before a closeStdin spec made fd
// 0 pollable (see Run).
var blockingStdin *os.File

// A Save is work done when stdin closes: Work of computing, then File
// written with "saved".
type Save struct {
	Work string `json:"work"`
	File string `json:"file"`
}

func saveOnEOF(s *Save) {
	d, _ := time.ParseDuration(s.Work)
	for start := time.Now(); time.Since(start) < d; {
	}
	os.WriteFile(s.File, []byte("saved\n"), 0o644)
}

type fake struct {
	spec        *Spec
	srv         *mcp.Server
	mu          sync.Mutex
	raw         map[jsonrpc.ID]Tool // calls whose response is replaced on the way out
	stopReading chan struct{}       // closed to stop reading stdin
	pausedUntil atomic.Int64        // Unix ns: no read of stdin before it
	stdinClosed atomic.Bool         // closed by a closeStdin tool
	initID      jsonrpc.ID          // the initialize request, whose result gets Spec.Tasks
	tasks       map[string]*fakeTask
	taskSeq     int
	held        [][]byte // memory a tool allocated
	calls       atomic.Int64
	urlAsked    atomic.Int64
	answered    map[string]int // Answers given, by method (under mu)
}

// stdout is the one writer of the server's stdout: the SDK's transport and
// the raw lines tools print both go through it, so a raw line never lands
// inside a message (the SDK writes each message with one Write).
var stdout = &lockedWriter{w: os.Stdout}

type lockedWriter struct {
	mu sync.Mutex
	w  *os.File
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close is a no-op: stdout stays open for raw lines after the transport
// closes.
func (l *lockedWriter) Close() error { return nil }

func (f *fake) newServer() *mcp.Server {
	spec := f.spec
	name, version := spec.Name, spec.Version
	if name == "" {
		name = "fake"
	}
	if version == "" {
		version = "1.0.0"
	}
	opts := &mcp.ServerOptions{
		PageSize:     spec.PageSize,
		Instructions: spec.Instructions,
		// Declare every list, so tools can add to an empty one later.
		HasTools: true, HasPrompts: true, HasResources: true,
	}
	if spec.ReadTTLMs > 0 {
		opts.SetCacheable = func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
			if _, ok := req.(*mcp.ReadResourceRequest); ok {
				c.TTLMs = spec.ReadTTLMs
			}
		}
	}
	if spec.Subscribe {
		opts.SubscribeHandler = func(ctx context.Context, req *mcp.SubscribeRequest) error {
			f.logCall(map[string]any{"subscribe": req.Params.URI})
			return waitFor(ctx, spec.Resources, req.Params.URI, func(r Resource) string { return r.SubscribeWaitFor })
		}
		opts.UnsubscribeHandler = func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
			f.logCall(map[string]any{"unsubscribe": req.Params.URI})
			return waitFor(ctx, spec.Resources, req.Params.URI, func(r Resource) string { return r.UnsubscribeWaitFor })
		}
	}
	if spec.Completions != nil {
		opts.CompletionHandler = func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			var values []string
			for _, v := range spec.Completions[req.Params.Argument.Name] {
				if strings.HasPrefix(v, req.Params.Argument.Value) {
					values = append(values, v)
				}
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: len(values)}}, nil
		}
	}
	opts.RootsListChangedHandler = func(context.Context, *mcp.RootsListChangedRequest) {
		f.logCall(map[string]any{"rootsChanged": true})
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: version}, opts)
	if len(spec.MethodDelay) > 0 {
		srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if d, err := time.ParseDuration(spec.MethodDelay[method]); err == nil {
					f.logCall(map[string]any{"delayed": method})
					select {
					case <-ctx.Done():
						return nil, ctx.Err()
					case <-time.After(d):
					}
				}
				return next(ctx, method, req)
			}
		})
	}
	for _, t := range spec.Tools {
		f.addTool(srv, t)
	}
	for _, p := range spec.Prompts {
		addPrompt(srv, p)
	}
	for _, r := range spec.Resources {
		srv.AddResource(&mcp.Resource{URI: r.URI, Name: r.Name, MIMEType: r.MIMEType}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			c := &mcp.ResourceContents{URI: r.URI, MIMEType: r.MIMEType, Text: r.Text}
			if r.Blob != "" {
				c.Text, c.Blob = "", decodeBase64(r.Blob)
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
		})
	}
	for _, t := range spec.Templates {
		srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: t.URITemplate, Name: t.Name}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: t.Text + " " + req.Params.URI}}}, nil
		})
	}
	return srv
}

func (f *fake) addTool(srv *mcp.Server, t Tool) {
	schema := t.InputSchema
	if len(schema) == 0 || string(schema) == "null" {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	srv.AddTool(&mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: schema}, f.handler(t))
}

func addPrompt(srv *mcp.Server, p Prompt) {
	srv.AddPrompt(&mcp.Prompt{Name: p.Name, Description: p.Description, Arguments: p.Arguments}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if d, _ := time.ParseDuration(p.Sleep); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		text := p.Text
		if p.Elicit != nil {
			var schema any
			if p.Elicit.RequestedSchema != nil {
				schema = p.Elicit.RequestedSchema
			}
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: p.Elicit.Message, RequestedSchema: schema})
			if err != nil {
				return nil, err
			}
			out, _ := json.Marshal(res)
			text = string(out)
		}
		for k, v := range req.Params.Arguments {
			text = strings.ReplaceAll(text, "{{"+k+"}}", v)
		}
		return &mcp.GetPromptResult{Description: p.Description, Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}, nil
	})
}

func (f *fake) tool(name string) (Tool, bool) {
	for _, t := range f.spec.Tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// logCall appends one JSON line to the spec's CallLog.
// logEvent appends "NAME event" to the spec's EventLog; one write to an
// O_APPEND file, so servers sharing the file do not interleave.
func logEvent(spec *Spec, event string) {
	if spec.EventLog == "" {
		return
	}
	name := spec.Name
	if name == "" {
		name = "fake"
	}
	if fl, err := os.OpenFile(spec.EventLog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		fl.Write([]byte(name + " " + event + "\n"))
		fl.Close()
	}
}

func (f *fake) logCall(v any) {
	if f.spec.CallLog == "" {
		return
	}
	line, _ := json.Marshal(v)
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl, err := os.OpenFile(f.spec.CallLog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		fl.Write(append(line, '\n'))
		fl.Close()
	}
}

// printEnv prints NAME=value on stderr for each name.
func printEnv(names []string) {
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "%s=%s\n", n, os.Getenv(n))
	}
}

// NewServer returns the fake as an SDK server, for tests that serve it over
// HTTP or WebSocket in-process. Faults that act on the process (stdout
// lines, crashes, exits) act on the test's own process: use them only on
// stdio.
func NewServer(spec Spec) *mcp.Server {
	f := &fake{spec: &spec, raw: map[jsonrpc.ID]Tool{}, stopReading: make(chan struct{}), tasks: map[string]*fakeTask{}}
	f.srv = f.newServer()
	return f.srv
}
