package commands

import (
	"context"
	"os"
	"testing"
)

// A session run in-process by a test starts its watchdog as
// /proc/self/exe _watchdog: this test binary, which must then be the
// watchdog, not run the tests again (each of which would start a session,
// and a watchdog, again).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == watchdogCmd {
		os.Exit(Main(context.Background(), os.Args, os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
