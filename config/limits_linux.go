package config

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// aboveHardLimits says which of l's limits exceed the hard limits mcpctl
// itself runs under: mcpctl sets a server's limits with prlimit, and only a
// process with CAP_SYS_RESOURCE may raise a hard limit.
func aboveHardLimits(l Limits) []limitProblem {
	if mayRaiseLimits() {
		return nil
	}
	var cpuHard uint64 // what applyLimits sets: a second past the soft limit
	if l.CPUTime > 0 {
		cpuHard = uint64((l.CPUTime+time.Second-1)/time.Second) + 1
	}
	var out []limitProblem
	for _, lim := range []struct {
		field string
		res   int
		want  uint64
		shown string
	}{
		{"memory", unix.RLIMIT_DATA, uint64(max(l.Memory, 0)), strconv.FormatInt(l.Memory, 10) + " bytes"},
		{"cpuTime", unix.RLIMIT_CPU, cpuHard, l.CPUTime.String()},
		{"openFiles", unix.RLIMIT_NOFILE, uint64(max(l.OpenFiles, 0)), strconv.Itoa(l.OpenFiles)},
		{"processes", unix.RLIMIT_NPROC, uint64(max(l.Processes, 0)), strconv.Itoa(l.Processes)},
	} {
		var rl unix.Rlimit
		if lim.want == 0 || unix.Getrlimit(lim.res, &rl) != nil || rl.Max == unix.RLIM_INFINITY || lim.want <= rl.Max {
			continue
		}
		out = append(out, limitProblem{lim.field, fmt.Sprintf("limits.%s %s is above the hard limit mcpctl runs under (%d), which only a privileged process may raise", lim.field, lim.shown, rl.Max)})
	}
	return out
}

// mayRaiseLimits reports whether this process has CAP_SYS_RESOURCE.
func mayRaiseLimits() bool {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return os.Geteuid() == 0
	}
	for line := range strings.Lines(string(data)) {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			return err == nil && caps&(1<<unix.CAP_SYS_RESOURCE) != 0
		}
	}
	return os.Geteuid() == 0
}
