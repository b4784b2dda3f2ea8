package engine

import (
	"bytes"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/internal/fakemcp"
	"golang.org/x/sys/unix"
)

// activity tells a process at work (here a shell's busy loop, started by a
// wrapper that only waits for it) from one that sleeps.
func TestActivity(t *testing.T) {
	start := func(script string) int {
		cmd := exec.Command("sh", "-c", script)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
		return cmd.Process.Pid
	}
	busy := start("sh -c 'while :; do :; done'; exit 0")
	idle := start("sleep 60; exit 0")
	time.Sleep(50 * time.Millisecond)

	b0, _, ok := activity(busy)
	i0, _, _ := activity(idle)
	if !ok {
		t.Fatal("activity knows nothing of a running process")
	}
	time.Sleep(100 * time.Millisecond)
	b1, bActive, _ := activity(busy)
	i1, iActive, _ := activity(idle)
	if b1-b0 < 10*time.Millisecond || !bActive {
		t.Errorf("busy loop in a child: %v of CPU in 100ms, active %v; want most of it, active", b1-b0, bActive)
	}
	if i1-i0 >= time.Millisecond || iActive {
		t.Errorf("sleeping child: %v of CPU in 100ms, active %v; want none", i1-i0, iActive)
	}
	if _, _, ok := activity(1 << 22); ok {
		t.Error("activity of a pid no process has: ok")
	}
}

// As a container's init (PID 1) or a child subreaper, mcpctl is the
// parent of what a server's leader started and left (npx's node): a stop
// waits for those, or each run of the server would leave a zombie. The
// test runs itself again as a subreaper, which the whole test binary
// would otherwise become.
func TestStopReapsOrphansAsSubreaper(t *testing.T) {
	if os.Getenv("MCPCTL_TEST_SUBREAPER") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStopReapsOrphansAsSubreaper$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "MCPCTL_TEST_SUBREAPER=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS: TestStopReapsOrphansAsSubreaper")) {
			t.Fatalf("as a subreaper: %v\n%s", err, out)
		}
		return
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Skipf("cannot become a child subreaper: %v", err) // not a failure of mcpctl's
	}
	if !reapsOrphans() {
		t.Fatal("reapsOrphans is false in a subreaper")
	}
	srv := fakeServer(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	// The leader leaves a sleep behind: the fake server, in the shell's place.
	srv.Args = append([]string{"-c", `sleep 300 & exec "$0" "$@"`, srv.Command}, srv.Args...)
	srv.Command = "/bin/sh"
	e := newEngine(t, srv)
	for run := range 3 {
		if err := e.Start(ctx(t)); err != nil {
			t.Fatal(err)
		}
		if err := e.Stop("srv"); err != nil {
			t.Fatal(err)
		}
		self := os.Getpid()
		var zombies []int
		eachProcess(func(pid, ppid, pgrp int, zombie bool) {
			if zombie && ppid == self {
				zombies = append(zombies, pid)
			}
		})
		if len(zombies) > 0 {
			t.Fatalf("run %d: zombies of the server's group left: %v", run+1, zombies)
		}
	}
}
