package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/internal/testutil"
	"golang.org/x/sys/unix"
)

// A client that stopped reading serve's stdout (its pipe full) does not
// keep serve from ending, on SIGTERM or once its stdin closed: the answers
// it never took are given up on, and serve says so.
func TestServeEndsWithStdoutUnread(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"SIGTERM", "stdin closed"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			serveEndsWithStdoutUnread(t, end)
		})
	}
}

func serveEndsWithStdoutUnread(t *testing.T, end string) {
	w := newServeWorld(t, map[string]string{
		"mcp.json":  serveFakeConfig,
		"fake.json": `{"callLog": "calls.log", "tools": [{"name": "big", "resultBytes": 300000}, {"name": "stall", "sleep": "60s"}]}`,
	})
	cmd := w.command(nil, "serve")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	unread, stdout, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer unread.Close()
	cmd.Stdout = stdout
	stderr := &testutil.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdout.Close()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() {
		cmd.Process.Kill()
		<-exited
	}()
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		// Its answer is more than the pipe holds: its write blocks.
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fake.big","arguments":{}}}`,
	}
	under := "big"
	if end == "SIGTERM" {
		// A call under way at the end, whose answer waits behind.
		lines, under = append(lines, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fake.stall","arguments":{}}}`), "stall"
	}
	for _, line := range lines {
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// The big answer is in the pipe, its write blocked (with stdin closed,
	// the only request not answered).
	full := func() bool {
		size, err1 := unix.FcntlInt(unread.Fd(), unix.F_GETPIPE_SZ, 0)
		held, err2 := unix.IoctlGetInt(int(unread.Fd()), unix.TIOCINQ)
		// Only the big answer can hold half of it, and it is larger than
		// the whole.
		return err1 == nil && err2 == nil && held >= size/2
	}
	if !within(30*time.Second, func() bool {
		data, _ := os.ReadFile(filepath.Join(w.dir, "calls.log"))
		return bytes.Contains(data, []byte(under)) && full()
	}) {
		t.Fatalf("the calls did not reach the server, or their answers did not fill the pipe\nstderr:\n%s", stderr)
	}
	if end == "SIGTERM" {
		cmd.Process.Signal(syscall.SIGTERM)
	} else {
		stdin.Close() // the big answer's write then outlasts stdin's grace (5s)
	}
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("serve still runs 20s after %s, its stdout unread\nstderr:\n%s", end, stderr)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("serve exited %d, not 0; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr.String(), "not written: the client had stopped reading serve's output") {
		t.Errorf("serve did not say what it gave up on; stderr:\n%s", stderr)
	}
	w.noneLeft()
}
