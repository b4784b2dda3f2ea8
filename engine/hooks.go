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
func HookHandler(h *config.Hook, method string) RequestHandler {
	return func(ctx context.Context, server string, params json.RawMessage) (json.RawMessage, error) {
		return runHook(ctx, h, server, method, params)
	}
}

func (s *server) runHookHandler(h *config.Hook, method string) RequestHandler {
	return func(ctx context.Context, server string, params json.RawMessage) (json.RawMessage, error) {
		res, err := runHook(ctx, h, server, method, params)
		if err != nil {
			err = errors.New(s.cfg().Redact(err.Error()))
		}
		return res, err
	}
}

func runHook(ctx context.Context, h *config.Hook, server, method string, params json.RawMessage) (json.RawMessage, error) {
	what := "the " + strings.SplitN(method, "/", 2)[0] + " hook"
	if h.Source != "" {
		what += " (" + h.Source + ")"
	}
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = config.DefaultHookTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", h.Command)
	cmd.Dir = h.Dir
	cmd.Env = append(os.Environ(), "MCPCTL_SERVER="+server, "MCPCTL_METHOD="+method)
	cmd.Stdin = bytes.NewReader(params)
	var stdout limitedBuffer
	var stderr tailBuffer
	stdout.max = maxHookOutput
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The hook and whatever it starts form one group, killed at once when
	// time is up;	// sysProcAttr: a group of its own, killed with mcpctl should it die.
	cmd.SysProcAttr = sysProcAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return nil, fmt.Errorf("%s did not answer within %s", what, timeout)
	case ctx.Err() != nil:
		return nil, ctx.Err()
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
