package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/internal/fakemcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// events reads an EventLog shared by fake servers.
func events(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

func before(t *testing.T, evs []string, first, second string) {
	t.Helper()
	i, j := slices.Index(evs, first), slices.Index(evs, second)
	if i < 0 || j < 0 || i > j {
		t.Errorf("want %q before %q, events: %q", first, second, evs)
	}
}

func TestDependencyStartOrder(t *testing.T) {
	log := filepath.Join(t.TempDir(), "events")
	db := fakeServer(t, "db", fakemcp.Spec{Name: "db", EventLog: log, StartDelay: "1s"})
	api := fakeServer(t, "api", fakemcp.Spec{Name: "api", EventLog: log})
	api.DependsOn = []string{"db"}
	web := fakeServer(t, "web", fakemcp.Spec{Name: "web", EventLog: log})
	web.DependsOn = []string{"api"}
	other := fakeServer(t, "other", fakemcp.Spec{Name: "other", EventLog: log, StartDelay: "1s"})
	// Listed dependents first: the order comes from dependsOn, not the file.
	e := newEngine(t, web, api, db, other)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	evs := events(t, log)
	before(t, evs, "db serving", "api start")
	before(t, evs, "api serving", "web start")
	// Independent servers start together: other is not held back by db.
	before(t, evs, "other start", "db serving")
	before(t, evs, "db start", "other serving")
}

// Start again after a dependency was stopped by hand: what runs keeps
// running and nothing needs starting, so it is no failure (it failed:
// "server a depends on b, which is not running", and stopped nothing).
func TestStartAgainAfterDependencyStopped(t *testing.T) {
	b := fakeServer(t, "b", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	a := fakeServer(t, "a", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	a.DependsOn = []string{"b"}
	e := newEngine(t, a, b)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := e.Stop("b"); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx(t)); err != nil {
		t.Errorf("start again: %v", err)
	}
	states := map[string]State{}
	for _, st := range e.Status() {
		states[st.Name] = st.State
	}
	if states["a"] != StateReady || states["b"] != StateStopped {
		t.Errorf("states %v, want a ready, b stopped (by hand)", states)
	}
}

func TestStartNamedBringsDependencies(t *testing.T) {
	log := filepath.Join(t.TempDir(), "events")
	db := fakeServer(t, "db", fakemcp.Spec{Name: "db", EventLog: log})
	api := fakeServer(t, "api", fakemcp.Spec{Name: "api", EventLog: log})
	api.DependsOn = []string{"db"}
	other := fakeServer(t, "other", fakemcp.Spec{Name: "other", EventLog: log})
	e := newEngine(t, db, api, other)
	if err := e.Start(ctx(t), "api"); err != nil {
		t.Fatal(err)
	}
	evs := events(t, log)
	before(t, evs, "db serving", "api start")
	if slices.Contains(evs, "other start") {
		t.Errorf("other started though only api was asked for: %q", evs)
	}
}

func TestFailedDependencyStartsNoDependent(t *testing.T) {
	log := filepath.Join(t.TempDir(), "events")
	code := 3
	db := fakeServer(t, "db", fakemcp.Spec{Name: "db", EventLog: log, Exit: &code, Stderr: []string{"no database"}})
	api := fakeServer(t, "api", fakemcp.Spec{Name: "api", EventLog: log})
	api.DependsOn = []string{"db"}
	e := newEngine(t, db, api)
	err := e.Start(ctx(t))
	var ee *Error
	if !errors.As(err, &ee) || ee.Server != "db" || !strings.Contains(ee.Message, "server db exited with code 3 during startup") {
		t.Fatalf("err = %v", err)
	}
	// The dependent is not blamed: the error is about db alone.
	if strings.Contains(ee.Message, "api") {
		t.Errorf("error blames api: %s", ee.Message)
	}
	if evs := events(t, log); slices.Contains(evs, "api start") {
		t.Errorf("api started although db failed: %q", evs)
	}
}

// A server that a failed dependency kept from starting says so: in the
// start's error (a call names it, perhaps, not the dependency), in its
// status, its state event and a listing. It stayed stopped with no error:
// a listing and a watch left it out in silence.
func TestFailedDependencyTellsItsDependents(t *testing.T) {
	code := 3
	db := fakeServer(t, "db", fakemcp.Spec{Exit: &code})
	api := fakeServer(t, "api", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	api.DependsOn = []string{"db"}
	web := fakeServer(t, "web", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	web.DependsOn = []string{"api"}
	e := newEngine(t, db, api, web)
	sub := e.Events(EventFilter{Types: []string{EventState}, Servers: []string{"api", "web"}})
	defer sub.Close()
	err := e.Start(ctx(t))
	var ee *Error
	if !errors.As(err, &ee) || ee.Server != "db" {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{
		"server api was not started: its dependency db did not start",
		"server web was not started: its dependency api did not start",
	} {
		if !slices.Contains(ee.Hint, want) {
			t.Errorf("hints %q lack %q", ee.Hint, want)
		}
	}
	lastErr := map[string]string{}
	for _, st := range e.Status() {
		lastErr[st.Name] = st.LastError
	}
	if want := "server api was not started: its dependency db did not start"; lastErr["api"] != want {
		t.Errorf("api's last error %q, want %q", lastErr["api"], want)
	}
	if want := "server web was not started: its dependency api did not start"; lastErr["web"] != want {
		t.Errorf("web's last error %q, want %q", lastErr["web"], want)
	}
	_, err = e.Tools("")
	if !errors.As(err, &ee) || !strings.Contains(ee.Message, "servers db, api, web") {
		t.Errorf("listing: %v", err)
	}
	told := map[string]bool{}
	timeout := time.After(5 * time.Second)
	for len(told) < 2 {
		select {
		case ev := <-sub.C:
			if ev.To == StateUnavailable {
				told[ev.Server] = true
			}
		case <-timeout:
			t.Fatalf("state events told only %v of api and web", told)
		}
	}
}

// A failure elsewhere cuts a chain's start short: its servers say the start
// was called off for that failure, not that their dependency failed, which
// it did not (review).
func TestCutChainBlamesTheFailure(t *testing.T) {
	code := 3
	root := fakeServer(t, "root", fakemcp.Spec{StartDelay: "2s", Tools: []fakemcp.Tool{{Name: "echo"}}})
	mid := fakeServer(t, "mid", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	mid.DependsOn = []string{"root"}
	leaf := fakeServer(t, "leaf", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	leaf.DependsOn = []string{"mid"}
	x := fakeServer(t, "x", fakemcp.Spec{Exit: &code})
	e := newEngine(t, root, mid, leaf, x)
	err := e.Start(ctx(t))
	var ee *Error
	if !errors.As(err, &ee) || ee.Server != "x" {
		t.Fatalf("err = %v", err)
	}
	for _, h := range ee.Hint {
		if strings.Contains(h, "its dependency") {
			t.Errorf("a hint blames a dependency: %q", h)
		}
	}
	// Each server the failure called off is named (QA round 2: one named
	// to start, and called off, was not).
	for _, name := range []string{"mid", "leaf"} {
		if want := "server " + name + ": start called off, as server x failed to start"; !slices.Contains(ee.Hint, want) {
			t.Errorf("hints %q lack %q", ee.Hint, want)
		}
	}
	for _, st := range e.Status() {
		switch st.Name {
		case "mid", "leaf":
			if want := "server " + st.Name + ": start called off, as server x failed to start"; st.LastError != want {
				t.Errorf("%s's last error %q, want %q", st.Name, st.LastError, want)
			}
		}
	}
}

// A caller that gives up while a server waits for its dependency to start
// on use does not leave that server failed with the caller's deadline: it
// was never tried (review).
func TestCallerGivingUpIsNoServerFailure(t *testing.T) {
	dep := fakeServer(t, "dep", fakemcp.Spec{StartDelay: "3s", Tools: []fakemcp.Tool{{Name: "echo"}}})
	dep.Activation = "lazy"
	e := newEngine(t, dep)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	app := fakeServer(t, "app", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	app.DependsOn = []string{"dep"}
	short, cancel := context.WithTimeout(ctx(t), 500*time.Millisecond)
	defer cancel()
	e.Reload(short, &config.Config{File: "mcp.json", Servers: []*config.Server{dep, app}})
	for _, st := range e.Status() {
		if st.Name == "app" && st.LastError != "" {
			t.Errorf("app's last error %q: the caller's deadline, not app's failure", st.LastError)
		}
	}
}

// Servers stopped by hand, then started by hand and failing, are said to
// be left out of a listing: they let their lists go at the stop, and the
// listing left them out in silence, exit 0 (QA round 2).
func TestListSaysStartedByHandAndFailed(t *testing.T) {
	code := 3
	c := fakeServer(t, "c", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	b := fakeServer(t, "b", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	b.DependsOn = []string{"c"}
	d := fakeServer(t, "d", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	e := newEngine(t, b, c, d)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := e.Stop("b", "c"); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(fakemcp.Spec{Exit: &code})
	if err := os.WriteFile(c.Args[len(c.Args)-1], data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx(t), "b"); err == nil {
		t.Fatal("b started, its dependency failing")
	}
	tools, err := e.Tools("")
	var ee *Error
	if len(tools) != 1 || tools[0].Name() != "d.echo" || !errors.As(err, &ee) || !strings.Contains(ee.Message, "the list leaves out servers b, c") {
		t.Errorf("tools %v, err %v", tools, err)
	}
}

// Starts of each server of a chain, at once (as a command without a
// session starts them), tell a dependent why it did not start once, not
// once per start (QA round 2: a watch got the same event two or three
// times).
func TestDependentToldOnce(t *testing.T) {
	code := 3
	c := fakeServer(t, "c", fakemcp.Spec{Exit: &code})
	b := fakeServer(t, "b", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	b.DependsOn = []string{"c"}
	a := fakeServer(t, "a", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	a.DependsOn = []string{"b", "c"}
	e := newEngine(t, a, b, c)
	sub := e.Events(EventFilter{Types: []string{EventState}, Servers: []string{"a", "b"}})
	defer sub.Close()
	var waits []func() error
	for _, name := range []string{"a", "b", "c"} {
		waits = append(waits, e.StartAsync(ctx(t), name))
	}
	for _, wait := range waits {
		wait()
	}
	told := map[string]int{}
	for len(sub.C) > 0 {
		if ev := <-sub.C; ev.To == StateUnavailable {
			told[ev.Server]++
		}
	}
	if told["a"] != 1 || told["b"] != 1 {
		t.Errorf("unavailable told %v times, want once each", told)
	}
}

// The same error told again is no news for a watch, but its newer details
// (the stderr lines, hints the later telling has) are what status and
// requests give (final read: they were dropped with the event).
func TestSameErrorKeepsNewerDetails(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{}))
	s, _ := e.lookup("srv")
	sub := e.Events(EventFilter{Types: []string{EventState}})
	defer sub.Close()
	s.mu.Lock()
	s.setState(StateUnavailable, errorf(KindUnavailable, "srv", "server srv closed its stdout"))
	later := errorf(KindUnavailable, "srv", "server srv closed its stdout").hint("start it again with: mcpctl restart srv")
	later.Stderr = []string{"boom"}
	s.setState(StateUnavailable, later)
	got := s.unavailableLocked()
	s.mu.Unlock()
	if len(got.Stderr) != 1 || len(got.Hint) != 1 {
		t.Errorf("the error given: %+v, want the later one's stderr and hint", got)
	}
	if n := len(sub.C); n != 1 {
		t.Errorf("%d events, want 1", n)
	}
}

func TestDisabledServer(t *testing.T) {
	dir := t.TempDir()
	on := fakeServer(t, "on", fakemcp.Spec{})
	off := fakeServer(t, "off", fakemcp.Spec{PIDFile: filepath.Join(dir, "off.pid")})
	off.Disabled = true
	e := newEngine(t, on, off)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "off.pid")); err == nil {
		t.Error("a disabled server was started")
	}
	for _, st := range e.Status() {
		if st.Name == "off" && st.State != StateDisabled {
			t.Errorf("status of off: %s, want disabled", st.State)
		}
	}
	err := e.Start(ctx(t), "off")
	var ee *Error
	if !errors.As(err, &ee) || ee.Kind != KindUsage || ee.Message != "server off is disabled in the config (test:1:1)" {
		t.Errorf("starting a disabled server: %#v", err)
	}
}

// plainFake is fakeServer run by a binary without the race detector, which
// resource limits need.
func plainFake(t *testing.T, name string, spec fakemcp.Spec) *config.Server {
	t.Helper()
	exe, err := fakemcp.PlainBinary()
	if err != nil {
		t.Fatal(err)
	}
	s := fakeServer(t, name, spec)
	s.Command = exe
	return s
}

func TestMemoryLimitKillsAndIsNamed(t *testing.T) {
	s := plainFake(t, "hog", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "grow", Allocate: 512}, {Name: "small", Allocate: 8}}})
	s.Limits.Memory = 128 << 20
	e := newEngine(t, s)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	// Under the limit, the server works.
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "hog.small"}); err != nil {
		t.Fatal(err)
	}
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "hog.grow"})
	var ee *Error
	if !errors.As(err, &ee) || !strings.Contains(ee.Message, "exited with code 2 (memory limit of 128 MiB reached)") {
		t.Fatalf("err = %v", err)
	}
	st := waitState(t, e, "hog", StateUnavailable)
	if !strings.Contains(st.LastError, "(memory limit of 128 MiB reached)") {
		t.Errorf("status does not name the limit: %+v", st)
	}
}

// A crash with no word of memory, under a memory limit, may still be the
// limit (Go's collector can die of it with a bare SIGSEGV): the error says
// so; not for a server without a limit, one that named it, one that
// exited with an error of its own, or a Go program's panic or deadlock.
func TestCrashUnderMemoryLimitHints(t *testing.T) {
	one, two := 1, 2
	tools := []fakemcp.Tool{
		{Name: "segv", Stderr: "SIGSEGV: segmentation violation\nPC=0x4351dd m=3 sigcode=1 addr=0x0", Crash: &two},
		{Name: "quit", Stderr: "API_KEY is not set", Crash: &one},
		{Name: "panic", Stderr: "panic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4a1b2c]", Crash: &two},
		{Name: "deadlock", Stderr: "fatal error: all goroutines are asleep - deadlock!", Crash: &two},
		{Name: "grow", Allocate: 512},
	}
	for _, tc := range []struct {
		name   string
		memory int64
		tool   string
		exit   string
		hint   bool
	}{
		{"go crash", 1 << 30, "segv", "exited with code 2", true},
		{"unlimited", 0, "segv", "exited with code 2", false},
		{"own error", 1 << 30, "quit", "exited with code 1", false},
		{"go panic", 1 << 30, "panic", "exited with code 2", false},
		{"go deadlock", 1 << 30, "deadlock", "exited with code 2", false},
		{"named", 128 << 20, "grow", "exited with code 2 (memory limit of 128 MiB reached)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := plainFake(t, "srv", fakemcp.Spec{Tools: tools})
			s.Limits.Memory = tc.memory
			e := newEngine(t, s)
			if err := e.Start(ctx(t)); err != nil {
				t.Fatal(err)
			}
			_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv." + tc.tool})
			var ee *Error
			if !errors.As(err, &ee) || !strings.Contains(ee.Message, tc.exit) {
				t.Fatalf("err = %v", err)
			}
			hinted := slices.ContainsFunc(ee.Hint, func(h string) bool { return strings.Contains(h, "it ran with a memory limit of") })
			if hinted != tc.hint {
				t.Errorf("memory hint = %v, want %v: %q", hinted, tc.hint, ee.Hint)
			}
			if tc.hint && !slices.ContainsFunc(ee.Hint, func(h string) bool {
				return strings.HasPrefix(h, "it ran with a memory limit of 1 GiB (limits.memory, test:1:1): a process short of memory can crash without saying so")
			}) {
				t.Errorf("hints: %q", ee.Hint)
			}
		})
	}
}

func TestOpenFilesLimitApplies(t *testing.T) {
	// The server's own view of its limits is the proof they were applied.
	s := plainFake(t, "fd", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "limits", Limits: true}}})
	s.Limits = config.Limits{OpenFiles: 77, CPUTime: 90 * time.Second, Memory: 1 << 30}
	e := newEngine(t, s)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "fd.limits"})
	if err != nil {
		t.Fatal(err)
	}
	text := string(res.Result)
	for _, want := range []string{`\"nofile\":77`, `\"cpu\":90`, `\"data\":1073741824`} {
		if !strings.Contains(text, want) {
			t.Errorf("limits seen by the server lack %s: %s", want, text)
		}
	}
}

func TestServerTimeoutsFromConfig(t *testing.T) {
	s := fakeServer(t, "slow", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "nap", Sleep: "10s"}}})
	s.RequestTimeout = 300 * time.Millisecond
	e := New(&config.Config{File: "mcp.json", Servers: []*config.Server{s}}, nil)
	t.Cleanup(func() { e.Close() })
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "slow.nap"})
	var ee *Error
	if !errors.As(err, &ee) || ee.Kind != KindTimeout || !strings.Contains(ee.Message, "300ms") {
		t.Fatalf("err = %v", err)
	}
}

func waitState(t *testing.T, e *Engine, name string, want State) ServerStatus {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, st := range e.Status() {
			if st.Name == name && (st.State == want || time.Now().After(deadline)) {
				if st.State != want {
					t.Fatalf("server %s is %s, want %s: %+v", name, st.State, want, st)
				}
				return st
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCPUTimeLimitIsNamed(t *testing.T) {
	s := plainFake(t, "spinner", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "spin", Spin: true}}})
	s.Limits.CPUTime = time.Second
	e := newEngine(t, s)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "spinner.spin"})
	var ee *Error
	if !errors.As(err, &ee) || !strings.Contains(ee.Message, "(cpuTime limit of 1s used up)") {
		t.Fatalf("err = %v", err)
	}
}

func TestIncludeExcludeTools(t *testing.T) {
	tools := []fakemcp.Tool{{Name: "read_file"}, {Name: "read_dir"}, {Name: "write_file"}, {Name: "delete"}}
	s := fakeServer(t, "fs", fakemcp.Spec{Tools: tools})
	s.IncludeTools = []string{"read_*", "write_*"}
	s.ExcludeTools = []string{"*_dir"}
	e := newEngine(t, s)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	list, err := e.Tools("")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list {
		names = append(names, tl.Name())
	}
	if want := []string{"fs.read_file", "fs.write_file"}; !slices.Equal(names, want) {
		t.Errorf("tools = %q, want %q", names, want)
	}
	if st := e.Status()[0]; st.Tools != 2 {
		t.Errorf("status counts %d tools, want 2", st.Tools)
	}
	for name, want := range map[string]string{
		"fs.read_dir": `tool fs.read_dir is hidden by the config: it matches "*_dir" of excludeTools (test:1:1)`,
		"fs.delete":   `tool fs.delete is hidden by the config: it matches no glob of includeTools (test:1:1)`,
	} {
		_, err := e.CallTool(ctx(t), &CallRequest{Name: name})
		var ee *Error
		if !errors.As(err, &ee) || ee.Kind != KindUsage || ee.Message != want {
			t.Errorf("calling %s: %v, want %s", name, err, want)
		}
		if _, err := e.Tools(name); err == nil || err.Error() != want {
			t.Errorf("listing %s: %v", name, err)
		}
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "fs.write_file"}); err != nil {
		t.Errorf("an included tool: %v", err)
	}
}

func TestReloadKeepsUnchangedRestartsChanged(t *testing.T) {
	dir := t.TempDir()
	pidOf := func(name string) int { return readPID(t, filepath.Join(dir, name+".pid")) }
	keep := fakeServer(t, "keep", fakemcp.Spec{PIDFile: filepath.Join(dir, "keep.pid")})
	change := fakeServer(t, "change", fakemcp.Spec{PIDFile: filepath.Join(dir, "change.pid")})
	gone := fakeServer(t, "gone", fakemcp.Spec{PIDFile: filepath.Join(dir, "gone.pid")})
	e := newEngine(t, keep, change, gone)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	keepPID, changePID, gonePID := pidOf("keep"), pidOf("change"), pidOf("gone")

	// The new config: keep as it was (written elsewhere in the file),
	// change with a new env value, gone removed, added new.
	keep2 := *keep
	keep2.Source = "mcp.json:20:3"
	change2 := *change
	change2.Env = map[string]string{"MCPCTL_TEST_FAKE": "1", "LEVEL": "2"}
	added := fakeServer(t, "added", fakemcp.Spec{PIDFile: filepath.Join(dir, "added.pid")})
	sub := e.Events(EventFilter{Types: []string{EventConfig}})
	defer sub.Close()
	res, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: []*config.Server{&keep2, &change2, added}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Unchanged, []string{"keep"}) || !slices.Equal(res.Restarted, []string{"change"}) ||
		!slices.Equal(res.Added, []string{"added"}) || !slices.Equal(res.Removed, []string{"gone"}) || len(res.Failed) != 0 {
		t.Errorf("result = %+v", res)
	}
	if pidOf("keep") != keepPID || !alive(keepPID) {
		t.Errorf("the unchanged server was restarted or stopped")
	}
	if p := pidOf("change"); p == changePID || !alive(p) || alive(changePID) {
		t.Errorf("the changed server was not restarted: pid %d → %d", changePID, p)
	}
	if alive(gonePID) {
		t.Errorf("the removed server still runs")
	}
	if !alive(pidOf("added")) {
		t.Errorf("the added server does not run")
	}
	var names []string
	for _, st := range e.Status() {
		names = append(names, st.Name+":"+string(st.State))
	}
	if want := []string{"keep:ready", "change:ready", "added:ready"}; !slices.Equal(names, want) {
		t.Errorf("status = %q, want %q", names, want)
	}
	// The kept server now has its new place, for messages.
	if s, _ := e.lookup("keep"); s.cfg().Source != "mcp.json:20:3" {
		t.Errorf("the kept server is still placed at %s", s.cfg().Source)
	}
	select {
	case ev := <-sub.C:
		if !slices.Equal(ev.Restarted, []string{"change"}) || !slices.Equal(ev.Added, []string{"added"}) || !slices.Equal(ev.Removed, []string{"gone"}) {
			t.Errorf("config event = %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Error("no config event")
	}
}

// A server removed by a reload and added back by another is a new server:
// its figures start from nothing (no restart, no request of the old one's),
// while a server restarted by a reload keeps counting.
func TestReloadAddedBackStartsItsMetricsAfresh(t *testing.T) {
	back := fakeServer(t, "back", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	kept := fakeServer(t, "kept", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	e := newEngine(t, back, kept)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"back.echo", "kept.echo"} {
		if _, err := e.CallTool(ctx(t), &CallRequest{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	kept2 := *kept
	kept2.Env = map[string]string{"MCPCTL_TEST_FAKE": "1", "LEVEL": "2"}
	for _, servers := range [][]*config.Server{{&kept2}, {back, kept}} {
		if _, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: servers}); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]string{}
	for _, m := range e.Metrics() {
		got[m.Server] = fmt.Sprintf("restarts %d, requests %d", m.Restarts, m.Requests)
	}
	want := map[string]string{"back": "restarts 0, requests 0", "kept": "restarts 2, requests 1"}
	if !maps.Equal(got, want) {
		t.Errorf("metrics: %v, want %v", got, want)
	}
}

// A watch is told a server disabled by an edit, and enabled again, as
// status shows it: its stop ended at "stopped", and status said
// "disabled" with no event to tell it.
func TestReloadTellsDisabledAndEnabled(t *testing.T) {
	srv := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	sub := e.Events(EventFilter{Types: []string{EventState}})
	defer sub.Close()
	off := *srv
	off.Disabled = true
	for _, sc := range []*config.Server{&off, srv} {
		if _, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: []*config.Server{sc}}); err != nil {
			t.Fatal(err)
		}
		if sc == &off {
			if st := e.Status()[0].State; st != StateDisabled {
				t.Fatalf("status after disabling: %s", st)
			}
		}
	}
	waitState(t, e, "srv", StateReady)
	want := []string{"ready>stopping", "stopping>stopped", "stopped>disabled", "disabled>stopped", "stopped>starting", "starting>ready"}
	var got []string
	timeout := time.After(5 * time.Second)
	for len(got) < len(want) {
		select {
		case ev := <-sub.C:
			got = append(got, string(ev.From)+">"+string(ev.To))
		case <-timeout:
			t.Fatalf("events %q, want %q", got, want)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

// A failed server an edit disables: each event goes from where the one
// before left it, and the last to disabled (review: the disabling was told
// as from stopped, whatever status showed).
func TestReloadDisablesAFailedServer(t *testing.T) {
	code := 3
	for _, lazy := range []bool{false, true} {
		// Crashed, or its start on use failed.
		srv := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "crash", Crash: &code}}})
		if lazy {
			srv = fakeServer(t, "srv", fakemcp.Spec{Exit: &code})
			srv.Activation = "lazy"
		}
		t.Run(fmt.Sprint("lazy ", lazy), func(t *testing.T) { disableFailed(t, srv) })
	}
}

func disableFailed(t *testing.T, srv *config.Server) {
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	e.CallTool(ctx(t), &CallRequest{Name: "srv.crash"})
	waitState(t, e, "srv", StateUnavailable)
	sub := e.Events(EventFilter{Types: []string{EventState}})
	defer sub.Close()
	off := *srv
	off.Disabled = true
	if _, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: []*config.Server{&off}}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(sub.C) > 0 {
		ev := <-sub.C
		got = append(got, string(ev.From)+">"+string(ev.To))
	}
	from := "unavailable"
	for _, ev := range got {
		if !strings.HasPrefix(ev, from+">") {
			t.Errorf("events %q: %s does not go on from %s", got, ev, from)
		}
		_, from, _ = strings.Cut(ev, ">")
	}
	if from != "disabled" {
		t.Errorf("events %q end at %s, not disabled", got, from)
	}
}

// While a reload stops the server it replaces (slow to stop), status
// shows it stopping, with its pid, not the new one stopped, and not the
// slow reload's note a server "stopped" with nothing to wait for (QA
// round 2).
func TestReloadStatusWhileTheOldOneStops(t *testing.T) {
	srv := fakeServer(t, "srv", fakemcp.Spec{IgnoreStdinEOF: true, IgnoreSIGTERM: true, Tools: []fakemcp.Tool{{Name: "echo"}}})
	srv.ShutdownTimeout = 2 * time.Second
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	pid := e.Status()[0].PID
	changed := *srv
	changed.Env = map[string]string{"MCPCTL_TEST_FAKE": "1", "LEVEL": "2"}
	done := make(chan error, 1)
	go func() {
		_, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: []*config.Server{&changed}})
		done <- err
	}()
	seen := map[State]bool{}
	for st := e.Status()[0]; ; st = e.Status()[0] {
		if st.State == StateStopped {
			t.Fatalf("status said stopped during the reload: %+v", st)
		}
		if st.State == StateStopping && st.PID != pid {
			t.Errorf("stopping with pid %d, want the old one's %d", st.PID, pid)
		}
		seen[st.State] = true
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if !seen[StateStopping] {
				t.Errorf("status never said stopping: saw %v", seen)
			}
			if st := waitState(t, e, "srv", StateReady); st.PID == pid {
				t.Errorf("the old process %d still runs", pid)
			}
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// A server a reload restarts reads as starting while its start waits for
// a dependency's, never as stopped: it was read so between its old one's
// stop and its own start.
func TestReloadStatusWhileItWaitsForADependency(t *testing.T) {
	dep := fakeServer(t, "dep", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	srv := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	srv.DependsOn = []string{"dep"}
	e := newEngine(t, dep, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	slowDep := *fakeServer(t, "dep", fakemcp.Spec{StartDelay: "1s", Tools: []fakemcp.Tool{{Name: "echo"}}})
	changed := *srv
	changed.Env = map[string]string{"MCPCTL_TEST_FAKE": "1", "LEVEL": "2"}
	neverStoppedDuringReload(t, e, "srv", []*config.Server{&slowDep, &changed})
}

// neverStoppedDuringReload reloads e with servers, and fails the test if
// status says server name is stopped before the reload is over.
func neverStoppedDuringReload(t *testing.T, e *Engine, name string, servers []*config.Server) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: servers})
		done <- err
	}()
	for {
		for _, st := range e.Status() {
			if st.Name == name && st.State == StateStopped {
				t.Fatalf("status said %s stopped during the reload: %+v", name, st)
			}
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// A reload that replaces a quick server and a slow one shows the quick
// one as itself (starting, its start to come) once its old one stopped,
// not its old one's stopped until the slow stop is over.
func TestReloadShowsEachOnceItsOldOneStopped(t *testing.T) {
	slow := fakeServer(t, "slow", fakemcp.Spec{IgnoreStdinEOF: true, IgnoreSIGTERM: true, Tools: []fakemcp.Tool{{Name: "echo"}}})
	slow.ShutdownTimeout = 2 * time.Second
	quick := fakeServer(t, "quick", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	e := newEngine(t, slow, quick)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	var changed []*config.Server
	for _, s := range []*config.Server{slow, quick} {
		c := *s
		c.Env = map[string]string{"MCPCTL_TEST_FAKE": "1", "LEVEL": "2"}
		changed = append(changed, &c)
	}
	neverStoppedDuringReload(t, e, "quick", changed)
}

// A server stopped by hand whose settings change takes them and stays
// stopped, as Stop promises, until Start names it.
func TestReloadKeepsHeldServerStopped(t *testing.T) {
	dir := t.TempDir()
	held := fakeServer(t, "held", fakemcp.Spec{PIDFile: filepath.Join(dir, "held.pid")})
	e := newEngine(t, held)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := e.Stop("held"); err != nil {
		t.Fatal(err)
	}
	changed := *held
	changed.Env = map[string]string{"MCPCTL_TEST_FAKE": "1", "LEVEL": "2"}
	res, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: []*config.Server{&changed}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Updated, []string{"held"}) || len(res.Restarted) != 0 || len(res.Started) != 0 {
		t.Errorf("result = %+v", res)
	}
	st := e.Status()[0]
	if st.State != StateStopped || !st.StoppedByHand {
		t.Errorf("after the reload: %s, stopped by hand %v", st.State, st.StoppedByHand)
	}
	if err := e.Start(ctx(t), "held"); err != nil {
		t.Fatal(err)
	}
	if s, _ := e.lookup("held"); s.cfg().Env["LEVEL"] != "2" {
		t.Errorf("started with the old settings: %v", s.cfg().Env)
	}
}

// A changed server runs again after the reload if it ran before it,
// whatever its activation (a manual one started by hand, a lazy one
// started on use), and one that did not run, or that the change disables,
// stays stopped and is not said to be restarted. Before, the manual and
// lazy ones were stopped and said "restarted", and a call then found the
// manual one "starts only by hand".
func TestReloadRestartsWhatRan(t *testing.T) {
	spec := fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}}
	manual := fakeServer(t, "manual", spec)
	manual.Activation = "manual"
	lazy := fakeServer(t, "lazy", spec)
	lazy.Activation = "lazy"
	idle := fakeServer(t, "idle", spec)
	idle.Activation = "lazy"
	off := fakeServer(t, "off", spec)
	e := newEngine(t, manual, lazy, idle, off)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx(t), "manual"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "lazy.echo"}); err != nil {
		t.Fatal(err)
	}
	pids := map[string]int{"manual": pidOf(t, e, "manual"), "lazy": pidOf(t, e, "lazy")}
	var next []*config.Server
	for _, s := range []*config.Server{manual, lazy, idle, off} {
		c := *s
		c.Env = map[string]string{"MCPCTL_TEST_FAKE": "1", "LEVEL": "2"}
		next = append(next, &c)
	}
	next[3].Disabled = true
	res, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: next})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Restarted, []string{"manual", "lazy"}) || !slices.Equal(res.Updated, []string{"idle", "off"}) || len(res.Failed) != 0 {
		t.Errorf("result = %+v", res)
	}
	for _, st := range e.Status() {
		want := StateStopped
		if st.Name == "off" {
			want = StateDisabled
		}
		if pids[st.Name] != 0 {
			want = StateReady
			if st.PID == pids[st.Name] || st.PID == 0 {
				t.Errorf("%s: pid %d, before the reload %d: not restarted", st.Name, st.PID, pids[st.Name])
			}
		}
		if st.State != want {
			t.Errorf("%s after the reload: %s, want %s", st.Name, st.State, want)
		}
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "manual.echo"}); err != nil {
		t.Errorf("a call of the manual server after the reload: %v", err)
	}
}

// A reload that restarts a server whose dependency was stopped by hand
// does not start it without that dependency: it fails, naming it.
func TestReloadRestartNeedsItsDependency(t *testing.T) {
	dir := t.TempDir()
	b := fakeServer(t, "b", fakemcp.Spec{PIDFile: filepath.Join(dir, "b.pid")})
	a := fakeServer(t, "a", fakemcp.Spec{PIDFile: filepath.Join(dir, "a.pid")})
	a.DependsOn = []string{"b"}
	e := newEngine(t, b, a)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := e.Stop("b"); err != nil {
		t.Fatal(err)
	}
	a2 := *a
	a2.Env = map[string]string{"MCPCTL_TEST_FAKE": "1", "LEVEL": "2"}
	res, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: []*config.Server{b, &a2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) != 1 || !strings.Contains(res.Failed[0].Error(), "server a depends on b, which is not running: server b was stopped with mcpctl stop") {
		t.Errorf("failed = %v", res.Failed)
	}
	for _, st := range e.Status() {
		if st.Name == "a" && st.State == StateReady {
			t.Errorf("a runs without its dependency")
		}
	}
}

func TestReloadFailureKeepsOthers(t *testing.T) {
	ok := fakeServer(t, "ok", fakemcp.Spec{})
	e := newEngine(t, ok)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	broken := &config.Server{Name: "broken", Command: "mcpctl-no-such-command", Cwd: t.TempDir(), StartupTimeout: time.Second, Source: "mcp.json:3:5"}
	res, err := e.Reload(ctx(t), &config.Config{Servers: []*config.Server{ok, broken}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) != 1 || res.Failed[0].Server != "broken" || !slices.Equal(res.Unchanged, []string{"ok"}) {
		t.Fatalf("result = %+v", res)
	}
	st := e.Status()
	if st[0].State != StateReady || st[1].State != StateUnavailable || !strings.Contains(st[1].LastError, "command not found") {
		t.Errorf("status = %+v", st)
	}

	// A config that cannot be loaded changes nothing and is reported.
	e.ReloadFailed(&config.Error{File: "mcp.json", Line: 2, Col: 7, Msg: "expected string"})
	if ce := e.ConfigError(); ce == nil || ce.Message != "mcp.json:2:7: expected string" {
		t.Errorf("config error = %v", ce)
	}
	if st := e.Status(); len(st) != 2 || st[0].State != StateReady {
		t.Errorf("a failed load changed the servers: %+v", st)
	}
	if _, err := e.Reload(ctx(t), &config.Config{Servers: []*config.Server{ok}}); err != nil {
		t.Fatal(err)
	}
	if e.ConfigError() != nil {
		t.Error("a good reload did not clear the config error")
	}
}

// A reload that changes only what is read when needed (here requestTimeout)
// keeps the server running, and the change applies at once: a new
// requestTimeout must not kill the calls in flight.
func TestReloadRequestTimeoutKeepsServer(t *testing.T) {
	dir := t.TempDir()
	srv := fakeServer(t, "s", fakemcp.Spec{PIDFile: filepath.Join(dir, "s.pid"), Tools: []fakemcp.Tool{{Name: "slow", Sleep: "30s"}}})
	srv.RequestTimeout = 30 * time.Second
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	pid := readPID(t, filepath.Join(dir, "s.pid"))
	srv2 := *srv
	srv2.RequestTimeout = 100 * time.Millisecond
	res, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: []*config.Server{&srv2}})
	if err != nil || !slices.Equal(res.Updated, []string{"s"}) || len(res.Unchanged)+len(res.Restarted) != 0 {
		t.Fatalf("reload: %+v, %v; want s updated", res, err)
	}
	if readPID(t, filepath.Join(dir, "s.pid")) != pid || !alive(pid) {
		t.Error("a new requestTimeout restarted the server")
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "s.slow"}); KindOf(err) != KindTimeout || !strings.Contains(err.Error(), "within 100ms") {
		t.Errorf("a call after the reload: %v, want the new timeout", err)
	}
}

// A reload asked for while another starts an added server that fails does
// not start it again: it reports the failure of the start it waited for.
// One asked for afterwards tries it again, as reload starts what is down.
func TestReloadDoesNotRetryAStartItWaitedFor(t *testing.T) {
	ok := fakeServer(t, "ok", fakemcp.Spec{})
	e := newEngine(t, ok)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	hung := fakeServer(t, "hung", fakemcp.Spec{StartDelay: "1m"})
	hung.StartupTimeout = 500 * time.Millisecond
	cfg := &config.Config{Servers: []*config.Server{ok, hung}}
	first := make(chan *ReloadResult)
	go func() {
		res, _ := e.Reload(ctx(t), cfg)
		first <- res
	}()
	waitState(t, e, "hung", StateStarting)
	res, err := e.Reload(ctx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(res.Started, "hung") || len(res.Failed) != 1 || res.Failed[0].Server != "hung" {
		t.Errorf("the reload that waited: %+v", res)
	}
	if res := <-first; len(res.Failed) != 1 || !slices.Equal(res.Added, []string{"hung"}) {
		t.Errorf("the first reload: %+v", res)
	}
	before := waitState(t, e, "hung", StateUnavailable).Since
	if res, _ := e.Reload(ctx(t), cfg); len(res.Failed) != 1 || !waitState(t, e, "hung", StateUnavailable).Since.After(before) {
		t.Errorf("a reload after did not try it again: %+v", res)
	}
}

// A server that crashed (rather than failed to start) while a reload
// waited for the one before is started by it, as reload starts what is
// down.
func TestReloadStartsAServerThatCrashedWhileItWaited(t *testing.T) {
	nine := 9
	srv := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "die", Crash: &nine}}})
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	sub := e.Events(EventFilter{Types: []string{EventConfig}})
	defer sub.Close()
	e.reloadMu.Lock() // a reload under way
	done := make(chan *ReloadResult)
	go func() {
		res, _ := e.Reload(ctx(t), &config.Config{Servers: []*config.Server{srv}})
		done <- res
	}()
	time.Sleep(50 * time.Millisecond) // the reload is asked for, and waits
	e.CallTool(ctx(t), &CallRequest{Name: "srv.die"})
	waitState(t, e, "srv", StateUnavailable)
	e.reloadMu.Unlock()
	if res := <-done; !slices.Equal(res.Started, []string{"srv"}) || len(res.Failed) != 0 {
		t.Errorf("reload: %+v", res)
	}
	// Its event says so as its result does (it said nothing).
	if ev := next(t, sub); !slices.Equal(ev.Started, []string{"srv"}) {
		t.Errorf("config event: %+v", ev)
	}
}

// A request that comes while a reload restarts its server (stopped, not yet
// started again) waits for the start: it failed as "server is stopped".
func TestRequestDuringReloadRestartWaits(t *testing.T) {
	spec := fakemcp.Spec{StartDelay: "300ms", IgnoreStdinEOF: true, Tools: []fakemcp.Tool{{Name: "echo"}}}
	srv := fakeServer(t, "srv", spec)
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	changed := *srv
	changed.Args = append(slices.Clone(srv.Args), "changed")
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Reload(ctx(t), &config.Config{Servers: []*config.Server{&changed}})
	}()
	waitState(t, e, "srv", StateStopping) // the old one, the new one waiting to start
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo"}); err != nil {
		t.Errorf("a call during the reload's restart: %v", err)
	}
	<-done
}

// A server a reload tries to start again and that fails is in Failed, not
// in Started.
func TestReloadStartedOnlyWhatStarted(t *testing.T) {
	ok := fakeServer(t, "ok", fakemcp.Spec{})
	four := 4
	bad := fakeServer(t, "bad", fakemcp.Spec{Exit: &four})
	e := newEngine(t, ok)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Servers: []*config.Server{ok, bad}}
	e.Reload(ctx(t), cfg) // adds bad, which fails
	res, err := e.Reload(ctx(t), cfg)
	if err != nil || len(res.Started) != 0 || len(res.Failed) != 1 || res.Failed[0].Server != "bad" {
		t.Errorf("second reload: %+v, %v", res, err)
	}
}

// A glob that came from the environment is a secret: the refusal of a tool
// it hides does not show it.
func TestHiddenToolGlobRedacted(t *testing.T) {
	dir := t.TempDir()
	spec, _ := json.Marshal(fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "hidden"}, {Name: "echo"}}})
	os.WriteFile(filepath.Join(dir, "spec.json"), spec, 0o644)
	exe, _ := os.Executable()
	data, _ := json.Marshal(map[string]any{"servers": map[string]any{"fs": map[string]any{
		"command": exe, "args": []string{filepath.Join(dir, "spec.json")}, "env": map[string]string{"MCPCTL_TEST_FAKE": "1"},
		"excludeTools": []string{"${SECRET_GLOB}"}}}})
	cfg, err := config.Parse("mcp.json", data, dir, func(k string) (string, bool) {
		if k == "SECRET_GLOB" {
			return "hid*", true
		}
		return os.LookupEnv(k)
	})
	if err != nil {
		t.Fatal(err)
	}
	e := New(cfg, nil)
	defer e.Close()
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	_, err = e.CallTool(ctx(t), &CallRequest{Name: "fs.hidden"})
	if err == nil || strings.Contains(err.Error(), "hid*") || !strings.Contains(err.Error(), "is hidden by the config") {
		t.Errorf("calling a hidden tool: %v", err)
	}
}

// A reload that restarts a server (its settings changed) keeps what the
// watches following it asked: the new process is subscribed to their
// resources and given their log level again, as after a restart, and a
// watch's release unsubscribes it there. They were lost: the watches went
// on and heard nothing more.
func TestReloadKeepsSubscriptions(t *testing.T) {
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls.log")
	spec := surface
	spec.ProtocolVersion, spec.Subscribe, spec.CallLog = "2025-11-25", true, calls
	spec.Tools = []fakemcp.Tool{{Name: "touch", Touch: "file:///notes.txt"}}
	srv := fakeServer(t, "srv", spec)
	e := New(&config.Config{File: "mcp.json", Servers: []*config.Server{srv}}, &Options{ShutdownTimeout: 2 * time.Second, LogDir: dir, Trace: true})
	t.Cleanup(func() { e.Close() })
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	updates := e.Events(EventFilter{Types: []string{EventResourceUpdated}})
	defer updates.Close()
	release, err := e.SubscribeResource(ctx(t), "file:///notes.txt", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.SetLogLevel(ctx(t), "debug"); err != nil {
		t.Fatal(err)
	}
	changed := *srv
	changed.Env = map[string]string{"MCPCTL_TEST_FAKE": "1", "CHANGED": "1"}
	res, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: []*config.Server{&changed}})
	if err != nil || !slices.Equal(res.Restarted, []string{"srv"}) {
		t.Fatalf("reload: %+v, %v", res, err)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.touch"}); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, updates); ev.URI != "file:///notes.txt" {
		t.Errorf("event: %+v", ev)
	}
	wire, _ := os.ReadFile(filepath.Join(dir, "srv.wire.jsonl"))
	if n := strings.Count(string(wire), `"method":"logging/setLevel"`); n != 2 {
		t.Errorf("logging/setLevel sent %d times over the two processes, want 2", n)
	}
	release()
	data, _ := os.ReadFile(calls)
	if strings.Count(string(data), `"subscribe":"file:///notes.txt"`) != 2 || !strings.Contains(string(data), `"unsubscribe":"file:///notes.txt"`) {
		t.Errorf("calls: %s", data)
	}
	for _, m := range e.Metrics()[0].Methods {
		if m.Method == "resources/unsubscribe" && m.Errors != 0 {
			t.Errorf("the unsubscribe failed: it went to the retired connection")
		}
	}
}

// A read while a reload restarts the server that lists the URI waits for
// that start, as a call does: it was told, as a usage error, that no server
// lists the URI (with a "did you mean" another one).
func TestReadDuringReloadRestart(t *testing.T) {
	spec := fakemcp.Spec{StartDelay: "300ms", Resources: []fakemcp.Resource{{URI: "file:///a.txt", Name: "a", Text: "A"}}}
	srv := fakeServer(t, "srv", spec)
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	old, _ := e.lookup("srv")
	changed := *srv
	changed.Env = map[string]string{"MCPCTL_TEST_FAKE": "1", "CHANGED": "1"}
	reloaded := make(chan error, 1)
	go func() {
		_, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: []*config.Server{&changed}})
		reloaded <- err
	}()
	for s, _ := e.lookup("srv"); s == old; s, _ = e.lookup("srv") {
		time.Sleep(time.Millisecond)
	}
	res, err := e.ReadResource(ctx(t), &ResourceRequest{URI: "file:///a.txt", NoCache: true})
	if err != nil || !strings.Contains(string(res.Result), `"A"`) {
		t.Errorf("a read during the reload's restart: %v", err)
	}
	if err := <-reloaded; err != nil {
		t.Fatal(err)
	}
}

// Two watches that ask one server for different log levels each get what
// they asked: the server is set to the more verbose, each watch drops what
// is below its own, and the one that stays keeps its level when the other
// ends. The last to ask used to win for both (the info watch heard
// nothing once an error watch began), and kept winning after it ended.
func TestWatchLogLevelsHeld(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25", Tools: []fakemcp.Tool{{Name: "log", Log: "hello"}}})
	type watch struct {
		logs   chan string
		cancel context.CancelFunc
		done   chan error
	}
	start := func(level string) *watch {
		w := &watch{logs: make(chan string, 10), done: make(chan error, 1)}
		wctx, cancel := context.WithCancel(ctx(t))
		w.cancel = cancel
		ready := make(chan struct{})
		go func() {
			w.done <- e.Watch(wctx, &WatchRequest{Filter: EventFilter{Servers: []string{"srv"}}, LogLevel: level}, func(ev Event) error {
				switch ev.Type {
				case EventReady:
					close(ready)
				case EventLog:
					w.logs <- ev.Level
				}
				return nil
			})
		}()
		select {
		case <-ready:
		case err := <-w.done:
			t.Fatalf("watch at %s: %v", level, err)
		}
		return w
	}
	heard := func(w *watch) bool {
		select {
		case <-w.logs:
			return true
		case <-time.After(500 * time.Millisecond):
			return false
		}
	}
	info := start("info")
	errs := start("error")
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.log"}); err != nil {
		t.Fatal(err)
	}
	if !heard(info) {
		t.Error("the info watch heard nothing once an error watch began")
	}
	if heard(errs) {
		t.Error("the error watch heard an info message")
	}
	errs.cancel()
	<-errs.done
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.log"}); err != nil {
		t.Fatal(err)
	}
	if !heard(info) {
		t.Error("the info watch heard nothing after the error watch ended")
	}
	info.cancel()
	<-info.done
}

// A watch's log level held on a server that is not running when the watch
// begins (lazy) is set on it when it starts, and again when it is started
// anew: it was set only on the servers ready then, and a go-sdk server
// sends no log message until a level is set.
func TestWatchLogLevelOnAServerStartedLater(t *testing.T) {
	lazy := fakeServer(t, "lz", fakemcp.Spec{ProtocolVersion: "2025-11-25", Tools: []fakemcp.Tool{{Name: "log", Log: "hello"}}})
	lazy.Activation = "lazy"
	e := newEngine(t, lazy)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	logs := make(chan string, 10)
	wctx, cancel := context.WithCancel(ctx(t))
	done := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		done <- e.Watch(wctx, &WatchRequest{Filter: EventFilter{Servers: []string{"lz"}}, LogLevel: "info"}, func(ev Event) error {
			switch ev.Type {
			case EventReady:
				close(ready)
			case EventLog:
				logs <- string(ev.Data)
			}
			return nil
		})
	}()
	defer func() { cancel(); <-done }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("watch: %v", err)
	}
	if st := e.Status()[0]; st.State == StateReady {
		t.Fatalf("the lazy server runs before any request: %+v", st)
	}
	for _, step := range []string{"started on use", "started again by hand"} {
		if _, err := e.CallTool(ctx(t), &CallRequest{Name: "lz.log"}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-logs:
		case <-time.After(2 * time.Second):
			t.Errorf("%s: the watch at info heard no log message", step)
		}
		if err := e.Stop("lz"); err != nil {
			t.Fatal(err)
		}
		if err := e.Start(ctx(t), "lz"); err != nil {
			t.Fatal(err)
		}
	}
}

// Reloads while other goroutines list and start, as a program following
// its config file does: the engine is safe for concurrent use, and the
// race detector found the check of a made engine reading the config a
// reload replaced.
func TestReloadWhileListing(t *testing.T) {
	s := fakeServer(t, "s", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	e := newEngine(t, s)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	done, listing := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			e.Tools("")
			e.Inspect("s")
			e.Start(ctx(t), "s")
			if i == 0 {
				close(listing)
			}
		}
	})
	<-listing
	for range 50 {
		if _, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: []*config.Server{s}}); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
}

// The watches' holds go to the servers a reload adds: a log level held
// on all servers is held on a server added (or added back) too, and its
// release takes out that hold alone. It was released by name on whichever
// server had the name then: on one added back, it took out another
// watch's hold, and that watch heard nothing more.
func TestReloadAddedServerHasTheWatchesHolds(t *testing.T) {
	spec := fakemcp.Spec{ProtocolVersion: "2025-11-25", Tools: []fakemcp.Tool{{Name: "log", Log: "hello"}}}
	a, b := fakeServer(t, "a", spec), fakeServer(t, "b", spec)
	e := newEngine(t, a, b)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	releaseAll, err := e.holdLogLevel(ctx(t), "debug")
	if err != nil {
		t.Fatal(err)
	}
	for _, servers := range [][]*config.Server{{a}, {a, b}} {
		if _, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: servers}); err != nil {
			t.Fatal(err)
		}
	}
	back, _ := e.lookup("b")
	if got := back.levels.effective(); got != "debug" {
		t.Fatalf("the server added back holds %q, want the watch's debug", got)
	}
	releaseB, err := e.holdLogLevel(ctx(t), "info", "b")
	if err != nil {
		t.Fatal(err)
	}
	defer releaseB()
	releaseAll()
	if got := back.levels.effective(); got != "info" {
		t.Errorf("after the first watch's release, b holds %q, want the other watch's info", got)
	}
}

// A watch's subscription outlives its server's removal and return by
// reloads: the server added back is subscribed again and its updates
// reach the watch (it heard nothing more). A subscription handed to the
// server a reload restarts holds it running, as it held the old one: an
// idleTimeout stopped it.
func TestReloadKeepsSubscriptionsAcrossRemoval(t *testing.T) {
	spec := surface
	spec.ProtocolVersion, spec.Subscribe = "2025-11-25", true
	spec.Tools = []fakemcp.Tool{{Name: "touch", Touch: "file:///notes.txt"}}
	srv := fakeServer(t, "srv", spec)
	srv.IdleTimeout = 300 * time.Millisecond
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	updates := e.Events(EventFilter{Types: []string{EventResourceUpdated}})
	defer updates.Close()
	release, err := e.SubscribeResource(ctx(t), "file:///notes.txt", "srv")
	if err != nil {
		t.Fatal(err)
	}
	for _, servers := range [][]*config.Server{{}, {srv}} {
		if _, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: servers}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.touch"}); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, updates); ev.URI != "file:///notes.txt" {
		t.Errorf("event: %+v", ev)
	}

	changed := *srv
	changed.Env = map[string]string{"MCPCTL_TEST_FAKE": "1", "CHANGED": "1"}
	if _, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: []*config.Server{&changed}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * srv.IdleTimeout)
	if st := e.Status()[0]; st.State != StateReady {
		t.Errorf("the restarted server a watch follows: %s (%s), want ready", st.State, st.LastError)
	}
	// Let go, it stops for want of use, as the server it replaced would.
	release()
	waitState(t, e, "srv", StateStopped)
}

// An edit whose new command is not there leaves the running server
// running, as it was, and says so in Failed; the edit that mends it
// restarts it. The server was stopped and left unavailable.
func TestReloadWithACommandNotFoundKeepsTheServer(t *testing.T) {
	srv := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	pid := pidOf(t, e, "srv")
	sub := e.Events(EventFilter{Types: []string{EventConfig}})
	defer sub.Close()
	broken := *srv
	broken.Command = filepath.Join(t.TempDir(), "no-such-server")
	res, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: []*config.Server{&broken}})
	if err != nil {
		t.Fatal(err)
	}
	// The config event and the status say which server's edit failed.
	select {
	case ev := <-sub.C:
		if len(ev.Failed) != 1 || !strings.HasPrefix(ev.Failed[0], "srv: command not found") {
			t.Errorf("config event: %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Error("no config event")
	}
	if st := e.Status()[0]; !strings.HasPrefix(st.EditError, "command not found") {
		t.Errorf("status after the edit: editError %q", st.EditError)
	}
	// Undone, the edit is no longer pending.
	if _, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: []*config.Server{srv}}); err != nil {
		t.Fatal(err)
	}
	if st := e.Status()[0]; st.EditError != "" || st.PID != pid {
		t.Errorf("after the edit was undone: %+v", st)
	}
	res, err = e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: []*config.Server{&broken}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) != 1 || res.Failed[0].Kind != KindConfig || !strings.Contains(res.Failed[0].Message, "command not found") ||
		!slices.Contains(res.Failed[0].Hint, "server srv runs on with its settings from before the edit") || len(res.Restarted) != 0 {
		t.Fatalf("result: %+v (failed %v)", res, res.Failed)
	}
	if st := e.Status()[0]; st.State != StateReady || st.PID != pid {
		t.Fatalf("after the edit: %+v, want ready with pid %d", st, pid)
	}
	mended := *srv
	mended.Env = map[string]string{"MCPCTL_TEST_FAKE": "1", "LEVEL": "2"}
	res, err = e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: []*config.Server{&mended}})
	if err != nil || !slices.Equal(res.Restarted, []string{"srv"}) || len(res.Failed) != 0 {
		t.Fatalf("the mending reload: %+v, %v", res, err)
	}
	if st := e.Status()[0]; st.State != StateReady || st.PID == pid || st.EditError != "" {
		t.Errorf("after the mending edit: %+v", st)
	}
}

// A server stopped by hand whose restart's start is to come reads as
// starting, and not as stopped by hand: status said both at once.
func TestStatusStartingIsNotStoppedByHand(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}}))
	s, _ := e.lookup("srv")
	s.mu.Lock()
	s.lc.held = true
	s.mu.Unlock()
	done := s.markRestarting()
	defer done()
	if st := e.Status()[0]; st.State != StateStarting || st.StoppedByHand {
		t.Errorf("status: %s, stopped by hand %v; want starting, not by hand", st.State, st.StoppedByHand)
	}
}

// A request with a timeout of its own does not wait longer than that for
// the start it set off (a server that starts on use): it fails with a
// timeout that says the start goes on, and a later request finds the
// server up. Read and prompt likewise.
func TestRequestTimeoutBoundsStartOnUse(t *testing.T) {
	spec := fakemcp.Spec{StartDelay: "2s", Tools: []fakemcp.Tool{{Name: "echo"}},
		Prompts: []fakemcp.Prompt{{Name: "p", Text: "hi", Arguments: []*mcp.PromptArgument{{Name: "who"}}}}, Resources: []fakemcp.Resource{{URI: "file:///a", Text: "a"}},
		Completions: map[string][]string{"who": {"Ann"}}}
	for _, kind := range []string{"call", "prompt", "read", "complete"} {
		t.Run(kind, func(t *testing.T) {
			lazy := fakeServer(t, "lazy", spec)
			lazy.Activation = "lazy"
			e := newEngine(t, lazy)
			if err := e.Start(ctx(t)); err != nil {
				t.Fatal(err)
			}
			ask := func(timeoutMs int64) error {
				var err error
				switch kind {
				case "call":
					_, err = e.CallTool(ctx(t), &CallRequest{Name: "lazy.echo", TimeoutMs: timeoutMs})
				case "prompt":
					_, err = e.GetPrompt(ctx(t), &PromptRequest{Name: "lazy.p", TimeoutMs: timeoutMs})
				case "read":
					_, err = e.ReadResource(ctx(t), &ResourceRequest{URI: "file:///a", Server: "lazy", TimeoutMs: timeoutMs})
				case "complete":
					_, err = e.Complete(ctx(t), &CompleteRequest{Ref: "lazy.p", Argument: "who", TimeoutMs: timeoutMs})
				}
				return err
			}
			// The start takes 2s: without the bound the request waited
			// for it, and answered.
			err := ask(300)
			if ee := asError(err); ee == nil || ee.Kind != KindTimeout || ee.Message != "server lazy did not finish starting within 300ms, the request's timeout; its start goes on" {
				t.Fatalf("the first request: %v", err)
			}
			waitState(t, e, "lazy", StateReady)
			if err := ask(5000); err != nil {
				t.Errorf("the next request: %v", err)
			}
		})
	}
}

// The bound is on a start the request waits for, not on the wait for a
// restart due after a crash: the request waits for it, as before, and is
// answered.
func TestRequestTimeoutWaitsForARestart(t *testing.T) {
	one := 1
	s := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}, {Name: "crash", Crash: &one}}})
	s.Restart, s.MaxRestarts = "on-failure", 3
	e := newEngine(t, s)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.crash"}); err == nil {
		t.Fatal("the crash answered")
	}
	waitState(t, e, "srv", StateUnavailable)
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo", TimeoutMs: 300}); err != nil {
		t.Errorf("the call after the crash: %v", err)
	}
}
