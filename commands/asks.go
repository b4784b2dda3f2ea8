package commands

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/engine"
	"golang.org/x/term"
)

// samplingHook answers sampling for one run (--sampling-command); nil
// without one. It is killed after timeout, the call's --timeout when given
// (a call of --timeout 3s must not wait on it for the hooks' 2 minutes),
// else after the hooks' default.
func (env *Env) samplingHook(command string, timeout time.Duration) engine.RequestHandler {
	if command == "" {
		return nil
	}
	if timeout <= 0 {
		timeout = config.DefaultHookTimeout
	}
	h := &config.Hook{Command: command, Dir: env.WorkDir, Timeout: timeout, Source: "--sampling-command"}
	return engine.HookHandler(h, engine.MethodSampling)
}

// terminalElicitation asks the person at the terminal what a server asks
// (elicitation/create); nil when no one is there to answer, so that the
// session's hook, or a decline, answers instead.
//
// Someone is there when stdin is a terminal: an agent or a script running
// mcpctl gives it none, and must not wait on a question no one sees. The
// questions go to stderr when it is the terminal, else to the controlling
// terminal (/dev/tty), as ssh and sudo ask.
func (env *Env) terminalElicitation() engine.RequestHandler {
	in, ok := env.In.(*os.File)
	if !ok || !term.IsTerminal(int(in.Fd())) {
		return nil
	}
	var one sync.Mutex // one question on the terminal at a time
	return func(ctx context.Context, server string, params json.RawMessage) (json.RawMessage, error) {
		one.Lock()
		defer one.Unlock()
		out := env.ErrOut
		if !isTerminal(out) {
			tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
			if err != nil {
				return json.RawMessage(`{"action":"decline"}`), nil
			}
			defer tty.Close()
			out = tty
		}
		return elicitOnTerminal(ctx, in, out, server, params, engine.ElicitationCompleted(ctx))
	}
}
