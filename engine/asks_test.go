package engine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/internal/fakemcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var formAsk = &fakemcp.Elicit{Message: "Your name?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)}

func resultText(t *testing.T, res *CallResult) string {
	t.Helper()
	var r struct {
		Content []struct{ Text string } `json:"content"`
	}
	json.Unmarshal(res.Result, &r)
	if len(r.Content) == 0 {
		t.Fatalf("no text in %s", res.Result)
	}
	return r.Content[0].Text
}

func elicitAnswer(answer string) RequestHandler {
	return func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(answer), nil
	}
}

// The caller of the call answers what the server asks during it, before
// the engine's own handler.
func TestCallerAnswersElicitation(t *testing.T) {
	s := fakeServer(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25", Tools: []fakemcp.Tool{{Name: "ask", Elicit: formAsk}}})
	e := New(&config.Config{Servers: []*config.Server{s}}, &Options{Elicitation: elicitAnswer(`{"action":"decline"}`)})
	defer e.Close()
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	var asked, server string
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.ask", Elicitation: func(_ context.Context, srv string, params json.RawMessage) (json.RawMessage, error) {
		asked, server = string(params), srv
		return json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != `{"action":"accept","content":{"name":"Ada"}}` || server != "srv" || !strings.Contains(asked, "Your name?") {
		t.Errorf("result %s; the caller was asked %s by %q", got, asked, server)
	}
	// A call without its own handler gets the engine's.
	res, err = e.CallTool(ctx(t), &CallRequest{Name: "srv.ask"})
	if err != nil || resultText(t, res) != `{"action":"decline"}` {
		t.Errorf("engine handler: %v %s", err, res.Result)
	}
}

// An elicitation whose server left out its mode (older servers) reaches
// the one asked with the mode the spec infers, never "mode":"".
func TestElicitationModeInferred(t *testing.T) {
	for _, tc := range []struct {
		params *mcp.ElicitParams
		want   string
	}{
		{&mcp.ElicitParams{Message: "Name?"}, `"mode":"form"`},
		{&mcp.ElicitParams{Message: "Consent", URL: "https://example.com/c"}, `"mode":"url"`},
	} {
		var asked string
		_, err := (&server{}).askElicitation(ctx(t), tc.params, func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
			asked = string(p)
			return json.RawMessage(`{"action":"decline"}`), nil
		})
		if err != nil || !strings.Contains(asked, tc.want) {
			t.Errorf("asked %s (%v), want %s in it", asked, err, tc.want)
		}
	}
}

// An answer whose action is none of MCP's (a hook's typo) is not handed to
// the server as it is (QA: {"action":"maybe"} reached it).
func TestElicitationActionChecked(t *testing.T) {
	for _, answer := range []string{`{"action":"maybe"}`, `{}`, `{"action":"Accept"}`} {
		_, err := (&server{}).askElicitation(ctx(t), &mcp.ElicitParams{Message: "Name?"}, func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(answer), nil
		})
		if err == nil || !strings.Contains(err.Error(), "is not an elicitation result: its action is") {
			t.Errorf("%s: %v", answer, err)
		}
	}
	for _, answer := range []string{`{"action":"accept","content":{}}`, `{"action":"decline"}`, `{"action":"cancel"}`} {
		if _, err := (&server{}).askElicitation(ctx(t), &mcp.ElicitParams{Message: "Name?"}, func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(answer), nil
		}); err != nil {
			t.Errorf("%s: %v", answer, err)
		}
	}
}

// A form reaches the caller with its fields in the server's order, which
// the SDK's decoding into maps loses.
func TestElicitationKeepsFieldOrder(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"},"mid":{"type":"boolean"}}}`)
	e := startOne(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25", Tools: []fakemcp.Tool{{Name: "ask",
		Elicit: &fakemcp.Elicit{Message: "Order?", RequestedSchema: schema}}}})
	var asked struct {
		Schema json.RawMessage `json:"requestedSchema"`
	}
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.ask", Elicitation: func(_ context.Context, _ string, p json.RawMessage) (json.RawMessage, error) {
		json.Unmarshal(p, &asked)
		return json.RawMessage(`{"action":"cancel"}`), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if z, a, m := strings.Index(string(asked.Schema), "zeta"), strings.Index(string(asked.Schema), "alpha"), strings.Index(string(asked.Schema), "mid"); !(z < a && a < m) {
		t.Errorf("fields out of order: %s", asked.Schema)
	}
}

// With nothing to answer, an elicitation is declined and sampling gets an
// error that says how to answer it.
func TestNothingAnswers(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25", Tools: []fakemcp.Tool{
		{Name: "ask", Elicit: formAsk}, {Name: "sample", Sample: "2+2?"}}})
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.ask"})
	if err != nil || resultText(t, res) != `{"action":"decline"}` {
		t.Errorf("elicitation: %v %+v", err, res)
	}
	res, err = e.CallTool(ctx(t), &CallRequest{Name: "srv.sample"})
	if err != nil || !strings.Contains(resultText(t, res), "no sampling hook is set (sampling.command in the config), and its caller does not answer sampling (mcpctl call does with --sampling-command, mcpctl serve when its client does)") {
		t.Errorf("sampling: %v %+v", err, res)
	}
}

// A hook in the config answers sampling: the request's params on stdin,
// MCPCTL_SERVER and MCPCTL_METHOD set, the result printed.
func TestSamplingHook(t *testing.T) {
	s := fakeServer(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25", Tools: []fakemcp.Tool{{Name: "sample", Sample: "What is 2+2?"}}})
	dir := t.TempDir()
	s.Sampling = &config.Hook{Dir: dir, Timeout: 10 * time.Second, Source: "mcp.json:3:5", Command: `cat > request.json; echo "$MCPCTL_SERVER $MCPCTL_METHOD" > env.txt
		echo '{"role":"assistant","content":{"type":"text","text":"4"},"model":"hook-model"}'`}
	e := newEngine(t, s)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.sample"})
	if err != nil || !strings.Contains(resultText(t, res), `"model":"hook-model"`) {
		t.Fatalf("%v %+v", err, res)
	}
	req, _ := os.ReadFile(filepath.Join(dir, "request.json"))
	env, _ := os.ReadFile(filepath.Join(dir, "env.txt"))
	if !strings.Contains(string(req), "What is 2+2?") || string(env) != "srv sampling/createMessage\n" {
		t.Errorf("the hook got %s with %s", req, env)
	}
}

// A hook that takes too long is killed with whatever it started, and the
// server is told why; one that fails or prints no JSON says so.
func TestHookFailures(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	for _, tc := range []struct {
		command string
		timeout time.Duration
		want    string
	}{
		{`sleep 60 & echo $! > ` + pidFile + `; wait`, 300 * time.Millisecond, "the sampling hook (mcp.json:3:5) did not answer within 300ms"},
		{`echo "no model configured" >&2; exit 3`, 10 * time.Second, "the sampling hook (mcp.json:3:5) failed: exit status 3: no model configured"},
		{`echo hello`, 10 * time.Second, `the sampling hook (mcp.json:3:5) did not print a JSON object (it printed "hello")`},
	} {
		s := fakeServer(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25", Tools: []fakemcp.Tool{{Name: "sample", Sample: "x"}}})
		s.Sampling = &config.Hook{Dir: dir, Timeout: tc.timeout, Source: "mcp.json:3:5", Command: tc.command}
		e := newEngine(t, s)
		if err := e.Start(ctx(t)); err != nil {
			t.Fatal(err)
		}
		res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.sample"})
		if err != nil || !res.IsError || !strings.Contains(resultText(t, res), tc.want) {
			t.Errorf("%s: %v %+v, want %q", tc.command, err, res, tc.want)
		}
		e.Close()
	}
	data, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if pid == 0 {
		t.Fatal("the slow hook did not start")
	}
	for i := 0; alive(pid) && i < 50; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(pid) {
		t.Errorf("the slow hook's child %d outlived its timeout", pid)
	}
}

// While the caller answers, the call's deadline does not run: a person
// filling in a form is not a server hanging.
func TestDeadlineHeldWhileAsking(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25", Tools: []fakemcp.Tool{{Name: "ask", Elicit: formAsk}}})
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.ask", TimeoutMs: 300, Elicitation: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		time.Sleep(time.Second)
		return json.RawMessage(`{"action":"cancel"}`), nil
	}})
	if err != nil || resultText(t, res) != `{"action":"cancel"}` {
		t.Errorf("%v %+v", err, res)
	}
}

// The caller giving up on its call ends the questions its handler is
// answering, even when the server does not withdraw them
// (server-everything does not): a form left open, a goroutine waiting.
func TestCallEndEndsItsQuestions(t *testing.T) {
	detached := *formAsk
	detached.Detached = true
	e := startOne(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25", Tools: []fakemcp.Tool{{Name: "ask", Elicit: &detached}}})
	cctx, cancel := context.WithCancel(ctx(t))
	asked := make(chan struct{})
	ended := make(chan error, 1)
	go func() {
		<-asked
		cancel()
	}()
	_, err := e.CallTool(cctx, &CallRequest{Name: "srv.ask", Elicitation: func(hctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
		close(asked)
		select {
		case <-hctx.Done():
			ended <- nil
		case <-time.After(5 * time.Second):
			ended <- errors.New("the question outlived its call by 5s")
		}
		return nil, hctx.Err()
	}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("the call: %v", err)
	}
	if err := <-ended; err != nil {
		t.Error(err)
	}
}

// A hook's time does not count against the call either.
func TestDeadlineHeldWhileHookRuns(t *testing.T) {
	s := fakeServer(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25", Tools: []fakemcp.Tool{{Name: "sample", Sample: "x"}}})
	s.Sampling = &config.Hook{Dir: t.TempDir(), Timeout: 10 * time.Second, Command: `sleep 1; echo '{"role":"assistant","content":{"type":"text","text":"late"},"model":"m"}'`}
	e := newEngine(t, s)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.sample", TimeoutMs: 300})
	if err != nil || !strings.Contains(resultText(t, res), "late") {
		t.Errorf("%v %+v", err, res)
	}
}

// A URL-mode elicitation waits until the server says it is complete.
func TestURLElicitationCompleted(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25", Tools: []fakemcp.Tool{{Name: "visit", CompleteAfter: "100ms",
		Elicit: &fakemcp.Elicit{Mode: "url", URL: "https://example.com/consent", Message: "Consent", ElicitationID: "el-7"}}}})
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.visit", Elicitation: func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
		done := ElicitationCompleted(ctx)
		if done == nil {
			return nil, os.ErrInvalid
		}
		select {
		case <-done:
			return json.RawMessage(`{"action":"accept"}`), nil
		case <-time.After(10 * time.Second):
			return json.RawMessage(`{"action":"cancel"}`), nil
		}
	}})
	if err != nil || resultText(t, res) != `{"action":"accept"}` {
		t.Errorf("%v %+v", err, res)
	}
}

// A call refused with URLElicitationRequired (-32042) sends the caller to
// the URL and, once they accept, is made again; without anyone to ask, the
// error shows the URL.
func TestURLRequiredThenRetried(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25", Tools: []fakemcp.Tool{{Name: "pay", URLRequired: "https://example.com/login"}}})
	var asked string
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.pay", Elicitation: func(_ context.Context, _ string, p json.RawMessage) (json.RawMessage, error) {
		asked = string(p)
		return json.RawMessage(`{"action":"accept"}`), nil
	}})
	if err != nil || resultText(t, res) != "url visited" || !strings.Contains(asked, "https://example.com/login") {
		t.Fatalf("%v %+v (asked %s)", err, res, asked)
	}
	// The fake refuses every other call: these two are refused.
	_, err = e.CallTool(ctx(t), &CallRequest{Name: "srv.pay"})
	if KindOf(err) != KindProtocol || !strings.Contains(err.Error(), "the call to srv.pay needs you to open https://example.com/login first") {
		t.Errorf("without anyone to ask: %v", err)
	}
	// The server's own answer goes with it, for a proxy to pass on:
	// its data names the URL.
	if a := ServerAnswer(err); a == nil || a.Code != -32042 || !strings.Contains(string(a.Data), `"url":"https://example.com/login"`) {
		t.Errorf("the server's answer: %+v", a)
	}
	e.CallTool(ctx(t), &CallRequest{Name: "srv.pay"})
	_, err = e.CallTool(ctx(t), &CallRequest{Name: "srv.pay", Elicitation: elicitAnswer(`{"action":"decline"}`)})
	if KindOf(err) != KindProtocol || !strings.Contains(err.Error(), "needs you to open https://example.com/login first; that was declined") {
		t.Errorf("declined: %v", err)
	}
	// Through a session too, the answer comes with the error.
	c := serveDaemon(t, e)
	if _, err := c.CallTool(ctx(t), &CallRequest{Name: "srv.pay"}); err != nil {
		t.Fatal(err) // between two refusals
	}
	_, err = c.CallTool(ctx(t), &CallRequest{Name: "srv.pay"})
	if a := ServerAnswer(err); a == nil || a.Code != -32042 || !strings.Contains(string(a.Data), `"url":"https://example.com/login"`) {
		t.Errorf("the server's answer through a session: %+v (%v)", a, err)
	}
}

// Through the session, the server's questions go to the CLI that made the
// call, over the call's stream; so does a URL elicitation's completion.
func TestAsksThroughSession(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25", Tools: []fakemcp.Tool{
		{Name: "ask", Elicit: formAsk}, {Name: "sample", Sample: "2+2?"},
		{Name: "visit", CompleteAfter: "100ms", Elicit: &fakemcp.Elicit{Mode: "url", URL: "https://example.com/c", Message: "Consent", ElicitationID: "el-9"}}}})
	c := serveDaemon(t, e)
	res, err := c.CallTool(ctx(t), &CallRequest{Name: "srv.ask", Elicitation: elicitAnswer(`{"action":"accept","content":{"name":"Lin"}}`)})
	if err != nil || resultText(t, res) != `{"action":"accept","content":{"name":"Lin"}}` {
		t.Errorf("elicitation: %v %+v", err, res)
	}
	res, err = c.CallTool(ctx(t), &CallRequest{Name: "srv.sample", Sampling: func(_ context.Context, server string, _ json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"4 from ` + server + `"},"model":"m"}`), nil
	}})
	if err != nil || !strings.Contains(resultText(t, res), "4 from srv") {
		t.Errorf("sampling: %v %+v", err, res)
	}
	res, err = c.CallTool(ctx(t), &CallRequest{Name: "srv.sample", Sampling: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return nil, os.ErrPermission
	}})
	if err != nil || !res.IsError || !strings.Contains(resultText(t, res), "permission denied") {
		t.Errorf("a failed answer: %v %+v", err, res)
	}
	res, err = c.CallTool(ctx(t), &CallRequest{Name: "srv.visit", Elicitation: func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
		select {
		case <-ElicitationCompleted(ctx):
			return json.RawMessage(`{"action":"accept"}`), nil
		case <-time.After(10 * time.Second):
			return json.RawMessage(`{"action":"cancel"}`), nil
		}
	}})
	if err != nil || resultText(t, res) != `{"action":"accept"}` {
		t.Errorf("url completion: %v %+v", err, res)
	}
	// A call that answers nothing leaves the session's rules: declined.
	res, err = c.CallTool(ctx(t), &CallRequest{Name: "srv.ask"})
	if err != nil || resultText(t, res) != `{"action":"decline"}` {
		t.Errorf("no handler: %v %+v", err, res)
	}
}

// A handler that panics does not end the program: the server is answered
// with the panic as an error, and the call goes on.
func TestPanickingHandlerIsAnError(t *testing.T) {
	s := fakeServer(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25", Tools: []fakemcp.Tool{{Name: "ask", Elicit: formAsk}}})
	e := New(&config.Config{Servers: []*config.Server{s}}, &Options{Elicitation: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		panic("boom")
	}})
	defer e.Close()
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.ask"})
	if err != nil || !res.IsError || !strings.Contains(resultText(t, res), "the handler of elicitation/create panicked") {
		t.Fatalf("a call whose question's handler panicked: %v %+v", err, res)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.ask", Elicitation: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		panic("caller's boom")
	}}); err != nil {
		t.Fatalf("a call whose own handler panicked: %v", err)
	}
	// Through a session: the Client runs the handler on a goroutine of
	// its own, where the caller could not recover the panic.
	res, err = serveDaemon(t, e).CallTool(ctx(t), &CallRequest{Name: "srv.ask", Elicitation: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		panic("client's boom")
	}})
	if err != nil || !res.IsError || !strings.Contains(resultText(t, res), "the handler of elicitation/create panicked") || strings.Contains(resultText(t, res), "client's boom") {
		t.Fatalf("a call through a session whose handler panicked: %v %+v", err, res)
	}
}
