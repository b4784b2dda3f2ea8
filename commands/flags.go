package commands

import (
	"time"

	"github.com/urfave/cli/v3"
)

// A durationFlag is a --timeout: zero when not given.
type durationFlag struct{ d time.Duration }

// timeoutFlag is the one --timeout every request command has.
func timeoutFlag(dst *durationFlag) cli.Flag {
	return &cli.DurationFlag{Name: "timeout", Usage: "give up after `DURATION` (default: the server's requestTimeout, 60s unless set); the server is told to cancel", Destination: &dst.d, HideDefault: true}
}

// millis returns the timeout in milliseconds (0: the default).
func (f durationFlag) millis() (int64, error) {
	if f.d < 0 {
		return 0, usagef("--timeout must be positive")
	}
	return f.d.Milliseconds(), nil
}
