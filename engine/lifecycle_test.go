package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/internal/fakemcp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func pidOf(t *testing.T, e *Engine, name string) int {
	t.Helper()
	for _, st := range e.Status() {
		if st.Name == name {
			return st.PID
		}
	}
	t.Fatalf("no server %s", name)
	return 0
}

// Each failure in a row is a state event that counts it toward
// failureThreshold.
func TestDegradedEventsCountFailures(t *testing.T) {
	srv := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "slow", Sleep: "10s"}}})
	srv.FailureThreshold = 3
	srv.RequestTimeout = 100 * time.Millisecond
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	sub := e.Events(EventFilter{Types: []string{EventState}})
	defer sub.Close()
	for range 3 {
		e.CallTool(ctx(t), &CallRequest{Name: "srv.slow"})
	}
	var got []string
	for len(got) < 3 {
		ev := next(t, sub)
		got = append(got, fmt.Sprintf("%s>%s %s", ev.From, ev.To, ev.Message))
	}
	want := []string{"ready>degraded failures in a row: 1 of 3", "degraded>degraded failures in a row: 2 of 3", "degraded>unavailable "}
	if !slices.Equal(got, want) {
		t.Errorf("state events:\n%q\nwant\n%q", got, want)
	}
}

// Timeouts degrade a server; a success makes it ready again; the
// failureThreshold-th timeout in a row makes it unavailable and stops it.
// A caller's own timeout, shorter than the server's, does not count.
// A server just ready has its readyAt, uptimeSeconds and startupSeconds,
// the seconds never 0: a field that came and went with the clock broke
// strict parsers (QA: uptimeSeconds was left out in the first millisecond).
func TestReadyServerHasItsUptime(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(e.Status()[0])
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	json.Unmarshal(data, &st)
	for _, field := range []string{"readyAt", "uptimeSeconds", "startupSeconds"} {
		if v, ok := st[field]; !ok || v == 0.0 {
			t.Errorf("%s of a ready server: %v in %s", field, v, data)
		}
	}
}

// A server's internal errors (-32603: the TypeScript SDK's answer to any
// exception a handler throws, a mistyped resource URI's) show a server that
// answers: more of them in a row than failureThreshold leave it ready, its
// process running.
func TestInternalErrorsDoNotStopTheServer(t *testing.T) {
	srv := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "throws", RPCError: &jsonrpc.Error{Code: -32603, Message: "Unknown resource: demo://x"}}, {Name: "echo"}}})
	srv.FailureThreshold = 2
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	pid := pidOf(t, e, "srv")
	for range 4 {
		if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.throws"}); KindOf(err) != KindProtocol || !strings.Contains(err.Error(), "Unknown resource") {
			t.Fatalf("err = %v", err)
		}
	}
	if st := e.Status()[0]; st.State != StateReady || st.Failures != 0 || st.LastFailureAt != nil {
		t.Fatalf("after 4 internal errors: %+v", st)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo"}); err != nil {
		t.Fatal(err)
	}
	if got := pidOf(t, e, "srv"); got != pid {
		t.Errorf("the server was restarted: pid %d, then %d", pid, got)
	}
}

func TestFailureThreshold(t *testing.T) {
	srv := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "slow", Sleep: "10s"}, {Name: "echo"}}})
	srv.FailureThreshold = 2
	srv.RequestTimeout = 100 * time.Millisecond
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	pid := pidOf(t, e, "srv")
	for range 3 {
		if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.slow", TimeoutMs: 50}); KindOf(err) != KindTimeout {
			t.Fatalf("err = %v", err)
		}
	}
	if st := e.Status()[0]; st.State != StateReady || st.Failures != 0 || st.LastFailureAt != nil || st.LastSuccessAt != nil {
		t.Fatalf("after three calls that gave up before the server's timeout: %+v", st)
	}
	slow := &CallRequest{Name: "srv.slow"}
	beforeSlow := time.Now()
	if _, err := e.CallTool(ctx(t), slow); KindOf(err) != KindTimeout {
		t.Fatalf("err = %v", err)
	}
	st := waitState(t, e, "srv", StateDegraded)
	if st.Failures != 1 || !strings.Contains(st.LastError, "did not answer within 100ms") {
		t.Errorf("degraded status: %+v", st)
	}
	if st.LastFailureAt == nil || st.LastFailureAt.Before(beforeSlow) || st.LastSuccessAt != nil {
		t.Errorf("after a timeout: lastFailureAt %v (the call began %v), lastSuccessAt %v", st.LastFailureAt, beforeSlow, st.LastSuccessAt)
	}
	failedAt := *st.LastFailureAt
	beforeEcho := time.Now()
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo"}); err != nil {
		t.Fatal(err)
	}
	st = waitState(t, e, "srv", StateReady)
	if st.LastSuccessAt == nil || st.LastSuccessAt.Before(beforeEcho) || st.LastFailureAt == nil || !st.LastFailureAt.Equal(failedAt) {
		t.Errorf("after a success: lastSuccessAt %v (the call began %v), lastFailureAt %v (want %v)", st.LastSuccessAt, beforeEcho, st.LastFailureAt, failedAt)
	}

	e.CallTool(ctx(t), slow)
	waitState(t, e, "srv", StateDegraded)
	e.CallTool(ctx(t), slow)
	st = waitState(t, e, "srv", StateUnavailable)
	if !strings.Contains(st.LastError, "failed 2 requests in a row and was stopped") {
		t.Errorf("lastError = %q", st.LastError)
	}
	waitGone(t, pid)
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo"})
	if KindOf(err) != KindUnavailable || !strings.Contains(strings.Join(asError(err).Hint, "\n"), "mcpctl restart srv") {
		t.Errorf("call to the stopped server: %v", err)
	}
	// Its tools stay listed, marked stale.
	tools, _ := e.Tools("srv")
	if len(tools) != 2 || !tools[0].Stale {
		t.Errorf("tools of the unavailable server: %v", tools)
	}
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); alive(pid); {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// With restart on-failure a crashed server comes back after the backoff,
// as a new process; after maxRestarts the circuit opens.
func TestRestartOnFailure(t *testing.T) {
	code := 9
	srv := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "crash", Crash: &code}, {Name: "echo"}}})
	srv.Restart, srv.MaxRestarts = "on-failure", 2
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	sub := e.Events(EventFilter{Types: []string{EventState}})
	defer sub.Close()
	pid := pidOf(t, e, "srv")

	t0 := time.Now()
	e.CallTool(ctx(t), &CallRequest{Name: "srv.crash"})
	st := waitState(t, e, "srv", StateUnavailable)
	if st.Restarts != 1 || st.RestartAt == nil {
		t.Errorf("after the crash: %+v", st)
	}
	// A call meanwhile waits for the restart rather than failing.
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo"}); err != nil {
		t.Fatalf("call during the backoff: %v", err)
	}
	if d := time.Since(t0); d < restartBackoff {
		t.Errorf("restarted after %s, before the backoff of %s", d, restartBackoff)
	}
	if p := pidOf(t, e, "srv"); p == pid || p == 0 {
		t.Errorf("pid after restart = %d, before %d", p, pid)
	}

	// The second restart waits twice as long; after it, the circuit opens.
	t1 := time.Now()
	e.CallTool(ctx(t), &CallRequest{Name: "srv.crash"})
	waitState(t, e, "srv", StateUnavailable)
	waitState(t, e, "srv", StateReady)
	if d := time.Since(t1); d < 2*restartBackoff {
		t.Errorf("second restart after %s, want at least %s", d, 2*restartBackoff)
	}
	e.CallTool(ctx(t), &CallRequest{Name: "srv.crash"})
	st = waitState(t, e, "srv", StateUnavailable)
	time.Sleep(100 * time.Millisecond)
	st = waitState(t, e, "srv", StateUnavailable)
	if !strings.Contains(st.LastError, "gave up after 2 restarts") || st.RestartAt != nil {
		t.Errorf("after maxRestarts: %+v", st)
	}
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo"})
	if !strings.Contains(err.Error(), "gave up after 2 restarts") {
		t.Errorf("call after the circuit opened: %v", err)
	}
	// The restarts were told as state events with what comes next.
	var notes []string
	for len(notes) < 2 {
		select {
		case ev := <-sub.C:
			if ev.To == StateUnavailable && ev.Message != "" {
				notes = append(notes, ev.Message)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("restart events: %q", notes)
		}
	}
	if notes[0] != "restart 1 of 2 in 1s" || notes[1] != "restart 2 of 2 in 2s" {
		t.Errorf("restart notes = %q", notes)
	}

	// By hand, it starts again with a fresh set of restarts.
	if err := e.Restart(ctx(t), "srv"); err != nil {
		t.Fatal(err)
	}
	if st := waitState(t, e, "srv", StateReady); st.Restarts != 0 {
		t.Errorf("after restart by hand: %+v", st)
	}
}

// A restart that fails to start, the last one its policy allows, is told
// as a state event saying the policy gave up: the give-up was written
// into the start's own error, which had been told already, so no event
// said it, and status did.
func TestRestartThatFailsToStartTellsTheGiveUp(t *testing.T) {
	code, exit := 9, 4
	srv := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "crash", Crash: &code}}})
	srv.Restart, srv.MaxRestarts = "on-failure", 1
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	// From now on the server exits as it starts.
	data, _ := json.Marshal(fakemcp.Spec{Exit: &exit})
	if err := os.WriteFile(srv.Args[len(srv.Args)-1], data, 0o644); err != nil {
		t.Fatal(err)
	}
	sub := e.Events(EventFilter{Types: []string{EventState}})
	defer sub.Close()
	e.CallTool(ctx(t), &CallRequest{Name: "srv.crash"})
	timeout := time.After(10 * time.Second)
	var seen []string
	for {
		select {
		case ev := <-sub.C:
			seen = append(seen, fmt.Sprintf("%s>%s %s %s", ev.From, ev.To, ev.Error, ev.Message))
			if strings.Contains(ev.Error, "exited with code 4") && strings.HasSuffix(ev.Error, "(gave up after 1 restart)") {
				if st := e.Status()[0]; st.LastError != ev.Error {
					t.Errorf("status says %q, the event %q", st.LastError, ev.Error)
				}
				return
			}
		case <-timeout:
			t.Fatalf("no event told the give-up; events:\n%s", strings.Join(seen, "\n"))
		}
	}
}

// A reload that starts again a server whose restart policy gave up gives
// it its restarts back, as a restart by hand does: it was started with
// none, and its next crash was its last.
func TestReloadStartGivesRestartsBack(t *testing.T) {
	code := 9
	srv := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "crash", Crash: &code}}})
	srv.Restart, srv.MaxRestarts = "on-failure", 1
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	e.CallTool(ctx(t), &CallRequest{Name: "srv.crash"})
	waitState(t, e, "srv", StateUnavailable)
	waitState(t, e, "srv", StateReady) // restart 1 of 1
	e.CallTool(ctx(t), &CallRequest{Name: "srv.crash"})
	if st := waitState(t, e, "srv", StateUnavailable); !strings.Contains(st.LastError, "gave up after 1 restart") {
		t.Fatalf("after the second crash: %+v", st)
	}
	res, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: []*config.Server{srv}})
	if err != nil || !slices.Equal(res.Started, []string{"srv"}) {
		t.Fatalf("reload: %+v, %v", res, err)
	}
	e.CallTool(ctx(t), &CallRequest{Name: "srv.crash"})
	st := waitState(t, e, "srv", StateUnavailable)
	if st.Restarts != 1 || st.RestartAt == nil || strings.Contains(st.LastError, "gave up") {
		t.Errorf("a crash after the reload's start: %+v, want restart 1 of 1 due", st)
	}
}

// A call with retries survives a server that dies under it and is
// restarted; without, it fails.
func TestRetryAfterRestart(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "crashed")
	srv := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "once", CrashUnless: marker}}})
	srv.Restart, srv.MaxRestarts = "on-failure", 3
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.once", Retry: 1})
	if err != nil || !strings.Contains(string(res.Result), "survived") {
		t.Fatalf("retried call: %v %v", res, err)
	}
	os.Remove(marker)
	waitState(t, e, "srv", StateReady)
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.once"}); KindOf(err) != KindUnavailable {
		t.Fatalf("call without retry: %v", err)
	}
}

// A lazy server starts on first use; concurrent first uses share one start.
func TestLazyActivation(t *testing.T) {
	log := filepath.Join(t.TempDir(), "events")
	srv := fakeServer(t, "lazy", fakemcp.Spec{Name: "lazy", EventLog: log, StartDelay: "200ms", Tools: []fakemcp.Tool{{Name: "echo"}}})
	srv.Activation = "lazy"
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if st := e.Status()[0]; st.State != StateStopped || st.Activation != "lazy" {
		t.Fatalf("lazy server after Start: %+v", st)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.CallTool(ctx(t), &CallRequest{Name: "lazy.echo"})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	data, _ := os.ReadFile(log)
	if n := strings.Count(string(data), "lazy start"); n != 1 {
		t.Errorf("started %d times:\n%s", n, data)
	}
}

// A manual server starts only when named.
func TestManualActivation(t *testing.T) {
	srv := fakeServer(t, "m", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	srv.Activation = "manual"
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "m.echo"})
	if KindOf(err) != KindUnavailable || !strings.Contains(err.Error(), "activation manual") || !strings.Contains(strings.Join(asError(err).Hint, "\n"), "mcpctl start m") {
		t.Fatalf("call to a manual server: %v", err)
	}
	if tools, _ := e.Tools(""); len(tools) != 0 {
		t.Errorf("a manual server was started to list it: %v", tools)
	}
	if err := e.Start(ctx(t), "m"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "m.echo"}); err != nil {
		t.Fatal(err)
	}
}

// idleTimeout stops an unused server; its tools stay listed, and the next
// use starts it again.
func TestIdleTimeout(t *testing.T) {
	srv := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	srv.IdleTimeout = 300 * time.Millisecond
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	pid := pidOf(t, e, "srv")
	waitState(t, e, "srv", StateStopped)
	waitGone(t, pid)
	if tools, _ := e.Tools(""); len(tools) != 1 || tools[0].Stale {
		t.Errorf("tools of the idle server: %v", tools)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo"}); err != nil {
		t.Fatal(err)
	}
	if p := pidOf(t, e, "srv"); p == 0 || p == pid {
		t.Errorf("pid after the restart on use = %d (before %d)", p, pid)
	}
	// A call under way keeps it running past the idle timeout.
	slow := fakeServer(t, "slow", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "nap", Sleep: "600ms"}}})
	slow.IdleTimeout = 200 * time.Millisecond
	e2 := newEngine(t, slow)
	if err := e2.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := e2.CallTool(ctx(t), &CallRequest{Name: "slow.nap"}); err != nil {
		t.Fatalf("a call longer than the idle timeout: %v", err)
	}
}

// A transient server runs only for its requests.
func TestTransientActivation(t *testing.T) {
	log := filepath.Join(t.TempDir(), "events")
	srv := fakeServer(t, "tr", fakemcp.Spec{Name: "tr", EventLog: log, Tools: []fakemcp.Tool{{Name: "echo"}}})
	srv.Activation = "transient"
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if tools, _ := e.Tools(""); len(tools) != 1 {
		t.Fatalf("tools of a transient server: %v", tools)
	}
	waitState(t, e, "tr", StateStopped)
	for range 2 {
		if _, err := e.CallTool(ctx(t), &CallRequest{Name: "tr.echo"}); err != nil {
			t.Fatal(err)
		}
		st := waitState(t, e, "tr", StateStopped)
		if st.PID != 0 {
			t.Errorf("after the call: %+v", st)
		}
	}
	data, _ := os.ReadFile(log)
	if n := strings.Count(string(data), "tr start"); n != 3 {
		t.Errorf("started %d times for a listing and two calls:\n%s", n, data)
	}
}

// A transient server's tools stay listed while it starts for a request and
// stops after it: they dropped out of tools/list for that while.
func TestTransientListedWhileItRuns(t *testing.T) {
	srv := fakeServer(t, "tr", fakemcp.Spec{StartDelay: "300ms", IgnoreStdinEOF: true, Tools: []fakemcp.Tool{{Name: "echo"}}})
	srv.Activation = "transient"
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if tools, _ := e.Tools(""); len(tools) != 1 { // started to be listed
		t.Fatalf("tools of a transient server: %v", tools)
	}
	waitState(t, e, "tr", StateStopped)
	done := make(chan error, 1)
	go func() {
		_, err := e.CallTool(ctx(t), &CallRequest{Name: "tr.echo"})
		done <- err
	}()
	for _, st := range []State{StateStarting, StateStopping} {
		waitState(t, e, "tr", st)
		if tools, err := e.Tools(""); err != nil || len(tools) != 1 || tools[0].Stale {
			t.Errorf("tools while %s: %v %+v", st, err, tools)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A lazy server stopped for idleness keeps its tools listed while it starts
// again on use.
func TestIdleServerListedWhileStarting(t *testing.T) {
	srv := fakeServer(t, "lz", fakemcp.Spec{StartDelay: "300ms", Tools: []fakemcp.Tool{{Name: "echo"}}})
	srv.Activation = "lazy"
	srv.IdleTimeout = 200 * time.Millisecond
	e := newEngine(t, srv)
	if tools, _ := e.Tools(""); len(tools) != 1 {
		t.Fatalf("tools: %v", tools)
	}
	waitState(t, e, "lz", StateStopped)
	done := make(chan error, 1)
	go func() {
		_, err := e.CallTool(ctx(t), &CallRequest{Name: "lz.echo"})
		done <- err
	}()
	waitState(t, e, "lz", StateStarting)
	if tools, err := e.Tools("lz"); err != nil || len(tools) != 1 {
		t.Errorf("tools while it starts again: %v %v", err, tools)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Progress extends a request's deadline.
func TestProgressExtendsTimeout(t *testing.T) {
	srv := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{
		{Name: "steady", Progress: 6, Sleep: "600ms"},
		{Name: "silent", Sleep: "600ms"},
		{Name: "forever", Progress: 100, Sleep: "5s"},
	}})
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.steady", TimeoutMs: 300}); err != nil {
		t.Errorf("a call that reports progress timed out: %v", err)
	}
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.silent", TimeoutMs: 300})
	if KindOf(err) != KindTimeout || !strings.Contains(err.Error(), "did not answer within 300ms (") {
		t.Errorf("a silent call: %v", err)
	}
	// Progress keeps a request going up to 10 times its timeout, and the
	// error says that is what ended it, not a silence.
	_, err = e.CallTool(ctx(t), &CallRequest{Name: "srv.forever", TimeoutMs: 300})
	if KindOf(err) != KindTimeout || !regexp.MustCompile(`still ran after 3(\.\d)?s, the longest progress keeps a request with a 300ms timeout going \(10 times it\)`).MatchString(err.Error()) {
		t.Errorf("a call that reports progress past the cap: %v", err)
	}
}

// Stop holds a server down; Start by name brings it back.
func TestStopByHand(t *testing.T) {
	srv := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	srv.Activation, srv.Restart = "lazy", "on-failure"
	e := newEngine(t, srv)
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo"}); err != nil {
		t.Fatal(err)
	}
	if err := e.Stop("srv"); err != nil {
		t.Fatal(err)
	}
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo"})
	if !strings.Contains(err.Error(), "stopped with mcpctl stop") {
		t.Fatalf("call to a stopped lazy server: %v", err)
	}
	if err := e.Start(context.Background(), "srv"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo"}); err != nil {
		t.Fatal(err)
	}
	if err := e.Stop("nope"); err == nil || !errors.As(err, new(*Error)) {
		t.Errorf("Stop of an unknown server: %v", err)
	}
}

func TestBackoff(t *testing.T) {
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for n, w := range want {
		if got := backoff(n); got != w {
			t.Errorf("backoff(%d) = %s, want %s", n, got, w)
		}
	}
}

// A start that fails in a way a new start may not (killed by a signal) is
// tried again; one that exits with a code is not.
func TestStartRetried(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "killed")
	log := filepath.Join(t.TempDir(), "events")
	srv := fakeServer(t, "srv", fakemcp.Spec{Name: "srv", EventLog: log, KilledUnless: marker, Tools: []fakemcp.Tool{{Name: "echo"}}})
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatalf("start after a kill: %v", err)
	}
	data, _ := os.ReadFile(log)
	if n := strings.Count(string(data), "srv start"); n != 2 {
		t.Errorf("started %d times:\n%s", n, data)
	}

	code := 1
	log2 := filepath.Join(t.TempDir(), "events")
	bad := fakeServer(t, "bad", fakemcp.Spec{Name: "bad", EventLog: log2, Exit: &code})
	e2 := newEngine(t, bad)
	if err := e2.Start(ctx(t)); err == nil || !strings.Contains(err.Error(), "exited with code 1 during startup") {
		t.Fatalf("start of a server that exits: %v", err)
	}
	data, _ = os.ReadFile(log2)
	if n := strings.Count(string(data), "bad start"); n != 1 {
		t.Errorf("a server that exits with a code was started %d times", n)
	}
}

// A tool annotated idempotentHint is retried without being asked.
func TestIdempotentToolRetried(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "crashed")
	srv := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "once", CrashUnless: marker,
		Extra: map[string]json.RawMessage{"annotations": json.RawMessage(`{"idempotentHint": true}`)}}}})
	srv.Restart, srv.MaxRestarts = "on-failure", 3
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.once"})
	if err != nil || !strings.Contains(string(res.Result), "survived") {
		t.Fatalf("idempotent call: %v %v", res, err)
	}
}

// healthCheck pings notice a server that hangs between requests.
func TestHealthCheck(t *testing.T) {
	srv := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "hang", StopReading: true}}})
	srv.HealthInterval, srv.FailureThreshold = 200*time.Millisecond, 2
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if st := e.Status()[0]; st.State != StateReady {
		t.Fatalf("a healthy server with pings: %+v", st)
	}
	e.CallTool(ctx(t), &CallRequest{Name: "srv.hang", TimeoutMs: 50})
	st := waitState(t, e, "srv", StateUnavailable)
	if !strings.Contains(st.LastError, "a health check ping did not answer") {
		t.Errorf("lastError = %q", st.LastError)
	}
}

// A request tried several times counts as one failure toward the server's
// failureThreshold: a call retried twice that times out each time leaves
// the server degraded, not stopped (three failures in a row would).
func TestRetriesCountAsOneFailure(t *testing.T) {
	srv := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "hang", Sleep: "30s"}}})
	srv.RequestTimeout = 100 * time.Millisecond // a timeout that counts
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.hang", TimeoutMs: 100, Retry: 2})
	if KindOf(err) != KindTimeout || !strings.Contains(err.Error(), "tried 3 times") {
		t.Fatalf("a call that times out thrice: %v", err)
	}
	st := e.Status()[0]
	if st.State != StateDegraded || st.Failures != 1 {
		t.Errorf("after one call tried 3 times: %s with %d failures, want degraded with 1", st.State, st.Failures)
	}
}

// A prompt whose caller set a timeout is tried once: the timeout bounds
// the request, not each try of it.
func TestTimeoutBoundsPromptTries(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{Prompts: []fakemcp.Prompt{{Name: "slow", Sleep: "30s"}}})
	_, err := e.GetPrompt(ctx(t), &PromptRequest{Name: "srv.slow", TimeoutMs: 100})
	if KindOf(err) != KindTimeout {
		t.Fatalf("a prompt past its timeout: %v", err)
	}
	sent := int64(0)
	for _, m := range e.Metrics()[0].Methods {
		if m.Method == "prompts/get" {
			sent = m.Requests
		}
	}
	if sent != 1 {
		t.Errorf("prompts/get sent %d times, want once", sent)
	}
}

// A server started on use starts the servers it depends on first, as
// Start would; one that depends on a server that is not running and does
// not start on use fails saying which.
func TestOnUseStartsDependencies(t *testing.T) {
	x := fakeServer(t, "x", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	y := fakeServer(t, "y", fakemcp.Spec{})
	m := fakeServer(t, "m", fakemcp.Spec{})
	z := fakeServer(t, "z", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	x.Activation, x.DependsOn = "lazy", []string{"y"}
	y.Activation = "lazy"
	m.Activation = "manual"
	z.Activation, z.DependsOn = "lazy", []string{"m"}
	e := newEngine(t, x, y, m, z)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "x.echo"}); err != nil {
		t.Fatal(err)
	}
	states := map[string]State{}
	for _, st := range e.Status() {
		states[st.Name] = st.State
	}
	if states["x"] != StateReady || states["y"] != StateReady {
		t.Errorf("after a call to x, which depends on y: %v", states)
	}
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "z.echo"})
	if KindOf(err) != KindUnavailable || !strings.Contains(err.Error(), "server z depends on m, which is not running") {
		t.Errorf("a call to z, which depends on manual m: %v", err)
	}
}

// Routing a resource starts the lazy servers never listed, but not past
// the caller's context: a slow one does not hold the read for its start.
func TestRouteHonoursContext(t *testing.T) {
	docs := fakeServer(t, "docs", fakemcp.Spec{Resources: []fakemcp.Resource{{URI: "file:///x", Name: "x", Text: "x"}}})
	slow := fakeServer(t, "slow", fakemcp.Spec{StartDelay: "20s"})
	slow.Activation, slow.StartupTimeout = "lazy", 30*time.Second
	e := newEngine(t, docs, slow)
	if err := e.Start(ctx(t), "docs"); err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := e.ReadResource(c, &ResourceRequest{URI: "file:///x"})
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("the read took %s, waiting for the lazy server's start", took)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the context's deadline", err)
	}
}

// A resource no server lists, when a server that starts on use could not
// start to say what it offers: the error names that server and why.
func TestRouteNamesServerThatCouldNotStart(t *testing.T) {
	docs := fakeServer(t, "docs", fakemcp.Spec{Resources: []fakemcp.Resource{{URI: "file:///x", Name: "x", Text: "x"}}})
	code := 3
	broken := fakeServer(t, "broken", fakemcp.Spec{ExitOnInitialize: &code})
	broken.Activation = "lazy"
	e := newEngine(t, docs, broken)
	if err := e.Start(ctx(t), "docs"); err != nil {
		t.Fatal(err)
	}
	_, err := e.ReadResource(ctx(t), &ResourceRequest{URI: "file:///y"})
	var ee *Error
	if !errors.As(err, &ee) || ee.Kind != KindUnavailable {
		t.Fatalf("err = %v, want unavailable: a server that could not start may offer it", err)
	}
	if !strings.Contains(strings.Join(ee.Hint, "\n"), "server broken could not start to say what it offers: server broken exited with code 3") {
		t.Errorf("hints %q do not say why server broken offers nothing", ee.Hint)
	}
	if _, err := e.ReadResource(ctx(t), &ResourceRequest{URI: "file:///x"}); err != nil {
		t.Errorf("a resource the running server lists: %v", err)
	}
}

// A restart whose start cannot succeed (the command gone) leaves the
// running server running; a start by hand that cannot succeed leaves the
// server unavailable with why, not "stopped with mcpctl stop": before, a
// restart stopped the server, was refused, and left it held, for good to
// an agent (serve --manage's restart refuses a server stopped by hand).
func TestRestartThatCannotStart(t *testing.T) {
	srv := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	script := filepath.Join(t.TempDir(), "srv.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec \""+srv.Command+"\" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv.Command = script
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	pid := pidOf(t, e, "srv")
	if err := os.Rename(script, script+".away"); err != nil {
		t.Fatal(err)
	}
	err := e.Restart(ctx(t), "srv")
	if KindOf(err) != KindConfig || !strings.Contains(fmt.Sprint(err), "command not found") ||
		!slices.Contains(asError(err).Hint, "server srv was left running, as it was") {
		t.Fatalf("restart without its command: %#v", err)
	}
	if st := e.Status()[0]; st.State != StateReady || st.PID != pid || st.StoppedByHand {
		t.Fatalf("after the restart refused: %+v, want ready, pid %d", st, pid)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo"}); err != nil {
		t.Fatalf("a call after the restart refused: %v", err)
	}

	if err := e.Stop("srv"); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx(t), "srv"); KindOf(err) != KindConfig {
		t.Fatalf("start without its command: %v", err)
	}
	if st := e.Status()[0]; st.State != StateUnavailable || st.StoppedByHand || !strings.Contains(st.LastError, "command not found") {
		t.Fatalf("after the start refused: %+v, want unavailable with why, not stopped by hand", st)
	}
	if err := os.Rename(script+".away", script); err != nil {
		t.Fatal(err)
	}
	if err := e.Restart(ctx(t), "srv"); err != nil {
		t.Fatalf("restart with its command back: %v", err)
	}
	if st := e.Status()[0]; st.State != StateReady {
		t.Fatalf("after the restart: %+v", st)
	}
}

// A read under way when the server is restarted by hand is tried again
// once the restart is done, as after a crash with restart on-failure: it
// failed at once ("server srv was stopped during reading").
func TestReadDuringRestartByHand(t *testing.T) {
	srv := fakeServer(t, "srv", fakemcp.Spec{
		MethodDelay: map[string]string{"resources/read": "1s"},
		Resources:   []fakemcp.Resource{{URI: "file:///a.txt", Name: "a", Text: "A"}},
	})
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() {
		_, err := e.ReadResource(ctx(t), &ResourceRequest{URI: "file:///a.txt", NoCache: true})
		read <- err
	}()
	time.Sleep(300 * time.Millisecond)
	if err := e.Restart(ctx(t), "srv"); err != nil {
		t.Fatal(err)
	}
	if err := <-read; err != nil {
		t.Errorf("a read under way during a restart by hand: %v", err)
	}
}

// A start by hand refused for a server's own config (its cwd missing)
// leaves its dependency stopped by hand as it was; a restart so refused of
// a server stopped by hand leaves it unavailable with why, no longer held.
func TestRefusedStartKeepsHeldDependency(t *testing.T) {
	spec := fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}}
	db := fakeServer(t, "db", spec)
	api := fakeServer(t, "api", spec)
	api.DependsOn = []string{"db"}
	e := newEngine(t, db, api)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := e.Stop("db", "api"); err != nil {
		t.Fatal(err)
	}
	s, _ := e.lookup("api")
	gone := *api
	gone.Cwd = filepath.Join(t.TempDir(), "no-such-dir")
	s.conf.Store(&gone)
	if err := e.Start(ctx(t), "api"); KindOf(err) != KindConfig {
		t.Fatalf("start of api without its cwd: %v", err)
	}
	for _, st := range e.Status() {
		switch {
		case st.Name == "db" && (!st.StoppedByHand || st.State != StateStopped):
			t.Errorf("db, stopped by hand, after a refused start of api: %+v", st)
		case st.Name == "api" && (st.StoppedByHand || st.State != StateUnavailable):
			t.Errorf("api after its refused start: %+v", st)
		}
	}
	if err := e.Stop("api"); err != nil {
		t.Fatal(err)
	}
	if err := e.Restart(ctx(t), "api"); KindOf(err) != KindConfig {
		t.Fatalf("restart of api without its cwd: %v", err)
	}
	for _, st := range e.Status() {
		if st.Name == "api" && (st.StoppedByHand || st.State != StateUnavailable || !strings.Contains(st.LastError, "no-such-dir")) {
			t.Errorf("api after its refused restart: %+v", st)
		}
	}
}
