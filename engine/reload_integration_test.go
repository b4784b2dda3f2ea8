//go:build integration

package engine

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/config"
)

// Reads made as reloads replace server-everything end as a server
// stopped under them (unavailable), or with their answer: never as the
// server breaking MCP. The SDK's own call could fail after the answer
// came (its connection closing), and its missing result was taken for
// the server's.
func TestIntegrationReadsCutByReload(t *testing.T) {
	repo, _ := filepath.Abs("..") // where node_modules is
	s := &config.Server{Name: "everything", Type: "stdio", Command: filepath.Join(repo, "node_modules", ".bin", "mcp-server-everything"),
		StartupTimeout: 30 * time.Second, CacheTTL: config.DefaultCacheTTL, Source: "test:1:1"}
	e := newEngine(t, s)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var broken, lost []error
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := e.ReadResource(ctx(t), &ResourceRequest{URI: "demo://resource/dynamic/text/2", NoCache: true})
				mu.Lock()
				switch {
				case KindOf(err) == KindProtocol:
					broken = append(broken, err)
				case err != nil && !strings.Contains(err.Error(), "was stopped during"):
					lost = append(lost, err)
				}
				mu.Unlock()
			}
		}()
	}
	for i := range 6 {
		time.Sleep(200 * time.Millisecond)
		c := *s
		c.Env = map[string]string{"RELOAD": string(rune('a' + i))}
		if _, err := e.Reload(ctx(t), &config.Config{File: "mcp.json", Servers: []*config.Server{&c}}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	for _, err := range broken {
		t.Errorf("a read cut by a reload: %v", err)
	}
	// A read that found the server the reload replaced goes to the one
	// that took its place: only one in flight as it stopped fails.
	for _, err := range lost {
		t.Errorf("a read made as a reload replaced its server: %v", err)
	}
}
