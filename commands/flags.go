package commands

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v3"
)

// A durationFlag is a --timeout: zero when not given.
type durationFlag struct{ d time.Duration }

// timeoutFlag is the one --timeout every request command has.
func timeoutFlag(dst *durationFlag) cli.Flag {
	return &cli.DurationFlag{Name: "timeout", Usage: "give up after `DURATION` (default: the server's requestTimeout, 60s unless set); the server is told to cancel. It bounds the servers' start too (with a session, of one the request starts on use), then the request afresh", Destination: &dst.d, HideDefault: true,
		// Timeouts go by whole milliseconds, and 0 would be the default:
		// a value below 1ms would silently mean 60s.
		Action: func(_ context.Context, _ *cli.Command, d time.Duration) error {
			if d < time.Millisecond {
				return usagef(fmt.Sprintf("--timeout %s: must be at least 1ms", d), "leave --timeout out for the server's requestTimeout")
			}
			return nil
		}}
}

// millis returns the timeout in milliseconds (0: the default); the flag's
// Action refused what is under 1ms.
func (f durationFlag) millis() int64 { return f.d.Milliseconds() }
