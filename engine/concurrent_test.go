package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/internal/fakemcp"
)

// TestConcurrentCallsThroughSession makes 1000 calls at once through a
// session (Daemon and Client over a real unix socket) to four servers, each
// call with an argument of its own that the server echoes: every call must
// be answered, by the server it named, with its own argument.
func TestConcurrentCallsThroughSession(t *testing.T) {
	const servers, calls = 4, 1000
	var cfgs []*config.Server
	for i := range servers {
		cfgs = append(cfgs, fakeServer(t, fmt.Sprintf("s%d", i), fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}}))
	}
	e := newEngine(t, cfgs...)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "mcc")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s := testSession(t, filepath.Join(dir, "rt"))
	ln, release, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	d := NewDaemon(e, SessionInfo{Name: "sec", PID: os.Getpid()}, nil)
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- d.Serve(sctx, ln) }()
	defer func() { stop(); <-served }()

	c := &Client{Socket: s.Socket}
	cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := make(chan struct{})
	errs := make(chan error, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs <- callEcho(cctx, c, fmt.Sprintf("s%d", i%servers), i)
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			if failed++; failed <= 10 {
				t.Error(err)
			}
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d calls failed", failed, calls)
	}
	// Every call reached its server once: the metrics count them.
	var total int64
	for _, m := range e.Metrics() {
		for _, mm := range m.Methods {
			if mm.Method == "tools/call" {
				total += mm.Requests
			}
		}
	}
	if total != calls {
		t.Errorf("the servers saw %d tools/call, want %d", total, calls)
	}
}

// callEcho calls server.echo with a unique argument and checks the answer
// is that argument, from that server.
func callEcho(ctx context.Context, c *Client, server string, i int) error {
	id := fmt.Sprintf("call-%04d-%s", i, server)
	res, err := c.CallTool(ctx, &CallRequest{Name: server + ".echo", Arguments: json.RawMessage(fmt.Sprintf(`{"id":%q,"n":%d}`, id, i))})
	if err != nil {
		return fmt.Errorf("call %d: %w", i, err)
	}
	if res.Server != server || res.Tool != "echo" || res.IsError {
		return fmt.Errorf("call %d to %s.echo: answered for %s.%s (isError %v)", i, server, res.Server, res.Tool, res.IsError)
	}
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(res.Result, &r); err != nil || len(r.Content) != 1 {
		return fmt.Errorf("call %d: result %s: %v", i, res.Result, err)
	}
	var got struct {
		ID string `json:"id"`
		N  int    `json:"n"`
	}
	if err := json.Unmarshal([]byte(r.Content[0].Text), &got); err != nil {
		return fmt.Errorf("call %d: echoed %q: %v", i, r.Content[0].Text, err)
	}
	if got.ID != id || got.N != i {
		return fmt.Errorf("call %d (%s) was answered with another call's result: %q", i, id, r.Content[0].Text)
	}
	return nil
}
