package commands

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/engine"
	"golang.org/x/sys/unix"
)

// A down in the moments between up claiming the session and the session
// listening waits for it and stops it: it said "no session", exited 0 and
// left the session running. The up that started it says a down stopped it.
func TestDownWaitsForClaimedSession(t *testing.T) {
	dir := t.TempDir()
	rt, err := os.MkdirTemp("", "mcx") // socket paths must stay short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	t.Setenv("XDG_RUNTIME_DIR", rt)
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	for _, k := range []string{"MCPCTL_CONFIG", "MCPCTL_SESSION", "MCPCTL_RUNTIME_DIR", "MCPCTL_STATE_DIR", "MCPCTL_FORCE_TTY"} {
		t.Setenv(k, "")
	}
	cfg := filepath.Join(dir, "mcp.json")
	// A server that never answers: the session stays starting.
	os.WriteFile(cfg, []byte(`{"servers": {"slow": {"command": "sleep", "args": ["60"], "startupTimeout": "60s"}}}`), 0o644)
	sess, err := engine.SessionFor([]string{cfg}, "", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := sess.Claim() // as up does before it starts the session
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		code   int
		output string // stdout and stderr
	}
	run := func(args ...string) <-chan result {
		done := make(chan result, 1)
		go func() {
			var out, errOut bytes.Buffer
			code := Main(context.Background(), append([]string{"mcpctl", "-c", cfg}, args...), strings.NewReader(""), &out, &errOut)
			done <- result{code, out.String() + errOut.String()}
		}()
		return done
	}
	down := run("down")
	select {
	case r := <-down:
		t.Fatalf("down returned before the claimed session listened: exit %d, %s", r.code, r.output)
	case <-time.After(300 * time.Millisecond):
	}
	fd, err := unix.Dup(int(lock.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	lock.Close() // the session holds the lock through its copy
	up := run("up", "--foreground", "--lock-fd", strconv.Itoa(fd))
	for _, c := range []struct {
		name string
		got  <-chan result
		code int
		want string
	}{
		{"down", down, 0, `"name":"` + sess.Name + `"`},
		{"up", up, exitUnavailable, "the session was stopped (mcpctl down) while its servers started"},
	} {
		select {
		case r := <-c.got:
			if r.code != c.code || !strings.Contains(r.output, c.want) {
				t.Errorf("%s: exit %d, %s; want exit %d, %q", c.name, r.code, r.output, c.code, c.want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s did not return", c.name)
		}
	}
	if sess.Running() {
		t.Error("the session still holds its lock")
	}
}
