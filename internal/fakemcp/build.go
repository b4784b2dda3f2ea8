package fakemcp

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
)

var plain struct {
	once sync.Once
	path string
	err  error
}

// PlainBinary builds mcp-fake without the race detector, once per test
// process, and returns its path. Tests of resource limits need it: a race
// binary maps terabytes of shadow memory and dies under any memory limit.
func PlainBinary() (string, error) {
	plain.once.Do(func() {
		dir, err := os.MkdirTemp("", "mcp-fake")
		if err != nil {
			plain.err = err
			return
		}
		goCmd, err := exec.LookPath("go")
		if err != nil {
			goCmd = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		plain.path = filepath.Join(dir, "mcp-fake")
		cmd := exec.Command(goCmd, "build", "-o", plain.path, "github.com/mcpctl/mcpctl/internal/fakemcp/mcp-fake")
		if out, err := cmd.CombinedOutput(); err != nil {
			plain.err = fmt.Errorf("building mcp-fake: %v\n%s", err, out)
		}
	})
	return plain.path, plain.err
}

// RemovePlainBinary removes what PlainBinary built; TestMain calls it.
func RemovePlainBinary() {
	if plain.path != "" {
		os.RemoveAll(filepath.Dir(plain.path))
	}
}
