package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/internal/fakemcp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The test binary doubles as the fake MCP server.
func TestMain(m *testing.M) {
	if os.Getenv("MCPCTL_TEST_FAKE") == "1" {
		os.Exit(fakemcp.Main(os.Args[1:]))
	}
	if sock := os.Getenv(dialSocketEnv); sock != "" {
		os.Exit(dialAndReport(sock))
	}
	code := m.Run()
	fakemcp.RemovePlainBinary()
	os.Exit(code)
}

// fakeServer writes spec to a file and returns a config entry that runs the
// test binary as the fake server.
func fakeServer(t *testing.T, name string, spec fakemcp.Spec) *config.Server {
	t.Helper()
	dir := t.TempDir()
	data, _ := json.Marshal(spec)
	p := filepath.Join(dir, name+".json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	return &config.Server{
		Name: name, Type: "stdio", Command: exe, Args: []string{p},
		Env: map[string]string{"MCPCTL_TEST_FAKE": "1"}, Cwd: dir,
		StartupTimeout: 10 * time.Second, CacheTTL: config.DefaultCacheTTL, Source: "test:1:1",
	}
}

func newEngine(t *testing.T, servers ...*config.Server) *Engine {
	t.Helper()
	e := New(&config.Config{File: "mcp.json", Servers: servers}, &Options{ShutdownTimeout: 2 * time.Second})
	t.Cleanup(func() { e.Close() })
	return e
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

var schemaPinN = json.RawMessage(`{"type":"object","properties":{
  "pin":{"type":"string"},"n":{"type":"integer"},"flag":{"type":"boolean"},"obj":{"type":"object"},
  "mode":{"enum":["a","b"]},"any":{}},"required":["pin"],"additionalProperties":false}`)

// alive reports whether pid is a live, non-zombie process.
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(data), ')')
	f := strings.Fields(string(data[i+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			pid, _ := strconv.Atoi(string(b))
			return pid
		}
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

func TestToolsAllPagesLossless(t *testing.T) {
	var tools []fakemcp.Tool
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		tools = append(tools, fakemcp.Tool{Name: n})
	}
	tools[2].Extra = map[string]json.RawMessage{"execution": json.RawMessage(`{"taskSupport":"required"}`)}
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{PageSize: 2, Tools: tools}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	got, err := e.Tools("")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range got {
		names = append(names, tl.Name())
	}
	if strings.Join(names, ",") != "srv.a,srv.b,srv.c,srv.d,srv.e" {
		t.Fatalf("tools = %v", names)
	}
	out, _ := json.Marshal(got[2])
	if !strings.Contains(string(out), `"execution":{"taskSupport":"required"}`) || !strings.HasPrefix(string(out), `{"name":"srv.c","server":"srv","tool":"c"`) {
		t.Errorf("tool JSON lost fields: %s", out)
	}
	var back Tool
	if err := json.Unmarshal(out, &back); err != nil || back.Name() != "srv.c" || !strings.Contains(string(back.Raw()), `"name":"c"`) {
		t.Errorf("round trip: %v %s", err, back.Raw())
	}
}

func TestCallTypesPairsBySchema(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo", InputSchema: schemaPinN}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	res, err := e.CallTool(ctx(t), &CallRequest{
		Name:      "srv.echo",
		Arguments: json.RawMessage(`{"n": 1, "any": 12345678901234567890}`),
		Pairs:     []string{"pin=000123", "n=42", "flag=true", `obj:={"k":[1,2]}`, "mode=b", "any=007"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Content []struct{ Text string } `json:"content"`
	}
	json.Unmarshal(res.Result, &r)
	var args map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.Content[0].Text), &args); err != nil {
		t.Fatalf("echo: %s", res.Result)
	}
	want := map[string]string{"pin": `"000123"`, "n": `42`, "flag": `true`, "obj": `{"k":[1,2]}`, "mode": `"b"`, "any": `"007"`}
	for k, v := range want {
		if string(args[k]) != v {
			t.Errorf("%s = %s, want %s", k, args[k], v)
		}
	}
}

func TestCallValidatesBeforeSending(t *testing.T) {
	dir := t.TempDir()
	callLog := filepath.Join(dir, "calls.log")
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{CallLog: callLog, Tools: []fakemcp.Tool{{Name: "echo", InputSchema: schemaPinN}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pairs []string
		want  string
	}{
		{[]string{"pin=1", "n=x"}, "n: expected integer, got string"},
		{[]string{"n=1"}, "pin: required, but missing"},
		{[]string{"pin=1", "mode=c"}, `mode: expected one of "a", "b"`},
		{[]string{"pin=1", "nn=1"}, "nn: unknown field (did you mean n?)"},
		{[]string{"pin"}, `argument "pin" is not key=value`},
		{[]string{"pin:=x"}, "pin: the value after := is not valid JSON"},
	} {
		_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo", Pairs: tc.pairs})
		if KindOf(err) != KindUsage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want usage error containing %q", tc.pairs, err, tc.want)
		}
	}
	if _, err := os.Stat(callLog); err == nil {
		t.Errorf("the server was called with invalid arguments")
	}
}

// Tool arguments carry tokens: a violation names the rule, never the value.
func TestViolationsHideValues(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{
	  "token":{"type":"string","pattern":"^ghp_[a-z]+$"},"pin":{"type":"integer","minimum":1000},
	  "kind":{"const":"bearer"},"mail":{"type":"string","format":"email"}}}`)
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "login", InputSchema: schema}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.login", Pairs: []string{"token=sk-LIVE-SECRET-123", "pin=42", "kind=basic-SECRET"}})
	msg := err.Error()
	for _, want := range []string{"token: does not match pattern ^ghp_[a-z]+$", "pin: must be >= 1000", `kind: expected "bearer"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	var ee *Error
	errors.As(err, &ee)
	all, _ := json.Marshal(ee)
	for _, secret := range []string{"SECRET", "42"} {
		if strings.Contains(string(all), secret) {
			t.Errorf("error repeats an argument value (%s): %s", secret, all)
		}
	}
}

func TestUnknownNames(t *testing.T) {
	e := newEngine(t, fakeServer(t, "everything", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}, {Name: "add"}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "everythin.echo"})
	var ee *Error
	if !errors.As(err, &ee) || ee.Kind != KindUsage || len(ee.Candidates) == 0 || ee.Candidates[0] != "everything" {
		t.Errorf("unknown server: %#v", err)
	}
	_, err = e.CallTool(ctx(t), &CallRequest{Name: "everything.ecko"})
	if !errors.As(err, &ee) || ee.Kind != KindUsage || len(ee.Candidates) == 0 || ee.Candidates[0] != "everything.echo" {
		t.Errorf("unknown tool: %#v", err)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "echo"}); KindOf(err) != KindUsage {
		t.Errorf("name without server: %v", err)
	}
	// An empty name is shown as one, not as nothing after "server ".
	for _, err := range []error{e.Start(ctx(t), ""), e.Stop(""), e.Restart(ctx(t), "")} {
		if KindOf(err) != KindUsage || err.Error() != `unknown server ""` {
			t.Errorf("empty server name: %v", err)
		}
	}
}

// A tool or prompt named without its server ("echo") is told which
// servers offer one of that name, as a client that left the server out
// means one of them; a name none offers gets the plain error.
func TestNameWithoutServer(t *testing.T) {
	spec := fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}, Prompts: []fakemcp.Prompt{{Name: "p", Text: "hi"}}}
	e := newEngine(t, fakeServer(t, "a", spec), fakeServer(t, "b", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "echo"})
	if ee := asError(err); ee == nil || ee.Kind != KindUsage || !slices.Equal(ee.Candidates, []string{"a.echo", "b.echo"}) ||
		!slices.Equal(ee.Hint, []string{"did you mean one of: a.echo, b.echo? a tool is named server.tool"}) {
		t.Errorf("echo: %+v %q %q", ee, ee.Candidates, ee.Hint)
	}
	_, err = e.GetPrompt(ctx(t), &PromptRequest{Name: "p"})
	if ee := asError(err); ee == nil || !slices.Equal(ee.Candidates, []string{"a.p"}) || !slices.Equal(ee.Hint, []string{"did you mean a.p? a prompt is named server.prompt"}) {
		t.Errorf("p: %+v", ee)
	}
	_, err = e.CallTool(ctx(t), &CallRequest{Name: "nope"})
	if ee := asError(err); ee == nil || ee.Message != `"nope" is not a server.tool name` || len(ee.Candidates) != 0 ||
		!slices.Equal(ee.Hint, []string{"name a tool as server.tool, e.g. a.echo; list them with: mcpctl tools"}) {
		t.Errorf("nope: %+v %q", ee, ee.Hint)
	}
}

// A listing's filter with a dot and nothing before or after it is a usage
// error naming the kind of item; it used to panic (an empty server name
// read as every server).
func TestListFiltersWithoutServer(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	for _, filter := range []string{".", ".x", "..", "srv."} {
		if _, err := e.Tools(filter); KindOf(err) != KindUsage || !strings.Contains(err.Error(), "is not a server.tool name") {
			t.Errorf("Tools(%q): %v", filter, err)
		}
		if _, err := e.Prompts(filter); KindOf(err) != KindUsage || !strings.Contains(err.Error(), "is not a server.prompt name") {
			t.Errorf("Prompts(%q): %v", filter, err)
		}
	}
	if _, err := e.GetPrompt(ctx(t), &PromptRequest{Name: ".p"}); err == nil || err.Error() != `".p" is not a server.prompt name` {
		t.Errorf("GetPrompt: %v", err)
	}
	if tools, err := e.Tools("srv.echo"); err != nil || len(tools) != 1 {
		t.Errorf("Tools(srv.echo) = %v, %v", tools, err)
	}
}

func TestResultsKeptAsSent(t *testing.T) {
	raw := `{"content":[{"type":"video","uri":"x.mp4"},{"type":"text","text":"hi","annotations":{"audience":["user"]}}],"structuredContent":{"n":12345678901234567890},"_meta":{"k":"v"},"extraField":true}`
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{
		{Name: "raw", Result: json.RawMessage(raw)},
		{Name: "fail", Error: "it broke"},
		{Name: "rpc", RPCError: &jsonrpcError{Code: -32001, Message: "boom"}},
	}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.raw"})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Result) != raw || res.IsError {
		t.Errorf("result changed:\n got %s\nwant %s", res.Result, raw)
	}
	res, err = e.CallTool(ctx(t), &CallRequest{Name: "srv.fail"})
	if err != nil || !res.IsError || !strings.Contains(string(res.Result), "it broke") {
		t.Errorf("isError result: %v %+v", err, res)
	}
	_, err = e.CallTool(ctx(t), &CallRequest{Name: "srv.rpc"})
	if KindOf(err) != KindProtocol || !strings.Contains(err.Error(), "-32001: boom") {
		t.Errorf("rpc error: %v", err)
	}
}

func TestCallTimeoutKeepsServerUsable(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "slow", Sleep: "20s"}, {Name: "echo"}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.slow", TimeoutMs: 200})
	if KindOf(err) != KindTimeout || time.Since(t0) > 5*time.Second {
		t.Fatalf("err = %v after %v", err, time.Since(t0))
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo"}); err != nil {
		t.Errorf("server unusable after a timeout: %v", err)
	}
}

func TestCrashMidCall(t *testing.T) {
	seven := 7
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "crash", Crash: &seven}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.crash"})
	var ee *Error
	if !errors.As(err, &ee) || ee.Kind != KindUnavailable || !strings.Contains(ee.Message, "exited with code 7") {
		t.Fatalf("err = %#v", err)
	}
	if !strings.Contains(strings.Join(ee.Stderr, "\n"), "crashing in crash") {
		t.Errorf("stderr tail missing: %q", ee.Stderr)
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.Status()[0].State != StateUnavailable && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := e.Status()[0]; st.State != StateUnavailable || !strings.Contains(st.LastError, "exited with code 7") {
		t.Errorf("status = %+v", st)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.crash"}); KindOf(err) != KindUnavailable {
		t.Errorf("call after crash: %v", err)
	}
}

func TestStartAllOrNothing(t *testing.T) {
	three := 3
	dir := t.TempDir()
	good := fakeServer(t, "good", fakemcp.Spec{PIDFile: filepath.Join(dir, "good.pid"), StartDelay: "200ms", Tools: []fakemcp.Tool{{Name: "echo"}}})
	bad := fakeServer(t, "bad", fakemcp.Spec{Stderr: []string{"fatal: no API key"}, Exit: &three})
	e := newEngine(t, good, bad)
	err := e.Start(ctx(t))
	var ee *Error
	if !errors.As(err, &ee) || ee.Kind != KindUnavailable || ee.Server != "bad" {
		t.Fatalf("err = %#v", err)
	}
	for _, want := range []string{"server bad exited with code 3 during startup", "fatal: no API key"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%s", want, err)
		}
	}
	pid := readPID(t, filepath.Join(dir, "good.pid"))
	if alive(pid) {
		t.Errorf("server good (pid %d) still runs after a failed start", pid)
	}
	for _, st := range e.Status() {
		if st.State == StateReady || st.PID != 0 {
			t.Errorf("after a failed start: %+v", st)
		}
		// The start cut short says why, not "interrupted" as by the user.
		if want := "server good: start called off, as server bad failed to start"; st.Name == "good" && st.LastError != want {
			t.Errorf("good's last error: %q, want %q", st.LastError, want)
		}
	}
}

func TestStartChecksCommandsFirst(t *testing.T) {
	dir := t.TempDir()
	good := fakeServer(t, "good", fakemcp.Spec{PIDFile: filepath.Join(dir, "good.pid")})
	missing := &config.Server{Name: "gone", Command: "mcpctl-no-such-command", Cwd: dir, StartupTimeout: time.Second, Source: "mcp.json:9:5"}
	e := newEngine(t, good, missing)
	err := e.Start(ctx(t))
	var ee *Error
	if !errors.As(err, &ee) || ee.Kind != KindConfig || ee.Server != "gone" ||
		ee.Message != "command not found: mcpctl-no-such-command (server gone, mcp.json:9:5)" {
		t.Fatalf("err = %#v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "good.pid")); err == nil {
		t.Errorf("server good was started although another server's command is missing")
	}
}

func TestStartupTimeout(t *testing.T) {
	s := fakeServer(t, "slow", fakemcp.Spec{StartDelay: "20s", Stderr: []string{"warming up"}})
	s.StartupTimeout = 300 * time.Millisecond
	e := newEngine(t, s)
	t0 := time.Now()
	err := e.Start(ctx(t))
	if KindOf(err) != KindUnavailable || !strings.Contains(err.Error(), "did not finish starting within 300ms") || !strings.Contains(err.Error(), "warming up") {
		t.Fatalf("err = %v", err)
	}
	if time.Since(t0) > 5*time.Second {
		t.Errorf("took %v", time.Since(t0))
	}
}

// A start that timed out shows what the server wrote to stderr before,
// not what it wrote after mcpctl closed its pipes: Node's EPIPE stack
// trace read as a crash of the server's own.
func TestStartupTimeoutStderrBeforeGivingUp(t *testing.T) {
	dir := t.TempDir()
	s := &config.Server{
		Name: "slow", Type: "stdio", Command: "/bin/sh", Cwd: dir, Source: "test:1:1",
		Args:           []string{"-c", `echo warming up >&2; cat > /dev/null; echo "Error: write EPIPE" >&2; sleep 5`},
		StartupTimeout: 300 * time.Millisecond,
	}
	err := newEngine(t, s).Start(ctx(t))
	var ee *Error
	if !errors.As(err, &ee) || !StartTimedOut(err) {
		t.Fatalf("err = %v", err)
	}
	if !slices.Equal(ee.Stderr, []string{"warming up"}) {
		t.Errorf("stderr shown = %q, want only what came before the timeout", ee.Stderr)
	}
}

// A server that writes other things than MCP to stdout until its startup
// timeout passes times out, once: it is not reported (and retried) as
// killed by the SIGPIPE that mcpctl's closing its stdout then gives it.
func TestStartupTimeoutNoisyStdout(t *testing.T) {
	dir := t.TempDir()
	starts := filepath.Join(dir, "starts")
	s := &config.Server{
		Name: "noisy", Type: "stdio", Command: "/bin/sh", Cwd: dir, Source: "test:1:1",
		Args:           []string{"-c", `echo start >> "$0"; while :; do echo "this is not json"; done`, starts},
		StartupTimeout: 500 * time.Millisecond,
	}
	e := newEngine(t, s)
	err := e.Start(ctx(t))
	var ee *Error
	if !errors.As(err, &ee) || ee.Kind != KindUnavailable || !strings.Contains(err.Error(), "did not finish starting within 500ms; it wrote ") ||
		!strings.Contains(err.Error(), " lines to stdout that were not JSON-RPC") {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(strings.Join(ee.Hint, "\n"), "raise startupTimeout") {
		t.Errorf("hints = %q", ee.Hint)
	}
	data, _ := os.ReadFile(starts)
	if n := strings.Count(string(data), "start"); n != 1 {
		t.Errorf("started %d times, want 1", n)
	}
}

// A call that times out while its server wrote lines to stdout that are
// not JSON-RPC says so, with those lines (not the banner before it): the
// answer may be among them, and then no --timeout is long enough.
func TestCallTimeoutStrayStdout(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{
		Stdout: []string{"banner"},
		Tools: []fakemcp.Tool{
			{Name: "print", Raw: []string{"Result: 42", "done"}, Hang: true},
			{Name: "printquick", Raw: []string{"another's line"}},
			{Name: "quiet", Hang: true},
		}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.print", TimeoutMs: 300})
	var ee *Error
	if !errors.As(err, &ee) || ee.Kind != KindTimeout || !strings.Contains(ee.Message, "did not answer within 300ms (the server was told to cancel); meanwhile server srv wrote 2 lines to stdout that were not JSON-RPC") {
		t.Fatalf("err = %v", err)
	}
	if !slices.Equal(ee.Stdout, []string{"Result: 42", "done"}) {
		t.Errorf("stdout = %q, want the two lines of the call", ee.Stdout)
	}
	if len(ee.Hint) == 0 || !strings.Contains(ee.Hint[0], "writes only JSON-RPC messages to stdout") {
		t.Errorf("hints = %q", ee.Hint)
	}
	_, err = e.CallTool(ctx(t), &CallRequest{Name: "srv.quiet", TimeoutMs: 300})
	if !errors.As(err, &ee) || ee.Kind != KindTimeout || strings.Contains(err.Error(), "JSON-RPC") || ee.Stdout != nil {
		t.Errorf("a quiet call's timeout: %v (stdout %q)", err, ee.Stdout)
	}
	// With another request in flight (another client's, through serve),
	// the lines may be its: counted, not shown.
	other := make(chan error, 1)
	go func() {
		_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.quiet", TimeoutMs: 2000})
		other <- err
	}()
	waitRequestInFlight(e, "srv")
	_, err = e.CallTool(ctx(t), &CallRequest{Name: "srv.print", TimeoutMs: 300})
	if !errors.As(err, &ee) || !strings.Contains(ee.Message, "meanwhile server srv wrote 2 lines to stdout that were not JSON-RPC") || ee.Stdout != nil {
		t.Errorf("beside another request: %v (stdout %q)", err, ee.Stdout)
	}
	<-other
	// One that began after it and ended before it timed out counts too:
	// its lines are not this one's to see.
	quiet := make(chan error, 1)
	go func() {
		_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.quiet", TimeoutMs: 1000})
		quiet <- err
	}()
	waitRequestInFlight(e, "srv")
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.printquick"}); err != nil {
		t.Fatal(err)
	}
	err = <-quiet
	if !errors.As(err, &ee) || !strings.Contains(ee.Message, "meanwhile server srv wrote 1 line") || ee.Stdout != nil {
		t.Errorf("after another request that printed: %v (stdout %q)", err, ee.Stdout)
	}
}

func TestStdoutBannerSkipped(t *testing.T) {
	e := newEngine(t, fakeServer(t, "noisy", fakemcp.Spec{Stdout: []string{"Starting server...", "{not json"}, Tools: []fakemcp.Tool{{Name: "echo"}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "noisy.echo"}); err != nil {
		t.Fatal(err)
	}
}

// A Server built in Go as a struct literal, with no cwd and no
// startupTimeout, starts in mcpctl's working directory within the default
// time (it failed: "working directory  does not exist", then "did not
// finish starting within 0s").
func TestServerBuiltInGo(t *testing.T) {
	srv := fakeServer(t, "lit", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	lit := &config.Server{Name: "lit", Command: srv.Command, Args: srv.Args, Env: srv.Env}
	e := newEngine(t, lit)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "lit.echo"}); err != nil {
		t.Fatal(err)
	}
}

func TestCloseStopsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	stubborn := fakeServer(t, "stubborn", fakemcp.Spec{
		IgnoreStdinEOF: true, IgnoreSIGTERM: true,
		PIDFile: filepath.Join(dir, "s.pid"), ChildPIDFile: filepath.Join(dir, "s.child"),
	})
	nodeLike := fakeServer(t, "nodelike", fakemcp.Spec{
		IgnoreStdinEOF: true, PIDFile: filepath.Join(dir, "n.pid"), ChildPIDFile: filepath.Join(dir, "n.child"),
	})
	e := New(&config.Config{Servers: []*config.Server{stubborn, nodeLike}}, &Options{ShutdownTimeout: 300 * time.Millisecond})
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range []string{"s.pid", "s.child", "n.pid", "n.child"} {
		pids = append(pids, readPID(t, filepath.Join(dir, f)))
	}
	e.Close()
	for i, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d (%d) survived Close", i, pid)
		}
	}
	for _, st := range e.Status() {
		if st.State != StateStopped {
			t.Errorf("%s is %s after Close", st.Name, st.State)
		}
	}
}

// A server that sits idle after its stdin closes (as Node servers do) gets
// SIGTERM when the grace ends, not its shutdownTimeout: only one at work
// gets longer.
func TestIdleServerStopsWhenGraceEnds(t *testing.T) {
	dir := t.TempDir()
	e := New(&config.Config{Servers: []*config.Server{fakeServer(t, "idle", fakemcp.Spec{
		IgnoreStdinEOF: true, PIDFile: filepath.Join(dir, "pid"),
	})}}, &Options{ShutdownTimeout: 30 * time.Second})
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	pid := readPID(t, filepath.Join(dir, "pid"))
	t0 := time.Now()
	e.Close()
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("stopping an idle server took %v: it waited for its shutdownTimeout (30s)", d)
	}
	if alive(pid) {
		t.Error("the idle server survived Close")
	}
}

// A server stopped by a signal (kill -STOP, a debugger, ^Z in the shell
// that ran it) gets its SIGTERM when it is stopped: SIGCONT goes with it,
// rather than leaving it to wait out its shutdownTimeout for SIGKILL.
func TestStoppedServerGetsItsSIGTERM(t *testing.T) {
	dir := t.TempDir()
	termLog := filepath.Join(dir, "term.log")
	e := newEngine(t, fakeServer(t, "frozen", fakemcp.Spec{
		IgnoreStdinEOF: true, PIDFile: filepath.Join(dir, "pid"), TermLog: termLog,
	}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	pid := readPID(t, filepath.Join(dir, "pid"))
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := e.Stop("frozen"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(termLog); string(got) != "SIGTERM\n" {
		t.Errorf("the stopped server's term log holds %q, want SIGTERM: it was killed without its SIGTERM", got)
	}
	if alive(pid) {
		t.Error("the stopped server survived Stop")
	}
}

type jsonrpcError = jsonrpc.Error

// A caller that gives up while its message is being written to a server
// that reads slowly leaves the connection whole for the others: the rest of
// its message is written in the background, and a caller waiting to write
// meanwhile gets its answer (before, the first caller's give-up cut the
// write short and failed every later one: "write |1: i/o timeout").
func TestGiveUpMidWriteKeepsConnection(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{
		Tools: []fakemcp.Tool{{Name: "pause", PauseReading: "3s"}, {Name: "echo"}},
	}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.pause"}); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 1<<20) // far more than a pipe holds
	impatient := make(chan error, 1)
	var impatientTook time.Duration
	go func() {
		t0 := time.Now()
		_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo", Pairs: []string{"data=" + big}, TimeoutMs: 200})
		impatientTook = time.Since(t0)
		impatient <- err
	}()
	time.Sleep(50 * time.Millisecond) // for its write to be under way
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo", Pairs: []string{"n=1"}})
	if err != nil || !strings.Contains(string(res.Result), `\"n\":\"1\"`) {
		t.Fatalf("the patient caller: %v %v", res, err)
	}
	if err := <-impatient; KindOf(err) != KindTimeout {
		t.Errorf("the caller that gave up: %v, want a timeout", err)
	}
	// Let go at its timeout (200ms), not when the server read again (3s).
	if impatientTook > 2*time.Second {
		t.Errorf("the caller that gave up was held %v, until its write was done", impatientTook)
	}
	if st := e.Status()[0]; st.State != StateReady {
		t.Errorf("after one caller gave up mid-write: %s (%s)", st.State, st.LastError)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo"}); err != nil {
		t.Errorf("a call after: %v", err)
	}
}

// A server that stops reading stdin must not make a call outlive its
// timeout, nor make stopping hang: the caller is let go, and closing the
// server's stdin ends the write left under way.
func TestHungServerBlockedWrite(t *testing.T) {
	e := New(&config.Config{Servers: []*config.Server{fakeServer(t, "srv", fakemcp.Spec{
		IgnoreStdinEOF: true, IgnoreSIGTERM: true,
		Tools: []fakemcp.Tool{{Name: "hang", StopReading: true}, {Name: "echo"}},
	})}}, &Options{ShutdownTimeout: 500 * time.Millisecond})
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	go e.CallTool(ctx(t), &CallRequest{Name: "srv.hang", TimeoutMs: 30000})
	time.Sleep(100 * time.Millisecond)
	// The read the server had in progress takes this one, however it ends.
	e.CallTool(ctx(t), &CallRequest{Name: "srv.echo", TimeoutMs: 200})
	big := strings.Repeat("x", 1<<20) // far more than a pipe holds
	callDone := make(chan error, 1)
	go func() {
		_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo", Pairs: []string{"data=" + big}, TimeoutMs: 300})
		callDone <- err
	}()
	select {
	case err := <-callDone:
		if err == nil {
			t.Fatal("a call to a server that stopped reading succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a call with a 300ms timeout is stuck writing to a server that stopped reading")
	}
	done := make(chan struct{})
	go func() { e.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs on a server that stopped reading")
	}
}

// An input_required answer that stays one after the SDK's input rounds
// (here the elicitation is declined, and the fake asks again) is an error,
// not a result.
func TestInputRequiredIsAnError(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "ask", Result: json.RawMessage(
		`{"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}}}`)}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.ask"})
	if KindOf(err) != KindProtocol || !strings.Contains(err.Error(), "input_required") {
		t.Fatalf("res=%v err=%v", res, err)
	}
}

// A JSON line that is not JSON-RPC (a log line) is skipped like a banner.
func TestJSONLogLineOnStdout(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "log", Stdout: `{"level":"info","msg":"handled a call"}`}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.log"}); err != nil {
			t.Fatal(err)
		}
	}
}

// A connection that breaks while the process lives on makes the server
// unavailable, and its process is stopped.
func TestConnectionLostProcessAlive(t *testing.T) {
	dir := t.TempDir()
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{PIDFile: filepath.Join(dir, "pid"), IgnoreStdinEOF: true,
		Tools: []fakemcp.Tool{{Name: "drop", CloseStdout: true}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	pid := readPID(t, filepath.Join(dir, "pid"))
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.drop"})
	if KindOf(err) != KindUnavailable || !strings.HasPrefix(err.Error(), "server srv closed its stdout during the call to srv.drop") {
		t.Fatalf("err = %v", err)
	}
	// Unavailable at once, not once the 5 s given it to exit are over: a
	// request is refused, not sent to a server that cannot answer.
	st := waitState(t, e, "srv", StateUnavailable)
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.drop"}); KindOf(err) != KindUnavailable || !strings.Contains(err.Error(), "server srv closed its stdout") {
		t.Errorf("a call meanwhile: %v (status %+v)", err, st)
	}
	deadline := time.Now().Add(10 * time.Second)
	for (e.Status()[0].State != StateUnavailable || alive(pid)) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if st := e.Status()[0]; st.State != StateUnavailable || alive(pid) {
		t.Errorf("status %+v, process alive %v", st, alive(pid))
	}
}

// A start while a server that closed its stdout is wound down (a transient
// server's next request, a start by hand) waits for it: the old process is
// stopped, not left behind when the new one takes its place.
func TestStartWaitsForLostRunToEnd(t *testing.T) {
	dir := t.TempDir()
	srv := fakeServer(t, "srv", fakemcp.Spec{PIDFile: filepath.Join(dir, "pid"), IgnoreStdinEOF: true,
		Tools: []fakemcp.Tool{{Name: "drop", CloseStdout: true}, {Name: "echo"}}})
	srv.Activation = "transient"
	e := newEngine(t, srv)
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.drop"}); KindOf(err) != KindUnavailable {
		t.Fatalf("drop: %v", err)
	}
	old := readPID(t, filepath.Join(dir, "pid"))
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo"}); err != nil {
		t.Fatalf("the next call: %v", err)
	}
	if alive(old) {
		t.Errorf("the old process %d is left running", old)
	}
	e.Close()
	if alive(old) {
		t.Errorf("the old process %d outlived Close", old)
	}
}

// Close during Start makes Start fail; nothing is left ready or running.
func TestCloseDuringStart(t *testing.T) {
	dir := t.TempDir()
	e := New(&config.Config{Servers: []*config.Server{
		fakeServer(t, "slow", fakemcp.Spec{StartDelay: "5s", PIDFile: filepath.Join(dir, "pid")}),
		fakeServer(t, "slower", fakemcp.Spec{StartDelay: "6s"})}}, nil)
	errc := make(chan error)
	go func() { errc <- e.Start(context.Background()) }()
	pid := readPID(t, filepath.Join(dir, "pid"))
	e.Close()
	err := <-errc
	// Said as what happened, naming every server it cut short: not
	// "context canceled", nor one of them alone.
	if KindOf(err) != KindUnavailable || err.Error() != "the engine was closed during the start of slow, slower" || errors.Is(err, context.Canceled) {
		t.Errorf("Start = %v", err)
	}
	// Stopped, as down leaves every server, not unavailable.
	if st := e.Status()[0]; st.State != StateStopped || alive(pid) {
		t.Errorf("after Close during Start: %+v, alive %v", st, alive(pid))
	}
	if err := e.Start(context.Background()); err == nil {
		t.Errorf("Start after Close succeeded")
	}
}

// Timed-out calls must not leave entries behind in the connection.
func TestCaptureReleased(t *testing.T) {
	srv := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "slow", Sleep: "10s"}}})
	srv.FailureThreshold = 10 // five timeouts in a row must not stop it
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		e.CallTool(ctx(t), &CallRequest{Name: "srv.slow", TimeoutMs: 20})
	}
	s := e.servers["srv"]
	s.conn.mu.Lock()
	n := len(s.conn.pending)
	s.conn.mu.Unlock()
	if n != 0 {
		t.Errorf("%d requests still pending after their callers gave up", n)
	}
}

func TestToolParameters(t *testing.T) {
	tool, err := newTool("srv", json.RawMessage(`{"name":"t","inputSchema":{"type":"object","required":["pin"],"properties":{
	  "pin":{"type":"string","description":"the PIN"},"n":{"type":"integer"},"mode":{"enum":["a","b"]},
	  "maybe":{"type":["string","null"]},"any":{},"either":{"anyOf":[{"type":"number"},{"type":"string"}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range tool.Parameters() {
		got = append(got, fmt.Sprintf("%s:%s:%v", p.Name, p.Type, p.Required))
	}
	want := "pin:string:true any::false either:number|string:false maybe:string|null:false mode:string:false n:integer:false"
	if strings.Join(got, " ") != want {
		t.Errorf("parameters:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

// A server that answers initialize with a protocol version mcpctl does
// not speak is refused saying so, not as a server that exited (the SDK
// hangs up on it, and it exits on end of input).
func TestStartUnsupportedVersion(t *testing.T) {
	e := newEngine(t, fakeServer(t, "old", fakemcp.Spec{ProtocolVersion: "2025-06-18", AnswerVersion: "1999-01-01"}))
	err := e.Start(ctx(t))
	if KindOf(err) != KindProtocol || !strings.Contains(err.Error(), `server old answered initialize with a protocol version mcpctl does not speak ("1999-01-01")`) {
		t.Fatalf("start: %v (%s)", err, KindOf(err))
	}
	if h := strings.Join(asError(err).Hint, "\n"); !strings.Contains(h, "set protocolVersion of server old") {
		t.Errorf("hint: %s", h)
	}
}

// A server whose answer ends the start (an error for initialize, a
// tools/list that does not decode) is told as that answer, a protocol
// error: not as its exit (code 0), which only followed mcpctl closing its
// stdin.
func TestStartAnswerBrokeHandshake(t *testing.T) {
	for _, c := range []struct {
		method, answer, want string
		lingers              bool // does not exit when its stdin closes
	}{
		{"initialize", `{"error": {"code": -32603, "message": "init exploded"}}`, `server bad failed during startup: calling "initialize": init exploded`, false},
		{"initialize", `{"error": {"code": -32603, "message": "init exploded"}}`, `server bad failed during startup: calling "initialize": init exploded`, true},
		{"tools/list", `{"result": {"tools": "nope"}}`, `server bad failed during startup: calling "tools/list": json: cannot unmarshal`, false},
	} {
		e := newEngine(t, fakeServer(t, "bad", fakemcp.Spec{ProtocolVersion: "2025-11-25", IgnoreStdinEOF: c.lingers, Answers: map[string]json.RawMessage{c.method: json.RawMessage(c.answer)}}))
		err := e.Start(ctx(t))
		if KindOf(err) != KindProtocol || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s answered %s (lingering %v): %s %v, want a protocol error %q", c.method, c.answer, c.lingers, KindOf(err), err, c.want)
		}
	}
}

// A closed engine says so to every request, not an empty answer.
func TestClosedEngineSaysSo(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", surface))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	// Answers cached before Close are not given after it.
	read := &ResourceRequest{URI: "file:///notes.txt"}
	prompt := &PromptRequest{Name: "srv.greet", Arguments: map[string]string{"name": "A"}}
	if _, err := e.ReadResource(ctx(t), read); err != nil {
		t.Fatal(err)
	}
	if _, err := e.GetPrompt(ctx(t), prompt); err != nil {
		t.Fatal(err)
	}
	e.Close()
	_, toolsErr := e.Tools("")
	_, promptsErr := e.Prompts("")
	_, resourcesErr := e.Resources("")
	_, inspectErr := e.Inspect("")
	_, levelErr := e.SetLogLevel(ctx(t), "debug")
	_, readErr := e.ReadResource(ctx(t), read)
	_, promptErr := e.GetPrompt(ctx(t), prompt)
	for what, err := range map[string]error{"Tools": toolsErr, "Prompts": promptsErr, "Resources": resourcesErr, "Inspect": inspectErr, "SetLogLevel": levelErr, "Stop": e.Stop("srv"), "ReadResource": readErr, "GetPrompt": promptErr} {
		if KindOf(err) != KindUnavailable || !strings.Contains(err.Error(), "the engine is closed") {
			t.Errorf("%s after Close: %v", what, err)
		}
	}
	if err := e.Watch(ctx(t), nil, nil); KindOf(err) != KindUsage {
		t.Errorf("Watch with no func: %v", err)
	}
}

// A server stopped by hand stays stopped through a Start that names no
// server, which starts the others; naming it starts it.
func TestStartLeavesStoppedByHand(t *testing.T) {
	e := newEngine(t, fakeServer(t, "a", fakemcp.Spec{}), fakeServer(t, "b", fakemcp.Spec{}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := e.Stop("b"); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx(t)); err != nil {
		t.Fatalf("Start with b stopped by hand: %v", err)
	}
	if st := e.Status(); st[0].State != StateReady || st[1].State != StateStopped {
		t.Errorf("after Start: a %s, b %s; want ready and stopped", st[0].State, st[1].State)
	}
	if err := e.Start(ctx(t), "b"); err != nil || e.Status()[1].State != StateReady {
		t.Errorf("Start naming b: %v, b %s", err, e.Status()[1].State)
	}
}

// A server that closes its stdin and lives on is lost: the request that
// cannot be written to it is unavailable (exit 3), not a protocol error
// with the write's "broken pipe", and the server is unavailable at once,
// its process stopped.
func TestServerClosedStdin(t *testing.T) {
	dir := t.TempDir()
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{PIDFile: filepath.Join(dir, "pid"),
		Tools: []fakemcp.Tool{{Name: "deaf", CloseStdin: true}, {Name: "echo"}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	pid := readPID(t, filepath.Join(dir, "pid"))
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.deaf"}); err != nil {
		t.Fatal(err)
	}
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo"})
	if KindOf(err) != KindUnavailable || !strings.Contains(err.Error(), "server srv no longer reads its stdin: the call to srv.echo could not be sent to it") {
		t.Errorf("call after: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for (e.Status()[0].State != StateUnavailable || alive(pid)) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if st := e.Status()[0]; st.State != StateUnavailable || alive(pid) || st.LastError != "server srv no longer reads its stdin" {
		t.Errorf("status %+v, process alive %v", st, alive(pid))
	}
}

// Calls under way when their server is restarted by hand fail as stopped,
// every one of them: the process's end (SIGPIPE, code 0 on end of input,
// SIGTERM) is mcpctl's doing, not a crash to report.
func TestCallsDuringRestartSayStopped(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "slow", Sleep: "3s"}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 200)
	for range cap(errs) {
		go func() {
			_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.slow"})
			errs <- err
		}()
	}
	time.Sleep(300 * time.Millisecond)
	if err := e.Restart(ctx(t), "srv"); err != nil {
		t.Fatal(err)
	}
	for range cap(errs) {
		if err := <-errs; KindOf(err) != KindUnavailable || !strings.Contains(err.Error(), "server srv was stopped during the call to srv.slow") || len(asError(err).Hint) == 0 || asError(err).Hint[0] != stoppedByUs {
			t.Errorf("a call during the restart: %v (hints %q)", err, asError(err).Hint)
		}
	}
}

// A server hung in its start shows its pid, so that it can be found.
func TestStartingServerShowsPID(t *testing.T) {
	dir := t.TempDir()
	e := newEngine(t, fakeServer(t, "slow", fakemcp.Spec{StartDelay: "5s", PIDFile: filepath.Join(dir, "pid")}))
	go e.Start(context.Background())
	pid := readPID(t, filepath.Join(dir, "pid"))
	if st := e.Status()[0]; st.State != StateStarting || st.PID != pid {
		t.Errorf("status while starting: %+v, pid %d", st, pid)
	}
}

// A fake whose spec has a closeStdin tool keeps its stdin until that tool
// runs: its old *os.File of fd 0, collected, closed it under load.
func TestFakeWithCloseStdinKeepsStdin(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}, {Name: "deaf", CloseStdin: true}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for range cap(errs) {
		wg.Go(func() {
			_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo", Arguments: json.RawMessage(`{"pad":"` + strings.Repeat("x", 64<<10) + `"}`)})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a call: %v", err)
		}
	}
}

// A server started on use, whose cwd has gone since the config was
// checked, fails as a config error (exit 2), as a start with the engine
// does: it was "unavailable" (exit 3).
func TestStartOnUseMissingCwdIsConfigError(t *testing.T) {
	lazy := fakeServer(t, "lz", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	lazy.Activation = "lazy"
	lazy.Cwd = filepath.Join(t.TempDir(), "gone")
	e := newEngine(t, lazy)
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "lz.echo"})
	if KindOf(err) != KindConfig || !strings.Contains(err.Error(), "working directory "+lazy.Cwd+" does not exist") {
		t.Errorf("call to a lazy server without its cwd: %v (%s)", err, KindOf(err))
	}
	// Made as the hint says, the next request starts it.
	if err := os.Mkdir(lazy.Cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "lz.echo"}); err != nil {
		t.Errorf("call once the cwd is there: %v", err)
	}
}

// A file the system cannot run (neither its program nor a script) fails
// its start as a config error that says so, not "exec format error".
func TestStartNotAProgram(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "garbage")
	if err := os.WriteFile(p, []byte("not a program\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := &config.Server{Name: "g", Type: "stdio", Command: p, Cwd: dir, StartupTimeout: 5 * time.Second, Source: "test:1:1"}
	err := newEngine(t, srv).Start(ctx(t))
	if KindOf(err) != KindConfig || !strings.Contains(err.Error(), "is not a program this system runs, nor a script with a #! line") {
		t.Errorf("start: %v (%s)", err, KindOf(err))
	}
}

// Listed gives what the servers have listed, starting none: a lazy server
// that never ran is left out, and stays stopped.
func TestListedStartsNothing(t *testing.T) {
	lazy := fakeServer(t, "lz", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	lazy.Activation = "lazy"
	e := newEngine(t, fakeServer(t, "up", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}}), lazy)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	listed, err := e.Listed()
	if err != nil || len(listed) != 1 || listed[0].Name != "up" || len(listed[0].Tools) != 1 {
		t.Fatalf("listed: %+v, %v", listed, err)
	}
	if st := e.Status()[1]; st.State != StateStopped {
		t.Errorf("the lazy server after Listed: %s", st.State)
	}
}

// Arguments that together pass the system's limit fail the start as a
// config error that says so, not Go's "argument list too long".
func TestStartArgumentsTooLong(t *testing.T) {
	srv := fakeServer(t, "big", fakemcp.Spec{})
	for range 40 {
		srv.Args = append(srv.Args, strings.Repeat("a", 100<<10))
	}
	err := newEngine(t, srv).Start(ctx(t))
	if KindOf(err) != KindConfig || !strings.Contains(err.Error(), "more than the system passes a program") {
		t.Errorf("start: %v (%s)", err, KindOf(err))
	}
}

// waitRequestInFlight waits, up to 5 s, for a request to server to be in
// flight.
func waitRequestInFlight(e *Engine, server string) {
	for deadline := time.Now().Add(5 * time.Second); e.servers[server].requests.now.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
}
