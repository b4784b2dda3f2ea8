package engine

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
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
