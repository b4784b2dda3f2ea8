//go:build !linux

package engine

import (
	"errors"
	"syscall"
	"time"

	"github.com/mcpctl/mcpctl/config"
)

func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func signalGroup(pgid int, sig syscall.Signal) {
	if pgid > 1 {
		syscall.Kill(-pgid, sig)
	}
}

func groupAlive(pgid int) bool { return pgid > 1 && syscall.Kill(-pgid, 0) == nil }

// reapGroup: only Linux has child subreapers, and mcpctl is not init
// elsewhere.
func reapGroup(pgid int) {}

// applyLimits: limits need Linux's prlimit; configs with limits are
// refused before anything starts elsewhere.
func applyLimits(pid int, l config.Limits) error {
	return errors.New("limits can be applied only on Linux")
}

// activity: without Linux's /proc there is no telling whether a process is
// at work, so a server gets its grace and no more.
func activity(pid int) (cpu time.Duration, active, ok bool) { return 0, false, false }
