package engine

import (
	"bytes"
	"fmt"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"golang.org/x/sys/unix"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"
)

func sysProcAttr() *syscall.SysProcAttr {
	// Setpgid: the server and everything it starts share a group we can
	// signal at once. Pdeathsig: if mcpctl dies without stopping it (kill
	// -9), the kernel kills the leader instead of leaving it running.
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func signalGroup(pgid int, sig syscall.Signal) {
	if pgid > 1 {
		syscall.Kill(-pgid, sig)
	}
}

// groupAlive reports whether any live (not zombie) process is left in the
// group. It reads /proc instead of trusting kill(-pgid, 0), which also counts
// zombies that a non-reaping init may keep around; but when kill finds no
// process at all in the group, none is alive, and the scan of every process
// on the machine (milliseconds on a busy one) is skipped.
func groupAlive(pgid int) bool {
	if pgid <= 1 {
		return false
	}
	if syscall.Kill(-pgid, 0) == syscall.ESRCH {
		return false
	}
	alive := false
	eachProcess(func(pid, ppid, pgrp int, zombie bool) {
		alive = alive || (!zombie && pgrp == pgid)
	})
	return alive
}

// reapGroup waits for the zombies of the group that mcpctl is the parent
// of without having started them: when mcpctl is init (PID 1 of a
// container) or a child subreaper, what a server's leader started and left
// (npx's node) is reparented to it, and nothing else would wait for it. The
// leader is os/exec's to wait for, and a process of another group is not
// touched: a child started elsewhere (a sampling command) keeps its exit
// status for its own Wait.
func reapGroup(pgid int) {
	if pgid <= 1 || !reapsOrphans() {
		return
	}
	self := os.Getpid()
	eachProcess(func(pid, ppid, pgrp int, zombie bool) {
		if zombie && ppid == self && pgrp == pgid && pid != pgid {
			unix.Wait4(pid, nil, unix.WNOHANG, nil)
		}
	})
}

// reapsOrphans reports whether orphaned processes are reparented to
// mcpctl: it is PID 1, or a child subreaper (prctl).
var reapsOrphans = sync.OnceValue(func() bool {
	if os.Getpid() == 1 {
		return true
	}
	var on int32
	err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&on)), 0, 0, 0)
	return err == nil && on != 0
})

// eachProcess calls fn with each process of the machine, from /proc.
func eachProcess(fn func(pid, ppid, pgrp int, zombie bool)) {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// Fields after the command (which may hold spaces and parens):
		// state ppid pgrp ...
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		fields := bytes.Fields(data[i+1:])
		if len(fields) < 3 {
			continue
		}
		pid, err1 := strconv.Atoi(strings.TrimPrefix(strings.TrimSuffix(f, "/stat"), "/proc/"))
		ppid, err2 := strconv.Atoi(string(fields[1]))
		pgrp, err3 := strconv.Atoi(string(fields[2]))
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		fn(pid, ppid, pgrp, string(fields[0]) == "Z" || string(fields[0]) == "X")
	}
}

// applyLimits sets a running process's resource limits (prlimit). Memory
// is RLIMIT_DATA, what the process allocates, not RLIMIT_AS: Go and Node
// reserve some 700 MiB of address space before they allocate anything, so
// an address-space limit that suits their real use stops them starting.
// cpuTime sends SIGXCPU at the limit and SIGKILL a second later.
func applyLimits(pid int, l config.Limits) error {
	set := func(what string, res int, soft, hard uint64) error {
		if err := unix.Prlimit(pid, res, &unix.Rlimit{Cur: soft, Max: hard}, nil); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	if l.Memory > 0 {
		if err := set("memory", unix.RLIMIT_DATA, uint64(l.Memory), uint64(l.Memory)); err != nil {
			return err
		}
	}
	if l.CPUTime > 0 {
		secs := uint64((l.CPUTime + time.Second - 1) / time.Second)
		if err := set("cpuTime", unix.RLIMIT_CPU, secs, secs+1); err != nil {
			return err
		}
	}
	if l.OpenFiles > 0 {
		if err := set("openFiles", unix.RLIMIT_NOFILE, uint64(l.OpenFiles), uint64(l.OpenFiles)); err != nil {
			return err
		}
	}
	if l.Processes > 0 {
		if err := set("processes", unix.RLIMIT_NPROC, uint64(l.Processes), uint64(l.Processes)); err != nil {
			return err
		}
	}
	return nil
}

// activity reads, for the process pid and its descendants, the CPU time
// they have used, and whether any of their threads is running, waiting to
// run, or in disk sleep now. ok is false when /proc knows nothing of pid.
func activity(pid int) (cpu time.Duration, active, ok bool) {
	seen := map[int]bool{}
	var walk func(pid int)
	walk = func(pid int) {
		// A fork bomb's tree is not worth reading to the end.
		if seen[pid] || len(seen) >= 64 {
			return
		}
		seen[pid] = true
		// The process's CPU clock counts the running threads' time up to
		// now; /proc's figures lag by up to a scheduler tick.
		var ts unix.Timespec
		if unix.ClockGettime(int32(^pid<<3|2), &ts) == nil {
			cpu += time.Duration(ts.Nano())
		}
		dir := "/proc/" + strconv.Itoa(pid) + "/task/"
		f, err := os.Open(dir)
		if err != nil {
			return
		}
		tids, _ := f.Readdirnames(-1)
		f.Close()
		for _, tid := range tids {
			if data, err := os.ReadFile(dir + tid + "/stat"); err == nil {
				ok = true
				if i := bytes.LastIndexByte(data, ')'); i >= 0 && i+2 < len(data) {
					active = active || data[i+2] == 'R' || data[i+2] == 'D'
				}
			}
			if data, err := os.ReadFile(dir + tid + "/children"); err == nil {
				for _, c := range strings.Fields(string(data)) {
					if n, err := strconv.Atoi(c); err == nil {
						walk(n)
					}
				}
			}
		}
	}
	walk(pid)
	return cpu, active, ok
}
