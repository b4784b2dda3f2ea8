package commands

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Refusals of the token are told at once, then at most one line per
// window with the count since; a burst is told in full at the window's end
// or when serve ends, never lost.
func TestRefusalsTold(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	told := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lines...)
	}
	rf := newRefusals(func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	})
	rf.every = time.Hour
	req := httptest.NewRequest("POST", "/mcp", nil)
	req.RemoteAddr = "127.0.0.1:4242"
	req.Header.Set("User-Agent", "curl/8")
	rf.add(req)
	if got := told(); len(got) != 1 || got[0] != "warning: refused 1 request(s) without the right token, the last from 127.0.0.1:4242 (curl/8)" {
		t.Fatalf("after the first refusal: %q", got)
	}
	for range 3 {
		rf.add(req)
	}
	if got := told(); len(got) != 1 {
		t.Fatalf("within the window: %q", got)
	}
	rf.flush() // serve ends
	if got := told(); len(got) != 2 || !strings.HasPrefix(got[1], "warning: refused 3 request(s)") {
		t.Fatalf("at the end: %q", got)
	}
	rf.flush()
	if got := told(); len(got) != 2 {
		t.Errorf("a flush with nothing untold: %q", got)
	}

	// The window's end tells on its own.
	rf.every = 50 * time.Millisecond
	rf.add(req)
	rf.add(req)
	windowTold := func() (total int) {
		for _, l := range told()[2:] {
			var n int
			fmt.Sscanf(l, "warning: refused %d", &n)
			total += n
		}
		return total
	}
	for deadline := time.Now().Add(10 * time.Second); windowTold() < 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := windowTold(); n != 2 {
		t.Errorf("the window's 2 refusals told as %d: %q", n, told())
	}
}
