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
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var surface = fakemcp.Spec{
	Instructions: "Use the greet prompt.",
	Prompts: []fakemcp.Prompt{{Name: "greet", Description: "Greets", Text: "Hello {{name}} from {{place}}",
		Arguments: []*mcp.PromptArgument{{Name: "name", Required: true}, {Name: "place"}}}},
	Resources: []fakemcp.Resource{
		{URI: "file:///notes.txt", Name: "notes", MIMEType: "text/plain", Text: "some notes"},
		{URI: "file:///logo.png", Name: "logo", MIMEType: "image/png", Blob: "AAEC"},
	},
	Templates:   []fakemcp.Template{{URITemplate: "db://tables/{table}", Name: "table", Text: "rows of"}},
	Completions: map[string][]string{"name": {"Alice", "Albert", "Bob"}, "table": {"users", "orders"}},
	Tools:       []fakemcp.Tool{{Name: "echo"}},
}

func startOne(t *testing.T, name string, spec fakemcp.Spec) *Engine {
	t.Helper()
	e := newEngine(t, fakeServer(t, name, spec))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	return e
}

func text(t *testing.T, raw json.RawMessage, path ...string) string {
	t.Helper()
	var v any
	json.Unmarshal(raw, &v)
	for _, p := range path {
		switch c := v.(type) {
		case map[string]any:
			v = c[p]
		case []any:
			var i int
			json.Unmarshal([]byte(p), &i)
			if i < len(c) {
				v = c[i]
			} else {
				v = nil
			}
		}
	}
	s, _ := v.(string)
	return s
}

func TestPrompts(t *testing.T) {
	e := startOne(t, "srv", surface)
	prompts, err := e.Prompts("")
	if err != nil || len(prompts) != 1 || prompts[0].Name() != "srv.greet" || len(prompts[0].Arguments()) != 2 {
		t.Fatalf("prompts: %v %v", err, prompts)
	}
	res, err := e.GetPrompt(ctx(t), &PromptRequest{Name: "srv.greet", Pairs: []string{"name=Ann", "place=Oslo"}})
	if err != nil || text(t, res.Result, "messages", "0", "content", "text") != "Hello Ann from Oslo" || res.Cached {
		t.Fatalf("get: %v %s", err, res.Result)
	}
	for _, tc := range []struct {
		pairs []string
		want  string
	}{
		{[]string{"place=Oslo"}, "name: required, but missing"},
		{[]string{"name=Ann", "plase=x"}, "plase: unknown argument (did you mean place?)"},
		{[]string{"name:=1"}, "is not key=value"},
	} {
		_, err := e.GetPrompt(ctx(t), &PromptRequest{Name: "srv.greet", Pairs: tc.pairs})
		if KindOf(err) != KindUsage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.pairs, err, tc.want)
		}
	}
	var ee *Error
	if _, err := e.GetPrompt(ctx(t), &PromptRequest{Name: "srv.gret"}); !errors.As(err, &ee) || ee.Kind != KindUsage || strings.Join(ee.Candidates, ",") != "srv.greet" {
		t.Errorf("unknown prompt: %v", err)
	}
}

func TestCacheHitMissInvalidation(t *testing.T) {
	spec := surface
	spec.Tools = []fakemcp.Tool{{Name: "addPrompt", AddPrompt: "later"}, {Name: "touch", Touch: "file:///notes.txt"}}
	spec.ReadTTLMs = 300_000 // its reads stay fresh for cacheTTL (2026-07-28)
	e := startOne(t, "srv", spec)
	get := func(noCache bool) *PromptResult {
		t.Helper()
		res, err := e.GetPrompt(ctx(t), &PromptRequest{Name: "srv.greet", Pairs: []string{"name=Ann"}, NoCache: noCache})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if get(false).Cached {
		t.Fatal("first get came from the cache")
	}
	hit := get(false)
	if !hit.Cached || !strings.Contains(string(hit.Result), `"mcpctl/cache":{"ageSeconds":`) {
		t.Fatalf("second get: cached=%v %s", hit.Cached, hit.Result)
	}
	if get(true).Cached {
		t.Error("--no-cache answered from the cache")
	}
	// A changed prompt list invalidates the server's prompts.
	sub := e.Events(EventFilter{Types: []string{EventListChanged}})
	defer sub.Close()
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.addPrompt"}); err != nil {
		t.Fatal(err)
	}
	ev := next(t, sub)
	if ev.List != "prompts" || strings.Join(ev.Added, ",") != "srv.later" {
		t.Errorf("list_changed event: %+v", ev)
	}
	if get(false).Cached {
		t.Error("prompt answered from the cache after prompts list_changed")
	}
	// Resource reads are cached per URI.
	read := func() *ResourceResult {
		res, err := e.ReadResource(ctx(t), &ResourceRequest{URI: "file:///notes.txt"})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	read()
	if !read().Cached {
		t.Error("second read not cached")
	}
	// A server with cacheTTL 0 is not cached.
	e.servers["srv"].cfg().CacheTTL = 0
	e.cache.invalidate("srv", "resources/read")
	read()
	if read().Cached {
		t.Error("read cached with cacheTTL 0")
	}
}

func next(t *testing.T, sub *Subscription) Event {
	t.Helper()
	select {
	case ev := <-sub.C:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
	return Event{}
}

func TestResourcesAndRouting(t *testing.T) {
	e := newEngine(t, fakeServer(t, "a", surface), fakeServer(t, "b", fakemcp.Spec{
		Templates: []fakemcp.Template{{URITemplate: "db://tables/{table}", Text: "b has"}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	rs, err := e.Resources("")
	if err != nil || len(rs.Resources) != 2 || len(rs.Templates) != 2 || rs.Resources[0].Server != "a" {
		t.Fatalf("resources: %v %+v", err, rs)
	}
	res, err := e.ReadResource(ctx(t), &ResourceRequest{URI: "file:///notes.txt"})
	if err != nil || res.Server != "a" || text(t, res.Result, "contents", "0", "text") != "some notes" {
		t.Fatalf("read listed: %v %+v", err, res)
	}
	blob, err := e.ReadResource(ctx(t), &ResourceRequest{URI: "file:///logo.png"})
	if err != nil || text(t, blob.Result, "contents", "0", "blob") != "AAEC" {
		t.Fatalf("read blob: %v %s", err, blob.Result)
	}
	// Two servers' templates match: ambiguous, unless a server is named.
	_, err = e.ReadResource(ctx(t), &ResourceRequest{URI: "db://tables/users"})
	var ee *Error
	if !errors.As(err, &ee) || ee.Kind != KindUsage || strings.Join(ee.Candidates, ",") != "a,b" {
		t.Fatalf("ambiguous: %v", err)
	}
	res, err = e.ReadResource(ctx(t), &ResourceRequest{URI: "db://tables/users", Server: "b"})
	if err != nil || text(t, res.Result, "contents", "0", "text") != "b has db://tables/users" {
		t.Fatalf("read via template: %v %s", err, res.Result)
	}
	if _, err := e.ReadResource(ctx(t), &ResourceRequest{URI: "nope://x"}); KindOf(err) != KindUsage {
		t.Errorf("unroutable: %v", err)
	}
}

func TestCompleteAndInspect(t *testing.T) {
	spec := surface
	spec.ProtocolVersion = "2025-11-25"
	spec.Tasks = true
	e := startOne(t, "srv", spec)
	res, err := e.Complete(ctx(t), &CompleteRequest{Ref: "srv.greet", Argument: "name", Value: "Al"})
	if err != nil || !strings.Contains(string(res.Result), `"values":["Alice","Albert"]`) {
		t.Fatalf("prompt completion: %v %s", err, res.Result)
	}
	res, err = e.Complete(ctx(t), &CompleteRequest{Ref: "db://tables/{table}", Argument: "table", Value: "o"})
	if err != nil || !strings.Contains(string(res.Result), `"values":["orders"]`) {
		t.Fatalf("template completion: %v %s", err, res.Result)
	}
	if _, err := e.Complete(ctx(t), &CompleteRequest{Ref: "x://{nope}", Argument: "a"}); KindOf(err) != KindUsage {
		t.Errorf("unknown template: %v", err)
	}
	ins, err := e.Inspect("srv")
	if err != nil || len(ins) != 1 {
		t.Fatal(err)
	}
	in := ins[0]
	if in.ProtocolVersion != "2025-11-25" || in.Instructions != "Use the greet prompt." || !strings.Contains(string(in.Capabilities), `"tasks"`) ||
		!strings.Contains(string(in.ServerInfo), `"fake"`) || len(in.Prompts) != 1 || len(in.Resources) != 2 || len(in.Templates) != 1 || len(in.Tools) != 1 {
		out, _ := json.Marshal(in)
		t.Errorf("inspect: %s", out)
	}
}

func TestEventsLogsProgressStderr(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{Stderr: []string{"early line"}, Tools: []fakemcp.Tool{
		{Name: "work", Log: "working hard", Progress: 3, Sleep: "150ms"},
	}})
	sub := e.Events(EventFilter{Stderr: true})
	defer sub.Close()
	set, err := e.SetLogLevel(ctx(t), "info")
	if err != nil || strings.Join(set, ",") != "srv" {
		t.Fatalf("set log level: %v %v", set, err)
	}
	if _, err := e.SetLogLevel(ctx(t), "loud"); KindOf(err) != KindUsage {
		t.Errorf("bad level: %v", err)
	}
	var mu sync.Mutex
	var seen []Progress
	_, err = e.CallTool(ctx(t), &CallRequest{Name: "srv.work", OnProgress: func(p Progress) {
		mu.Lock()
		seen = append(seen, p)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	// All of them, and before the answer.
	mu.Lock()
	if len(seen) != 3 || seen[2].Progress != 3 || seen[0].Total != 3 || seen[0].Message != "step 1 of 3" {
		t.Errorf("progress seen by the caller: %+v", seen)
	}
	mu.Unlock()
	var gotLog, gotProgress bool
	for !(gotLog && gotProgress) {
		ev := next(t, sub)
		gotLog = gotLog || (ev.Type == EventLog && string(ev.Data) == `"working hard"` && ev.Level == "info")
		gotProgress = gotProgress || (ev.Type == EventProgress && ev.Total == 3)
	}
}

func TestStderrEvents(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "complain", Stderr: "disk almost full"}}})
	with := e.Events(EventFilter{Stderr: true})
	defer with.Close()
	without := e.Events(EventFilter{})
	defer without.Close()
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.complain"}); err != nil {
		t.Fatal(err)
	}
	for {
		if ev := next(t, with); ev.Type == EventStderr {
			if ev.Line != "disk almost full" || ev.Server != "srv" {
				t.Errorf("stderr event: %+v", ev)
			}
			break
		}
	}
	for {
		select {
		case ev := <-without.C:
			if ev.Type == EventStderr {
				t.Errorf("stderr sent to a subscriber that did not ask: %+v", ev)
			}
			continue
		default:
		}
		break
	}
}

func TestListChangedRefreshes(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "grow", AddTools: []string{"new1", "new2"}}, {Name: "shrink", RemoveTool: []string{"grow"}}}})
	sub := e.Events(EventFilter{Types: []string{EventListChanged}})
	defer sub.Close()
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.grow"}); err != nil {
		t.Fatal(err)
	}
	for want := 2; want > 0; {
		ev := next(t, sub)
		want -= len(ev.Added)
	}
	tools, _ := e.Tools("srv")
	if len(tools) != 4 {
		t.Errorf("tools after list_changed: %d", len(tools))
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.shrink"}); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, sub); strings.Join(ev.Removed, ",") != "srv.grow" {
		t.Errorf("removed: %+v", ev)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.grow"}); KindOf(err) != KindUsage {
		t.Errorf("call to a removed tool: %v", err)
	}
}

// A start that changes what the server lists (a restart of one that had
// grown its tools, a crash) tells list_changed, as the server's own
// notice does: a watcher following the lists went stale.
func TestListChangedAcrossRestart(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "grow", AddTools: []string{"new1"}}, {Name: "echo"}}})
	sub := e.Events(EventFilter{Types: []string{EventListChanged}})
	defer sub.Close()
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.grow"}); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, sub); strings.Join(ev.Added, ",") != "srv.new1" {
		t.Fatalf("added: %+v", ev)
	}
	if err := e.Restart(ctx(t), "srv"); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, sub); ev.List != "tools" || strings.Join(ev.Removed, ",") != "srv.new1" || len(ev.Added) != 0 {
		t.Errorf("after a restart: %+v", ev)
	}
	// A restart that changes nothing tells nothing.
	if err := e.Restart(ctx(t), "srv"); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-sub.C:
		t.Errorf("a restart that changed nothing told %+v", ev)
	case <-time.After(200 * time.Millisecond):
	}
}

// A reload whose new filters change what a server lists (it restarts, as
// a new server) tells list_changed too.
func TestListChangedAcrossReloadFilters(t *testing.T) {
	spec := fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}, {Name: "drop"}}}
	srv := fakeServer(t, "srv", spec)
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	sub := e.Events(EventFilter{Types: []string{EventListChanged}})
	defer sub.Close()
	next := *srv
	next.ExcludeTools = []string{"drop"}
	if _, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: []*config.Server{&next}}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-sub.C:
		if ev.List != "tools" || strings.Join(ev.Removed, ",") != "srv.drop" || len(ev.Added) != 0 {
			t.Errorf("after the reload: %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Error("no list_changed after a reload that hid a tool")
	}
}

func TestResourceSubscription(t *testing.T) {
	for _, version := range []string{"2025-11-25", ""} {
		t.Run("protocol "+version, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "calls.log")
			spec := surface
			spec.ProtocolVersion = version
			spec.Subscribe, spec.CallLog = true, log
			spec.Tools = []fakemcp.Tool{{Name: "touch", Touch: "file:///notes.txt"}}
			e := startOne(t, "srv", spec)
			sub := e.Events(EventFilter{Types: []string{EventResourceUpdated}})
			defer sub.Close()
			release, err := e.SubscribeResource(ctx(t), "file:///notes.txt", "")
			if err != nil {
				t.Fatal(err)
			}
			release2, _ := e.SubscribeResource(ctx(t), "file:///notes.txt", "")
			e.ReadResource(ctx(t), &ResourceRequest{URI: "file:///notes.txt"})
			if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.touch"}); err != nil {
				t.Fatal(err)
			}
			if ev := next(t, sub); ev.URI != "file:///notes.txt" || ev.Server != "srv" {
				t.Errorf("event: %+v", ev)
			}
			if res, _ := e.ReadResource(ctx(t), &ResourceRequest{URI: "file:///notes.txt"}); res.Cached {
				t.Errorf("read cached after resources/updated")
			}
			release()
			release()
			data, _ := os.ReadFile(log)
			if strings.Count(string(data), `"subscribe"`) != 1 || strings.Contains(string(data), "unsubscribe") {
				t.Errorf("one subscription for two subscribers, none released yet: %s", data)
			}
			release2()
			if version != "" {
				data, _ = os.ReadFile(log)
				if !strings.Contains(string(data), `"unsubscribe":"file:///notes.txt"`) {
					t.Errorf("not unsubscribed after the last release: %s", data)
				}
				// The unsubscribe is a request as the subscribe is.
				counted := map[string]int64{}
				for _, m := range e.Metrics()[0].Methods {
					counted[m.Method] = m.Requests
				}
				if counted["resources/subscribe"] != 1 || counted["resources/unsubscribe"] != 1 {
					t.Errorf("metrics per method: %v", counted)
				}
				return
			}
			// On 2026-07-28 the subscription's listen stays open (a go-sdk
			// server ending one listen drops the session's list_changed
			// subscription too), so the server may go on sending updates:
			// they are not passed on once nobody follows the URI.
			for deadline := time.Now().Add(5 * time.Second); ; {
				e.CallTool(ctx(t), &CallRequest{Name: "srv.touch"})
				select {
				case <-sub.C:
					if time.Now().After(deadline) {
						t.Fatal("updates still arrive after the last release")
					}
					continue
				case <-time.After(300 * time.Millisecond):
				}
				break
			}
		})
	}
}

// A server slow to answer one URI's subscribe holds up neither a
// subscription to another URI of the same server nor its release, and
// each URI's subscribe and unsubscribe reach the server in order.
func TestSlowSubscriptionHoldsUpNoOther(t *testing.T) {
	dir := t.TempDir()
	log, answer := filepath.Join(dir, "calls.log"), filepath.Join(dir, "answer")
	spec := surface
	spec.ProtocolVersion = "2025-11-25"
	spec.Subscribe, spec.CallLog = true, log
	spec.Resources = []fakemcp.Resource{
		{URI: "file:///slow.txt", Text: "slow", SubscribeWaitFor: answer},
		{URI: "file:///fast.txt", Text: "fast"},
	}
	e := startOne(t, "srv", spec)
	slow := make(chan error, 1)
	var releaseSlow func()
	go func() {
		var err error
		releaseSlow, err = e.SubscribeResource(ctx(t), "file:///slow.txt", "")
		slow <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if data, _ := os.ReadFile(log); strings.Contains(string(data), "slow.txt") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server never got the slow subscribe")
		}
	}
	fctx, cancel := context.WithTimeout(ctx(t), 10*time.Second)
	defer cancel()
	releaseFast, err := e.SubscribeResource(fctx, "file:///fast.txt", "")
	if err != nil {
		t.Fatalf("subscribing to another URI while one is slow: %v", err)
	}
	released := make(chan struct{})
	go func() { releaseFast(); close(released) }()
	select {
	case <-released:
	case <-fctx.Done():
		t.Fatal("releasing a subscription waited for another URI's subscribe")
	}
	select {
	case err := <-slow:
		t.Fatalf("the slow subscribe returned before its answer: %v", err)
	default:
	}
	os.WriteFile(answer, nil, 0o644)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	releaseSlow()
	data, _ := os.ReadFile(log)
	want := `{"subscribe":"file:///slow.txt"}
{"subscribe":"file:///fast.txt"}
{"unsubscribe":"file:///fast.txt"}
{"unsubscribe":"file:///slow.txt"}
`
	if string(data) != want {
		t.Errorf("the server saw:\n%s\nwant:\n%s", data, want)
	}
}

// A subscriber that comes while the last one's unsubscribe is under way
// waits for it and subscribes again, and so gets updates: subscribing
// beside the unsubscribe, its subscribe could reach the server first and
// be undone by it.
func TestSubscribeDuringLastUnsubscribe(t *testing.T) {
	dir := t.TempDir()
	log, answer := filepath.Join(dir, "calls.log"), filepath.Join(dir, "answer")
	spec := surface
	spec.ProtocolVersion = "2025-11-25"
	spec.Subscribe, spec.CallLog = true, log
	spec.Resources = []fakemcp.Resource{{URI: "file:///notes.txt", Text: "notes", UnsubscribeWaitFor: answer}}
	spec.Tools = []fakemcp.Tool{{Name: "touch", Touch: "file:///notes.txt"}}
	e := startOne(t, "srv", spec)
	updates := e.Events(EventFilter{Types: []string{EventResourceUpdated}})
	defer updates.Close()

	releaseA, err := e.SubscribeResource(ctx(t), "file:///notes.txt", "")
	if err != nil {
		t.Fatal(err)
	}
	releasedA := make(chan struct{})
	go func() { releaseA(); close(releasedA) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if data, _ := os.ReadFile(log); strings.Contains(string(data), "unsubscribe") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server never got the unsubscribe")
		}
	}
	type subscribed struct {
		release func()
		err     error
	}
	b := make(chan subscribed, 1)
	go func() {
		release, err := e.SubscribeResource(ctx(t), "file:///notes.txt", "")
		b <- subscribed{release, err}
	}()
	select {
	case got := <-b:
		t.Fatalf("the subscribe returned (error %v) before the unsubscribe under way was answered", got.err)
	case <-time.After(300 * time.Millisecond):
	}
	os.WriteFile(answer, nil, 0o644)
	<-releasedA
	got := <-b
	if got.err != nil {
		t.Fatal(got.err)
	}
	defer got.release()
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.touch"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-updates.C:
	case <-time.After(10 * time.Second):
		data, _ := os.ReadFile(log)
		t.Fatalf("subscribed, and no update came; the server saw:\n%s", data)
	}
	data, _ := os.ReadFile(log)
	want := `{"subscribe":"file:///notes.txt"}
{"unsubscribe":"file:///notes.txt"}
{"subscribe":"file:///notes.txt"}
`
	if !strings.HasPrefix(string(data), want) {
		t.Errorf("the server saw:\n%s\nwant first:\n%s", data, want)
	}
}

func TestCancellationReachesServer(t *testing.T) {
	log := filepath.Join(t.TempDir(), "calls.log")
	e := startOne(t, "srv", fakemcp.Spec{CallLog: log, Tools: []fakemcp.Tool{{Name: "slow", Sleep: "30s"}, {Name: "echo"}}})
	c, cancel := context.WithCancel(ctx(t))
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	t0 := time.Now()
	if _, err := e.CallTool(c, &CallRequest{Name: "srv.slow"}); !errors.Is(err, context.Canceled) || time.Since(t0) > time.Second {
		t.Fatalf("err %v after %v", err, time.Since(t0))
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if data, _ := os.ReadFile(log); strings.Contains(string(data), `"cancelled":true`) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if data, _ := os.ReadFile(log); !strings.Contains(string(data), `{"cancelled":true,"tool":"slow"}`) {
		t.Errorf("the server did not see the cancellation: %s", data)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.echo"}); err != nil {
		t.Errorf("server unusable after a cancel: %v", err)
	}
}

func TestTasks(t *testing.T) {
	log := filepath.Join(t.TempDir(), "calls.log")
	e := startOne(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25", Tasks: true, CallLog: log, Tools: []fakemcp.Tool{
		{Name: "research", TaskSupport: "required", Sleep: "300ms"},
		{Name: "maybe", TaskSupport: "optional", Sleep: "100ms"},
		{Name: "never", TaskSupport: "forbidden"},
		{Name: "forever", TaskSupport: "required", Sleep: "1h"},
		{Name: "broken", TaskSupport: "required", Error: "no luck"},
	}})
	var statuses []string
	var mu sync.Mutex
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.research", Pairs: []string{"topic=go"}, OnProgress: func(p Progress) {
		mu.Lock()
		statuses = append(statuses, p.Status)
		mu.Unlock()
	}})
	if err != nil || !strings.Contains(string(res.Result), `{\"topic\":\"go\"}`) || !strings.Contains(string(res.Result), "related-task") {
		t.Fatalf("required task: %v %+v", err, res)
	}
	mu.Lock()
	if len(statuses) < 2 || statuses[0] != "working" || statuses[len(statuses)-1] != "completed" {
		t.Errorf("statuses reported: %v", statuses)
	}
	mu.Unlock()
	if res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.maybe", Task: true}); err != nil || !strings.Contains(string(res.Result), "related-task") {
		t.Errorf("optional tool with Task: %v %+v", err, res)
	}
	if res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.maybe"}); err != nil || strings.Contains(string(res.Result), "related-task") {
		t.Errorf("optional tool without Task ran as a task: %v %+v", err, res)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.never", Task: true}); KindOf(err) != KindUsage {
		t.Errorf("forbidden tool with Task: %v", err)
	}
	if res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.broken"}); err != nil || !res.IsError {
		t.Errorf("failed task: %v %+v", err, res)
	}
	c, cancel := context.WithCancel(ctx(t))
	go func() { time.Sleep(300 * time.Millisecond); cancel() }()
	t0 := time.Now()
	if _, err := e.CallTool(c, &CallRequest{Name: "srv.forever"}); !errors.Is(err, context.Canceled) || time.Since(t0) > 2*time.Second {
		t.Errorf("cancelled task: %v after %v", err, time.Since(t0))
	}
	if data, _ := os.ReadFile(log); !strings.Contains(string(data), `"taskCancelled"`) {
		t.Errorf("tasks/cancel not sent: %s", data)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.forever", TimeoutMs: 300}); KindOf(err) != KindTimeout || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("task past --timeout (not the caller's deadline): %v", err)
	}
	// The caller's own deadline is found by errors.Is, as for a call that
	// is no task.
	d, cancelD := context.WithTimeout(ctx(t), 300*time.Millisecond)
	defer cancelD()
	if _, err := e.CallTool(d, &CallRequest{Name: "srv.forever"}); KindOf(err) != KindTimeout || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("task past its context's deadline: %v", err)
	}
}

func TestStaleListsWhenUnavailable(t *testing.T) {
	seven := 7
	spec := surface
	spec.Tools = []fakemcp.Tool{{Name: "crash", Crash: &seven}}
	e := startOne(t, "srv", spec)
	e.CallTool(ctx(t), &CallRequest{Name: "srv.crash"})
	deadline := time.Now().Add(5 * time.Second)
	for e.Status()[0].State != StateUnavailable && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	tools, err := e.Tools("srv")
	if err != nil || len(tools) != 1 || !tools[0].Stale {
		t.Fatalf("stale tools: %v %+v", err, tools)
	}
	if out, _ := json.Marshal(tools[0]); !strings.Contains(string(out), `"stale":true`) {
		t.Errorf("stale not in JSON: %s", out)
	}
	prompts, err := e.Prompts("")
	if err != nil || len(prompts) != 1 || !prompts[0].Stale {
		t.Errorf("stale prompts: %v %+v", err, prompts)
	}
	rs, err := e.Resources("srv")
	if err != nil || len(rs.Resources) != 2 || !rs.Resources[0].Stale || !rs.Templates[0].Stale {
		t.Errorf("stale resources: %v %+v", err, rs)
	}
	ins, err := e.Inspect("")
	if err != nil || len(ins) != 1 || !ins[0].Stale {
		t.Errorf("stale inspect: %v", err)
	}
	if _, err := e.GetPrompt(ctx(t), &PromptRequest{Name: "srv.greet", Pairs: []string{"name=x"}}); KindOf(err) != KindUnavailable {
		t.Errorf("prompt from an unavailable server: %v", err)
	}
}

// A URI two servers offer stays ambiguous when one of them dies: where a
// request goes does not change with the servers' health. It went to the
// live one, silently.
func TestRoutingIgnoresHealth(t *testing.T) {
	seven := 7
	shared := []fakemcp.Resource{{URI: "file:///shared.txt", Name: "s", Text: "from a"}}
	e := newEngine(t,
		fakeServer(t, "a", fakemcp.Spec{Resources: shared, Tools: []fakemcp.Tool{{Name: "crash", Crash: &seven}}}),
		fakeServer(t, "b", fakemcp.Spec{Resources: []fakemcp.Resource{{URI: "file:///shared.txt", Name: "s", Text: "from b"}}}))
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	e.CallTool(ctx(t), &CallRequest{Name: "a.crash"})
	waitState(t, e, "a", StateUnavailable)
	_, err := e.ReadResource(ctx(t), &ResourceRequest{URI: "file:///shared.txt"})
	var ee *Error
	if !errors.As(err, &ee) || ee.Kind != KindUsage || strings.Join(ee.Candidates, ",") != "a,b" {
		t.Errorf("read with one of two servers dead: %v", err)
	}
	if res, err := e.ReadResource(ctx(t), &ResourceRequest{URI: "file:///shared.txt", Server: "b"}); err != nil || text(t, res.Result, "contents", "0", "text") != "from b" {
		t.Errorf("read named: %v", err)
	}
}

// The fake is an SDK server, which sends sampling requests only on
// protocols before 2026-07-28 (after, a server asks with input requests in a
// result, which the SDK's client answers through the same handler).
func TestSamplingHandler(t *testing.T) {
	const version = "2025-11-25"
	s := fakeServer(t, "srv", fakemcp.Spec{ProtocolVersion: version, Tools: []fakemcp.Tool{{Name: "ask", Sample: "What is 2+2?"}}})
	var got json.RawMessage
	e := New(&config.Config{Servers: []*config.Server{s}}, &Options{Sampling: func(_ context.Context, server string, req json.RawMessage) (json.RawMessage, error) {
		got = req
		return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"4"},"model":"test-model"}`), nil
	}})
	defer e.Close()
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	res, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.ask"})
	if err != nil || !strings.Contains(string(res.Result), `test-model`) || !strings.Contains(string(got), "What is 2+2?") {
		t.Fatalf("sampling: %v %s (handler got %s)", err, res.Result, got)
	}
	// Without a handler the server is told no one answers sampling.
	e2 := startOne(t, "srv", fakemcp.Spec{ProtocolVersion: version, Tools: []fakemcp.Tool{{Name: "ask", Sample: "x"}}})
	res, err = e2.CallTool(ctx(t), &CallRequest{Name: "srv.ask"})
	if err != nil || !res.IsError || !strings.Contains(string(res.Result), "no sampling hook is set") {
		t.Errorf("sampling without a handler: %v %+v", err, res)
	}
}

func TestMetrics(t *testing.T) {
	srv := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}, {Name: "slow", Sleep: "1s"}}})
	srv.RequestTimeout = 300 * time.Millisecond
	e := newEngine(t, srv)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		e.CallTool(ctx(t), &CallRequest{Name: "srv.echo"})
	}
	// The server's own timeout is its error; a caller's shorter one is
	// the caller giving up, as health has it.
	e.CallTool(ctx(t), &CallRequest{Name: "srv.slow"})
	e.CallTool(ctx(t), &CallRequest{Name: "srv.slow", TimeoutMs: 50})
	// A call its caller gave up (Ctrl-C) is a request, not the server's
	// error.
	gone, cancel := context.WithCancel(ctx(t))
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := e.CallTool(gone, &CallRequest{Name: "srv.slow"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled call: %v", err)
	}
	// So is one whose caller's own deadline passed first (a Go program's
	// context.WithTimeout).
	short, cancelShort := context.WithTimeout(ctx(t), 50*time.Millisecond)
	defer cancelShort()
	if _, err := e.CallTool(short, &CallRequest{Name: "srv.slow"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call past its caller's deadline: %v", err)
	}
	m := e.Metrics()
	if len(m) != 1 || m[0].Requests != 7 || m[0].Errors != 1 || m[0].Methods[0].Method != "tools/call" || m[0].Methods[0].P50Ms <= 0 {
		t.Errorf("metrics: %+v", m)
	}
}

// A transient server's start for each request is how it works, not a
// restart: metrics count none.
func TestMetricsTransientStartsAreNotRestarts(t *testing.T) {
	brief := fakeServer(t, "brief", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	brief.Activation = "transient"
	e := newEngine(t, brief)
	for range 3 {
		if _, err := e.CallTool(ctx(t), &CallRequest{Name: "brief.echo"}); err != nil {
			t.Fatal(err)
		}
		waitState(t, e, "brief", StateStopped)
	}
	if m := e.Metrics(); m[0].Restarts != 0 || m[0].Requests < 3 {
		t.Errorf("after 3 transient calls: %+v", m[0])
	}
}

// A transient server is started for each request: one that crashed during
// a call does not fail the next, which starts it again.
func TestTransientServerStartsAgainAfterCrash(t *testing.T) {
	seven := 7
	brief := fakeServer(t, "brief", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}, {Name: "die", Crash: &seven}}})
	brief.Activation = "transient"
	e := newEngine(t, brief)
	_, err := e.CallTool(ctx(t), &CallRequest{Name: "brief.die"})
	var ee *Error
	if KindOf(err) != KindUnavailable || !errors.As(err, &ee) || !slices.Equal(ee.Hint, []string{"the next request starts it again (activation: transient)"}) {
		t.Fatalf("crash: %v (%#v)", err, ee)
	}
	waitState(t, e, "brief", StateUnavailable)
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "brief.echo"}); err != nil {
		t.Errorf("the next call: %v", err)
	}
}

// A call cut short because its server died is the server's error, though
// what ended it underneath was a cancelled context: metrics count it, and
// only a caller's own giving up is left out.
func TestMetricsServerDiedMidCall(t *testing.T) {
	three := 3
	e := startOne(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "slow", Sleep: "10s"}, {Name: "die", Crash: &three}}})
	slow := make(chan error, 1)
	go func() {
		_, err := e.CallTool(ctx(t), &CallRequest{Name: "srv.slow"})
		slow <- err
	}()
	time.Sleep(200 * time.Millisecond) // for the slow call to reach the server
	e.CallTool(ctx(t), &CallRequest{Name: "srv.die"})
	if err := <-slow; KindOf(err) != KindUnavailable {
		t.Fatalf("the call its server died under: %v", err)
	}
	if m := e.Metrics(); len(m) != 1 || m[0].Requests != 2 || m[0].Errors != 2 {
		t.Errorf("metrics: %+v", m)
	}
	if got := outcomeOf(fmt.Errorf("wrapped: %w", errorf(KindUnavailable, "srv", "server srv exited").wrap(context.Canceled)), false); got != "unavailable" {
		t.Errorf("outcome of a server's end that wraps context.Canceled: %q", got)
	}
	if got := outcomeOf(context.Canceled, false); got != "cancelled" {
		t.Errorf("outcome of a caller's giving up: %q", got)
	}
}

// A request whose own context ended (its connection lost, which cancels
// it, sometimes before the end of input is read) while its caller's is
// live fails with an error that does not read as the caller's giving up:
// a Go program tells its own cancellation by errors.Is(err,
// context.Canceled). QA saw a server killed mid-call read so, now and then.
func TestRequestEndedIsNotCallerCancelled(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	s, err := e.lookup("srv")
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.acquire(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer h.release()
	for _, cause := range []error{context.Canceled, context.DeadlineExceeded, fmt.Errorf("calling \"tools/call\": %w", context.Canceled)} {
		err := h.failure(context.Background(), context.Background(), "the call to srv.echo", "tools/call", nil, cause)
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%v: the error reads as the caller's: %#v", cause, err)
		}
		if KindOf(err) == "" || !strings.Contains(err.Error(), "srv") {
			t.Errorf("%v: %v", cause, err)
		}
	}
	// What else the chain says is read before it is cut: an error answer
	// that came with a context's end is still the server's answer.
	answered := fmt.Errorf("%w (%w)", &jsonrpc.Error{Code: -32000, Message: "boom"}, context.Canceled)
	err = h.failure(context.Background(), context.Background(), "the call to srv.echo", "tools/call", nil, answered)
	if !strings.Contains(err.Error(), "answered tools/call with error -32000: boom") || errors.Is(err, context.Canceled) {
		t.Errorf("an error answer with a context's end: %v", err)
	}
}

// The ready line of a watch whose subscription began before the servers
// started (a command without a session) is stamped with when it began, so
// that the events it holds, printed after it, do not go back in time.
func TestWatchReadyStampedAtSubscription(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{}))
	sub := e.Events(EventFilter{Types: []string{EventState}})
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	var got []Event
	wctx, cancel := context.WithCancel(ctx(t))
	defer cancel()
	e.WatchFrom(wctx, sub, &WatchRequest{}, func(ev Event) error {
		got = append(got, ev)
		if len(got) == 3 { // ready, stopped → starting, starting → ready
			cancel()
		}
		return nil
	})
	if len(got) != 3 || got[0].Type != EventReady {
		t.Fatalf("events: %+v", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Time.Before(got[i-1].Time) {
			t.Errorf("event %d (%s at %s) is before the one printed before it (%s at %s)", i, got[i].Type, got[i].Time, got[i-1].Type, got[i-1].Time)
		}
	}
}

// A watch whose ctx ends hands on the events it holds first: they came
// before (a failed start's last events, for a one-shot watch its failure
// ends). A random pick between ctx's end and the next event lost them.
func TestWatchHandsOnWhatItHoldsWhenCtxEnds(t *testing.T) {
	e := newEngine(t, fakeServer(t, "srv", fakemcp.Spec{}))
	sub := e.Events(EventFilter{Types: []string{EventLog}})
	const n = 20
	for i := range n {
		e.bus.publish(Event{Type: EventLog, Server: "srv", Message: strconv.Itoa(i)})
	}
	ended, cancel := context.WithCancel(ctx(t))
	cancel()
	var got []string
	err := e.WatchFrom(ended, sub, &WatchRequest{}, func(ev Event) error {
		if ev.Type == EventLog {
			got = append(got, ev.Message)
		}
		return nil
	})
	if err != nil || len(got) != n {
		t.Errorf("%v: handed on %d of the %d events held: %q", err, len(got), n, got)
	}
}

// Close does not wait for a sampling handler that does not watch its ctx
// (one waiting on a person): it waited for the handler, however long, with
// the server left running. The handler's goroutine is left to end.
func TestCloseDoesNotWaitForAHandler(t *testing.T) {
	dir := t.TempDir()
	var pid int
	s := fakeServer(t, "srv", fakemcp.Spec{ProtocolVersion: "2025-11-25", PIDFile: filepath.Join(dir, "pid"), Tools: []fakemcp.Tool{{Name: "ask", Sample: "?"}}})
	closeWhileAsked(t, s, "srv.ask", func() { pid = readPID(t, filepath.Join(dir, "pid")) })
	if syscall.Kill(pid, 0) == nil {
		t.Errorf("server %d still runs after Close", pid)
	}
}

// closeWhileAsked starts an engine of the server s, whose sampling hook
// waits on a person who does not answer (for 5 s), calls tool, which asks,
// and checks that Close does not wait for the hook. started runs once the
// engine has started.
func closeWhileAsked(t *testing.T, s *config.Server, tool string, started func()) {
	t.Helper()
	asked, answer := make(chan struct{}), make(chan struct{})
	defer time.AfterFunc(5*time.Second, func() { close(answer) }).Stop()
	e := New(&config.Config{Servers: []*config.Server{s}}, &Options{ShutdownTimeout: 2 * time.Second, Sampling: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		close(asked)
		<-answer
		return nil, errors.New("too late")
	}})
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if started != nil {
		started()
	}
	go e.CallTool(ctx(t), &CallRequest{Name: tool})
	<-asked
	start := time.Now()
	e.Close()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v", d)
	}
}
