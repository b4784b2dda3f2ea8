package engine

import (
	"bufio"
	"strings"
	"testing"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/internal/lineio"
)

// A response cut for length still finds its id, so its request fails at
// once instead of waiting out its timeout.
func TestCutResponseID(t *testing.T) {
	long := `{"t":"` + strings.Repeat("x", 100) + `"}`
	for _, c := range []struct{ name, msg, want string }{
		{"id first (Go, Python)", `{"jsonrpc":"2.0","id":"a-1","result":` + long + `}`, `"a-1"`},
		{"id last (TypeScript)", `{"result":` + long + `,"jsonrpc":"2.0","id":7}`, `7`},
		{"error", `{"jsonrpc":"2.0","id":8,"error":{"code":1,"message":` + `"` + strings.Repeat("y", 100) + `"}}`, `8`},
		{"request", `{"jsonrpc":"2.0","id":3,"method":"x","params":` + long + `}`, ``},
		{"notification", `{"jsonrpc":"2.0","method":"x","params":` + long + `}`, ``},
		{"no id", `{"jsonrpc":"2.0","result":` + long + `}`, ``},
		{"id inside the result", `{"jsonrpc":"2.0","result":{"t":"` + strings.Repeat("x", 100) + `","id":5}}`, ``},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"result":` + long + `}`, ``},
	} {
		br := bufio.NewReaderSize(strings.NewReader(c.msg+"\n"), 16)
		line, tail, cut, _ := lineio.ReadLineTail(br, 40, 64)
		if !cut {
			t.Fatalf("%s: not cut", c.name)
		}
		if got := string(cutResponseID(line, tail)); got != c.want {
			t.Errorf("%s: id %q, want %q", c.name, got, c.want)
		}
	}
}

// The last words of runtimes stopped by a memory limit mark the process as
// out of memory, and only when it has a memory limit.
func TestNoteSignsMemory(t *testing.T) {
	for _, line := range []string{
		"fatal error: runtime: out of memory",
		"fatal error: runtime: cannot allocate memory",
		"runtime: failed to create new OS thread (have 7 already; errno=12)",
		"FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory",
		"MemoryError",
	} {
		p := &process{limits: config.Limits{Memory: 128 << 20}}
		p.noteSigns(line)
		if !p.outOfMemory.Load() {
			t.Errorf("%q not taken for the memory limit", line)
		}
		unlimited := &process{}
		unlimited.noteSigns(line)
		if unlimited.outOfMemory.Load() {
			t.Errorf("%q taken for a memory limit the server does not have", line)
		}
	}
	p := &process{limits: config.Limits{Memory: 128 << 20}}
	p.noteSigns("runtime: failed to create new OS thread (have 7 already; errno=11)")
	if p.outOfMemory.Load() {
		t.Error("EAGAIN creating a thread taken for the memory limit")
	}
}
