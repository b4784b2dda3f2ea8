package engine

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/internal/fakemcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The benchmarks below call the same tool of the same Go fake server
// (this test binary) four ways, so that their differences are mcpctl's
// own cost (bench/run prints them with their targets):
//
//	BenchmarkSDKCall      a bare go-sdk ClientSession.CallTool: the floor
//	BenchmarkEngineCall   Engine.CallTool: minus the floor, the routing
//	BenchmarkSessionCall  Client.CallTool over a unix socket to a Daemon:
//	                      minus BenchmarkEngineCall, the socket hop
//	BenchmarkSessionTools Client.Tools over the same socket
//
// Each reports the median of its calls (p50-ns/op) beside Go's mean.

var benchSpec = fakemcp.Spec{Tools: []fakemcp.Tool{{
	Name:        "echo",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`),
}, {Name: "big", ResultBytes: 1 << 20}}}

// benchServer is fakeServer for a benchmark.
func benchServer(b *testing.B, name string) *config.Server {
	b.Helper()
	dir := b.TempDir()
	data, _ := json.Marshal(benchSpec)
	p := filepath.Join(dir, name+".json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.Fatal(err)
	}
	exe, _ := os.Executable()
	return &config.Server{
		Name: name, Type: "stdio", Command: exe, Args: []string{p},
		Env: map[string]string{"MCPCTL_TEST_FAKE": "1"}, Cwd: dir,
		StartupTimeout: 10 * time.Second, CacheTTL: config.DefaultCacheTTL, Source: "bench:1:1",
	}
}

// startedEngine returns an engine with the fake server "fake" ready.
func startedEngine(b *testing.B) *Engine {
	b.Helper()
	e := New(&config.Config{File: "mcp.json", Servers: []*config.Server{benchServer(b, "fake")}}, &Options{ShutdownTimeout: 2 * time.Second})
	b.Cleanup(func() { e.Close() })
	if err := e.Start(context.Background(), "fake"); err != nil {
		b.Fatal(err)
	}
	return e
}

// timed runs op b.N times and reports the median beside the mean.
func timed(b *testing.B, op func() error) {
	b.Helper()
	ds := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
	}
	b.StopTimer()
	if len(ds) > 0 {
		slices.Sort(ds)
		b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds()), "p50-ns/op")
	}
}

var benchArgs = json.RawMessage(`{"message":"hi"}`)

func BenchmarkSDKCall(b *testing.B) {
	s := benchServer(b, "fake")
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Env = append(os.Environ(), "MCPCTL_TEST_FAKE=1")
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil)
	ctx := context.Background()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	timed(b, func() error {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: benchArgs})
		return err
	})
}

func BenchmarkEngineCall(b *testing.B) {
	e := startedEngine(b)
	ctx := context.Background()
	timed(b, func() error {
		_, err := e.CallTool(ctx, &CallRequest{Name: "fake.echo", Arguments: benchArgs})
		return err
	})
}

// benchSession serves e on a unix socket as `mcpctl up` does and returns a
// client of it.
func benchSession(b *testing.B, e *Engine) *Client {
	b.Helper()
	dir, err := os.MkdirTemp("", "mcb")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	d := NewDaemon(e, SessionInfo{Name: "bench", PID: os.Getpid(), Socket: sock}, nil)
	srv := &http.Server{Handler: d.Handler()}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return &Client{Socket: sock}
}

func BenchmarkSessionCall(b *testing.B) {
	c := benchSession(b, startedEngine(b))
	ctx := context.Background()
	timed(b, func() error {
		_, err := c.CallTool(ctx, &CallRequest{Name: "fake.echo", Arguments: benchArgs})
		return err
	})
}

// BenchmarkSessionCallLarge is a call whose result is 1 MiB of text,
// through the session: what the session does with each byte.
func BenchmarkSessionCallLarge(b *testing.B) {
	c := benchSession(b, startedEngine(b))
	ctx := context.Background()
	timed(b, func() error {
		_, err := c.CallTool(ctx, &CallRequest{Name: "fake.big"})
		return err
	})
}

func BenchmarkSessionTools(b *testing.B) {
	c := benchSession(b, startedEngine(b))
	ctx := context.Background()
	timed(b, func() error {
		_, err := c.Tools(ctx, "")
		return err
	})
}

// BenchmarkSessionCallParallel calls through one session from many
// goroutines at once, checking each answer is its own call's.
func BenchmarkSessionCallParallel(b *testing.B) {
	c := benchSession(b, startedEngine(b))
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			msg := strconv.Itoa(i) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			res, err := c.CallTool(ctx, &CallRequest{Name: "fake.echo", Pairs: []string{"message=" + msg}})
			if err != nil {
				b.Error(err)
				return
			}
			if !json.Valid(res.Result) || !containsText(res.Result, msg) {
				b.Errorf("call with %q answered %s", msg, res.Result)
				return
			}
		}
	})
}

func containsText(raw json.RawMessage, s string) bool {
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(raw, &r) != nil || len(r.Content) == 0 {
		return false
	}
	var args struct {
		Message string `json:"message"`
	}
	return json.Unmarshal([]byte(r.Content[0].Text), &args) == nil && args.Message == s
}

// BenchmarkSessionLoad makes 1000 calls at once through one session, over
// 10 servers, per op; it reports calls/s and checks every answer is its
// own call's (bench/load does the same against `mcpctl up`).
func BenchmarkSessionLoad(b *testing.B) {
	var servers []*config.Server
	for i := range 10 {
		servers = append(servers, benchServer(b, "s"+strconv.Itoa(i)))
	}
	e := New(&config.Config{File: "mcp.json", Servers: servers}, &Options{ShutdownTimeout: 2 * time.Second})
	b.Cleanup(func() { e.Close() })
	ctx := context.Background()
	if err := e.Start(ctx); err != nil {
		b.Fatal(err)
	}
	c := benchSession(b, e)
	const calls = 1000
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var wg sync.WaitGroup
		for i := range calls {
			wg.Go(func() {
				msg := "m" + strconv.Itoa(i)
				res, err := c.CallTool(ctx, &CallRequest{Name: servers[i%10].Name + ".echo", Pairs: []string{"message=" + msg}})
				if err != nil {
					b.Error(err)
					return
				}
				if !containsText(res.Result, msg) {
					b.Errorf("call with %q answered %s", msg, res.Result)
				}
			})
		}
		wg.Wait()
	}
	b.ReportMetric(float64(calls*b.N)/b.Elapsed().Seconds(), "calls/s")
}

// BenchmarkGroupAliveGone is the check every stop of a stdio server makes
// once its leader is reaped, for a group with no process left.
func BenchmarkGroupAliveGone(b *testing.B) {
	for b.Loop() {
		if groupAlive(1 << 22) {
			b.Fatal("a process group that cannot exist is alive")
		}
	}
}

// BenchmarkCallPrep is what the engine does with a call besides the round
// trip, on a tool the size of server-everything's larger ones: type the
// key=value arguments by the schema, validate them, read the tool's task
// support, and read the result's isError (here 16 KiB of text).
func BenchmarkCallPrep(b *testing.B) {
	props := map[string]any{}
	for _, name := range []string{"path", "mode", "count", "verbose", "pattern", "exclude"} {
		props[name] = map[string]any{"type": "string", "description": strings.Repeat("what "+name+" is for; ", 12)}
	}
	props["count"].(map[string]any)["type"] = "integer"
	props["verbose"].(map[string]any)["type"] = "boolean"
	raw, _ := json.Marshal(map[string]any{
		"name": "search", "description": strings.Repeat("Searches the files under a path for a pattern. ", 20),
		"inputSchema": map[string]any{"type": "object", "properties": props, "required": []string{"path", "pattern"}},
		"annotations": map[string]any{"readOnlyHint": true},
	})
	tool, err := newTool("fs", raw)
	if err != nil {
		b.Fatal(err)
	}
	result, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": strings.Repeat("x", 16<<10)}}, "isError": false})
	pairs := []string{"path=/tmp", "pattern=a.*b", "count=3", "verbose=true"}
	b.ReportAllocs()
	for b.Loop() {
		args, err := buildArguments(tool, nil, pairs)
		if err != nil {
			b.Fatal(err)
		}
		if err := tool.validate(args); err != nil {
			b.Fatal(err)
		}
		if tool.TaskSupport() != "forbidden" {
			b.Fatal("task support")
		}
		if res, err := callResult("fs", tool, result); err != nil || res.IsError {
			b.Fatal(res, err)
		}
	}
}
