package commands

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/engine"
	"golang.org/x/sys/unix"
)

// A detached session's stdout and stderr are its log file. After the log
// rotates they write to the new file, not into session.log.1 (which later
// rotations drop): what the runtime prints on a crash must stay findable.
func TestSessionStdioFollowsLogRotation(t *testing.T) {
	if path := os.Getenv("MCPCTL_TEST_ROTATING_STDIO"); path != "" {
		rotatingStdioChild(path)
		os.Exit(0)
	}
	path := filepath.Join(t.TempDir(), "session.log")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSessionStdioFollowsLogRotation$")
	cmd.Env = append(os.Environ(), "MCPCTL_TEST_ROTATING_STDIO="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	old, _ := os.ReadFile(path + ".1")
	cur, _ := os.ReadFile(path)
	if !strings.Contains(string(old), "before the rotation") || strings.Contains(string(old), "after") {
		t.Errorf("session.log.1 = %q, want only what came before the rotation", old)
	}
	for _, want := range []string{"stdout after the rotation", "stderr after the rotation", "the runtime after the rotation"} {
		if !strings.Contains(string(cur), want) {
			t.Errorf("session.log (%d bytes) does not hold %q", len(cur), want)
		}
	}
}

// rotatingStdioChild is a detached session in small: stdout and stderr on
// the log (as spawnSession starts it), the session's logs opened as a
// detached session opens them, and one log record big enough to rotate.
func rotatingStdioChild(path string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		panic(err)
	}
	unix.Dup2(int(f.Fd()), 1)
	unix.Dup2(int(f.Fd()), 2)
	fmt.Fprintln(os.Stderr, "before the rotation")
	sess := &engine.Session{Name: "t", StateDir: filepath.Dir(path)}
	logs, err := openSessionLogs(newEnv(nil, io.Discard, io.Discard), &config.Config{}, sess, true, "")
	if err != nil {
		panic(err)
	}
	logs.logger.Info("big", "filler", strings.Repeat("x", engine.DefaultLogMaxBytes))
	fmt.Fprintln(os.Stdout, "stdout after the rotation")
	fmt.Fprintln(os.Stderr, "stderr after the rotation")
	println("the runtime after the rotation")
}
