package engine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/config"
)

// hookChildGone waits (up to 2s) for pid, a process a hook started, to be
// gone: no such process for signal 0, or only a zombie left for init.
func hookChildGone(pid int) bool {
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil || !alive(pid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// hookChild reads the pid a hook wrote to path, and kills that process at
// the end of the test should the hook have left it running.
func hookChild(t *testing.T, path string) int {
	t.Helper()
	pid := 0
	for deadline := time.Now().Add(5 * time.Second); pid == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		data, _ := os.ReadFile(path)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
	}
	if pid <= 1 {
		t.Fatalf("the hook wrote no pid to %s", path)
	}
	t.Cleanup(func() {
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return pid
}

// A hook that leaves a child in the background, holding its stdout, is
// done when its shell exits: its answer (or failure) counts at once, not
// at its timeout, and the child is killed with it.
func TestHookBackgroundChild(t *testing.T) {
	const answer = `{"role":"assistant","model":"sh","content":{"type":"text","text":"bg"}}`
	for _, tc := range []struct {
		name, command, want, wantErr string
	}{
		{"answers", `echo '` + answer + `'`, answer, ""},
		{"fails", `echo "no model here" >&2; exit 3`, "", "the sampling hook (mcp.json:3:5) failed: exit status 3: no model here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			const timeout = 5 * time.Second
			h := &config.Hook{Dir: dir, Timeout: timeout, Source: "mcp.json:3:5",
				Command: `sleep 32 & echo $! > pid; ` + tc.command}
			start := time.Now()
			res, err := HookHandler(h, MethodSampling)(ctx(t), "srv", json.RawMessage(`{}`))
			took := time.Since(start)
			pid := hookChild(t, filepath.Join(dir, "pid"))
			if tc.wantErr == "" && (err != nil || string(res) != tc.want) {
				t.Errorf("got %s, %v; want %s", res, err, tc.want)
			}
			if tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr) {
				t.Errorf("got %s, %v; want the error %q", res, err, tc.wantErr)
			}
			if took > timeout/2 {
				t.Errorf("the hook took %v: its background child was waited for (timeout %v)", took, timeout)
			}
			if !hookChildGone(pid) {
				t.Errorf("the hook's background child %d outlived it", pid)
			}
		})
	}
}

// A hook whose caller gives up (its ctx cancelled, or past its deadline)
// before the hook's own timeout is killed with its children, and says so:
// its error wraps ctx's and does not blame the hook's timeout.
func TestHookCallerGivesUp(t *testing.T) {
	for _, tc := range []struct {
		name   string
		caller func(context.Context) (context.Context, context.CancelFunc)
		want   error
	}{
		{"cancelled", func(ctx context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(200*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
		{"deadline", func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 200*time.Millisecond)
		}, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			h := &config.Hook{Dir: dir, Timeout: 10 * time.Second, Source: "mcp.json:3:5",
				Command: `sleep 30 & echo $! > pid; wait`}
			c, cancel := tc.caller(ctx(t))
			defer cancel()
			start := time.Now()
			res, err := HookHandler(h, MethodSampling)(c, "srv", json.RawMessage(`{}`))
			took := time.Since(start)
			pid := hookChild(t, filepath.Join(dir, "pid"))
			if !errors.Is(err, tc.want) {
				t.Errorf("got %s, %v; want an error that is %v", res, err, tc.want)
			}
			if err != nil && (!strings.HasPrefix(err.Error(), "the sampling hook (mcp.json:3:5) was stopped after ") ||
				!strings.Contains(err.Error(), "its caller gave up") || strings.Contains(err.Error(), "within")) {
				t.Errorf("error %q does not say the caller gave up", err)
			}
			if took > 5*time.Second {
				t.Errorf("the hook took %v after its caller gave up", took)
			}
			if !hookChildGone(pid) {
				t.Errorf("the hook's child %d outlived its caller", pid)
			}
		})
	}
}
