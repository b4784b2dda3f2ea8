package engine

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/internal/testutil"
)

// Lines of stdout that are not JSON-RPC are logged up to a limit a
// window, and how many more there were is logged when the window ends,
// also when no line follows.
func TestSkippedLinesLimited(t *testing.T) {
	old := skippedLinesWindow
	skippedLinesWindow = 300 * time.Millisecond
	t.Cleanup(func() { skippedLinesWindow = old })
	var logs testutil.Buffer
	s := &server{log: slog.New(slog.NewJSONHandler(&logs, nil))}
	s.conf.Store(&config.Server{Name: "noisy"})
	skip := s.skippedLineLogger()
	for range 25 {
		skip([]byte("banner"), "not JSON-RPC")
	}
	if n := strings.Count(logs.String(), `"msg":"skipped a line on stdout"`); n != skippedLinesPerMinute {
		t.Errorf("%d lines logged, want %d", n, skippedLinesPerMinute)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), `"msg":"skipped more lines on stdout that were not JSON-RPC, not logged","lines":15`) {
		if time.Now().After(deadline) {
			t.Fatalf("the 15 lines not logged were not counted:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A new window logs again.
	skip([]byte("later"), "not JSON-RPC")
	if !strings.Contains(logs.String(), `"line":"later"`) {
		t.Errorf("a line of the next window was not logged")
	}
}
