package engine

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
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
// group. It reads /proc instead of kill(-pgid, 0), which also counts zombies
// that a non-reaping init may keep around.
func groupAlive(pgid int) bool {
	if pgid <= 1 {
		return false
	}
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
		if string(fields[0]) == "Z" || string(fields[0]) == "X" {
			continue
		}
		if g, err := strconv.Atoi(string(fields[2])); err == nil && g == pgid {
			return true
		}
	}
	return false
}
