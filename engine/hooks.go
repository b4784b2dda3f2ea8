package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/mcpctl/mcpctl/config"
)

// maxHookOutput bounds what a hook may print: a result, not a stream.
const maxHookOutput = 16 << 20

// HookHandler returns a RequestHandler that runs a hook for method
// (MethodSampling or MethodElicitation): the command gets the request's
// params as JSON on stdin and prints the result as JSON. It is how
// `--sampling-command` answers.
//
// The command's answer is what it printed by the time its shell exits,
// even if something it started in the background still holds its stdout.
// The command runs in a process group of its own, killed when the shell
// exits (answered or failed), when the hook's Timeout is up, or when ctx
// ends: nothing it started outlives it. When ctx ends first, the error
// wraps ctx's error (errors.Is), and says the caller gave up.
func HookHandler(h *config.Hook, method string) RequestHandler {
	return func(ctx context.Context, server string, params json.RawMessage) (json.RawMessage, error) {
		return runHook(ctx, h, server, method, params)
	}
}

func (s *server) runHookHandler(h *config.Hook, method string) RequestHandler {
	return func(ctx context.Context, server string, params json.RawMessage) (json.RawMessage, error) {
		res, err := runHook(ctx, h, server, method, params)
		if err != nil {
			red := &redactedError{msg: s.cfg().Redact(err.Error())}
			if ce := ctx.Err(); ce != nil && errors.Is(err, ce) {
				red.ctxErr = ce
			}
			err = red
		}
		return res, err
	}
}

// A redactedError is an error's redacted text. It unwraps to the context
// error the original wrapped, if any, so that errors.Is still tells that
// the caller gave up, and to nothing else, which may hold what was hidden.
type redactedError struct {
	msg    string
	ctxErr error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.ctxErr }

// hookPipeWait bounds how long a hook's pipes are read once the hook has
// exited (or been killed): what it started and left running (`cmd &`)
// holds them open, and is not worth waiting for.
const hookPipeWait = 200 * time.Millisecond

// errHookTimeout is the cause of a hook's context when its own timeout,
// not its caller, ends it.
var errHookTimeout = errors.New("hook timed out")

func runHook(ctx context.Context, h *config.Hook, server, method string, params json.RawMessage) (json.RawMessage, error) {
	what := "the " + strings.SplitN(method, "/", 2)[0] + " hook"
	if h.Source != "" {
		what += " (" + h.Source + ")"
	}
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = config.DefaultHookTimeout
	}
	start := time.Now()
	hookCtx, cancel := context.WithTimeoutCause(ctx, timeout, errHookTimeout)
	defer cancel()
	cmd := exec.CommandContext(hookCtx, "/bin/sh", "-c", h.Command)
	cmd.Dir = h.Dir
	cmd.Env = append(os.Environ(), "MCPCTL_SERVER="+server, "MCPCTL_METHOD="+method)
	cmd.Stdin = bytes.NewReader(params)
	var stdout limitedBuffer
	var stderr tailBuffer
	stdout.max = maxHookOutput
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The hook and whatever it starts form one group (sysProcAttr), killed
	// at once when time is up, and killed with mcpctl should it die.
	cmd.SysProcAttr = sysProcAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Once the shell has exited, its answer is what it printed by then,
	// even if something it started still holds its stdout.
	cmd.WaitDelay = hookPipeWait
	err := cmd.Run()
	if cmd.Process != nil {
		// Nothing the hook started outlives it, whether it answered,
		// failed or ran out of time.
		killHookGroup(cmd.Process.Pid)
	}
	// A shell that exited by itself (not killed) has answered, or failed,
	// whatever its context did since; one that was killed did not.
	exited := cmd.ProcessState != nil && cmd.ProcessState.Exited()
	if exited && cmd.ProcessState.Success() {
		err = nil // not ErrWaitDelay (pipes held open) nor a late deadline
	}
	switch {
	case !exited && context.Cause(hookCtx) == errHookTimeout:
		return nil, fmt.Errorf("%s did not answer within %s", what, timeout)
	case !exited && ctx.Err() != nil:
		return nil, hookStopped(ctx, what, time.Since(start))
	case err != nil:
		msg := fmt.Sprintf("%s failed: %v", what, err)
		if tail := stderr.String(); tail != "" {
			msg += ": " + tail
		}
		return nil, errors.New(msg)
	case stdout.over:
		return nil, fmt.Errorf("%s printed more than %d MiB", what, maxHookOutput>>20)
	}
	out := bytes.TrimSpace(stdout.Bytes())
	if !json.Valid(out) || len(out) == 0 || out[0] != '{' {
		return nil, fmt.Errorf("%s did not print a JSON object (it printed %q)", what, clip(string(out), 80))
	}
	return out, nil
}

// hookStopped is the error of a hook stopped after d because its caller's
// ctx ended; it wraps ctx's error, and names the cause when there is
// another.
func hookStopped(ctx context.Context, what string, d time.Duration) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, err) {
		return fmt.Errorf("%s was stopped after %s, its caller gave up: %w (%w)", what, d.Round(time.Millisecond), err, cause)
	}
	return fmt.Errorf("%s was stopped after %s, its caller gave up: %w", what, d.Round(time.Millisecond), err)
}

// killHookGroup kills the process group of a hook whose shell has ended,
// and waits a little for it to go, so that mcpctl reaps what it left when
// mcpctl is init.
func killHookGroup(pgid int) {
	if !groupAlive(pgid) {
		return // nothing left: its pgid may be anyone's by now
	}
	signalGroup(pgid, syscall.SIGKILL)
	awaitGroupGone(pgid, time.Second)
	reapGroup(pgid)
}

// limitedBuffer keeps the first max bytes and notes whether more came.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.over = true
		b.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// tailBuffer keeps the last few lines written, for an error message.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-2048:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	lines := strings.Split(strings.TrimSpace(string(t.b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, " / ")
}

var _ io.Writer = (*tailBuffer)(nil)

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
