package config

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A limit above the hard limit mcpctl runs under cannot be set on a
// server (prlimit refuses it without CAP_SYS_RESOURCE): validate says so
// before anything starts, naming the limit.
func TestLimitAboveHardLimit(t *testing.T) {
	if mayRaiseLimits() {
		t.Skip("this process has CAP_SYS_RESOURCE: it may raise any hard limit")
	}
	// RLIMIT_CPU is unlimited as a rule; a hard limit of 20 hours binds
	// nothing in a test run, and can only be lowered.
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CPU, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Max == unix.RLIM_INFINITY || rl.Max > 72000 {
		rl.Max = 72000
		rl.Cur = min(rl.Cur, rl.Max)
		if err := unix.Setrlimit(unix.RLIMIT_CPU, &rl); err != nil {
			t.Fatal(err)
		}
	}
	// The server's hard limit is a second past cpuTime: cpuTime at the
	// hard limit itself is already over.
	over := time.Duration(rl.Max) * time.Second
	cfg, err := loadFile(t, "mcp.json", fmt.Sprintf(`{"servers": {
  "over": {"command": "sh", "limits": {"cpuTime": %q}},
  "within": {"command": "sh", "limits": {"cpuTime": %q}}}}`, over, over-time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	errs := cfg.Server("over").Check()
	want := fmt.Sprintf("limits.cpuTime %s is above the hard limit mcpctl runs under (%d)", over, rl.Max)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), want) || !strings.Contains(errs[0].Error(), "mcp.json:2:") {
		t.Errorf("over: %v, want one error saying %q at its place", errs, want)
	}
	// At the value, named to the limit: not at "limits".
	if e := errs[0].AsConfigError(); e.Field != "servers.over.limits.cpuTime" || e.Line != 2 || e.Col != 51 {
		t.Errorf("placed at %d:%d %s, want 2:51 servers.over.limits.cpuTime", e.Line, e.Col, e.Field)
	}
	if errs := cfg.Server("within").Check(); len(errs) != 0 {
		t.Errorf("within: %v", errs)
	}
}
