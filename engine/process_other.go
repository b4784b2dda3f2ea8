//go:build !linux

package engine

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func signalGroup(pgid int, sig syscall.Signal) {
	if pgid > 1 {
		syscall.Kill(-pgid, sig)
	}
}

func groupAlive(pgid int) bool { return pgid > 1 && syscall.Kill(-pgid, 0) == nil }
