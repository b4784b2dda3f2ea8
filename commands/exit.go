package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/engine"
	"github.com/mcpctl/mcpctl/output"
	"github.com/urfave/cli/v3"
)

// Exit codes. This table is the contract with scripts; the README and the
// man page repeat it.
const (
	exitOK          = 0   // success
	exitToolError   = 1   // the tool, prompt or resource answered with an error (or mcpctl failed unexpectedly)
	exitUsage       = 2   // bad command line, arguments or config
	exitUnavailable = 3   // a server is unavailable or failed to start
	exitTimeout     = 4   // a server did not answer in time
	exitProtocol    = 5   // a server answered with a protocol error
	exitNoSession   = 6   // no session runs where one is required
	exitAuth        = 7   // a server needs authorization: mcpctl auth login
	exitInterrupted = 130 // interrupted (Ctrl-C)
)

var exitOfKind = map[engine.Kind]int{
	engine.KindUsage:       exitUsage,
	engine.KindConfig:      exitUsage,
	engine.KindUnavailable: exitUnavailable,
	engine.KindTimeout:     exitTimeout,
	engine.KindProtocol:    exitProtocol,
	engine.KindNoSession:   exitNoSession,
	engine.KindAuth:        exitAuth,
	engine.KindInternal:    exitToolError,
}

// A usageError is a mistake on the command line.
type usageError struct {
	msg   string
	hints []string
}

func (e *usageError) Error() string   { return e.msg }
func (e *usageError) Hints() []string { return e.hints }

func usagef(msg string, hints ...string) error { return &usageError{msg: msg, hints: hints} }

// A toolError is a result the tool itself marked as failed (isError). The
// result is printed; the exit code says it failed. filter is why --jq
// failed on that result, if it did: the tool's failure still decides the
// exit code. said is the result's first text when a --jq filter ran on
// it, which may have left it out of what was printed.
type toolError struct {
	name   string // server.tool
	server string
	filter error
	said   string // the result's first text, told when a filter may have kept it from being printed
}

func (e *toolError) Error() string {
	msg := e.name + " reported an error (isError)"
	if e.said != "" {
		msg += ": " + firstLine(strings.Join(strings.Fields(e.said), " "), 200)
	}
	if e.filter != nil {
		if e.said != "" {
			msg += ";"
		}
		return msg + " and " + e.filter.Error()
	}
	return msg
}

// redactedWhole stands for a text that could not be redacted.
const redactedWhole = "<not shown: it may hold a server's secret>"

// redactResultError hides the servers' secrets in an error made here from
// what a server answered, which is printed as sent but which the error
// repeats on stderr, where secrets never go: a --jq filter's error (which
// quotes the value it failed on) and the text of a result marked isError
// that the filter kept from being printed. The engine's own errors are
// redacted already.
func redactResultError(env *Env, err error, info *output.ErrorInfo) {
	var (
		je *output.JQError
		te *toolError
	)
	if errors.As(err, &te) && te.filter == nil && te.said == "" {
		return // no text of the server's in it: "srv.tool reported an error (isError)"
	}
	if env.redact == nil || te == nil && !errors.As(err, &je) {
		return
	}
	ok := true
	redact := func(text string) string {
		r, done := env.redact(hideCutValues(text))
		ok = ok && done
		return r
	}
	if te != nil {
		// Whole, then cut: a secret the cut splits is not found.
		te.said = redact(te.said)
		if te.filter != nil {
			te.filter = errors.New(redact(te.filter.Error()))
		}
		info.Message = te.Error()
	} else {
		info.Message = redact(info.Message)
	}
	if info.Text != "" {
		info.Text = redact(info.Text)
	}
	if !ok {
		info.Hints = append(info.Hints, "the session could not hide its servers' secrets in this error, so it is not shown: run the command again; a session of an older mcpctl cannot, restart it with this one: mcpctl down && mcpctl up")
	}
}

// cutValue stands for a value gojq quoted cut short.
const cutValue = "<a value cut short: not shown>"

// hideCutValues replaces the values a --jq error quotes cut short (gojq
// previews a value in at most 30 bytes, ending ` ..."`, ` ...]` or
// ` ...}`) with cutValue: a secret cut short is not whole, and no
// redaction finds it. Rightmost first: a cut value inside another's
// preview (["Loading ...", ...) goes with the outer one.
func hideCutValues(msg string) string {
	openers := map[byte]byte{'"': '"', ']': '[', '}': '{'}
	for limit := len(msg); ; {
		i := strings.LastIndex(msg[:limit], " ...")
		if i < 0 {
			return msg
		}
		end := i + len(" ...") + 1
		open, ok := byte(0), false
		if end <= len(msg) {
			open, ok = openers[msg[end-1]]
		}
		// The preview begins with its opener, 27 to 30 bytes before its
		// end (a rune is not split).
		start := -1
		for k := max(end-30, 0); ok && k <= end-27; k++ {
			if msg[k] == open && (open != '"' || k == 0 || msg[k-1] != '\\') {
				start = k
				break
			}
		}
		if start < 0 {
			limit = i
			continue
		}
		msg = msg[:start] + cutValue + msg[end:]
		limit = start
	}
}

// errorInfo is the one place an error becomes an exit code and the text or
// JSON the user sees.
func errorInfo(err error) output.ErrorInfo {
	// An error no case below knows is mcpctl's own failure (its output
	// could not be written, say).
	info := output.ErrorInfo{Code: string(engine.KindInternal), ExitCode: exitToolError, Message: err.Error()}
	var hinter interface{ Hints() []string }
	if errors.As(err, &hinter) {
		info.Hints = hinter.Hints()
	}
	var (
		ee    *engine.Error
		ue    *usageError
		te    *toolError
		je    *output.JQError
		ce    *config.Error
		ces   config.Errors
		cnf   *config.NotFoundError
		codes = func(code string, exit int) { info.Code, info.ExitCode = code, exit }
	)
	switch {
	case outputClosed(err):
		// Whoever read the output is gone, and with it any reader of
		// what would be printed here: Main prints nothing.
		codes("output_closed", exitOutputClosed)
	case errors.As(err, &te):
		codes("tool_error", exitToolError)
		info.Server = te.server
	case errors.As(err, &ee):
		codes(string(ee.Kind), exitOfKind[ee.Kind])
		info.Message, info.Text = ee.Message, ee.Error()
		if info.ExitCode == 0 {
			info.ExitCode = exitToolError
		}
		info.Server = ee.Server
		info.Details = map[string]any{}
		if len(ee.Violations) > 0 {
			info.Details["violations"] = ee.Violations
		}
		if len(ee.Candidates) > 0 {
			info.Details["candidates"] = ee.Candidates
		}
		if len(ee.Stderr) > 0 {
			info.Details["stderr"] = ee.Stderr
		}
		if len(ee.Stdout) > 0 {
			info.Details["stdout"] = ee.Stdout
		}
		if ee.Answer != nil {
			info.Details["answer"] = ee.Answer // the server's own error, as it sent it
		}
		if len(info.Details) == 0 {
			info.Details = nil
		}
	case errors.As(err, &ue), errors.As(err, &je):
		codes("usage", exitUsage)
	case strings.HasPrefix(info.Message, "No help topic for '"):
		// urfave's help command, asked about a command there is not.
		codes("usage", exitUsage)
		topic, _, _ := strings.Cut(strings.TrimPrefix(info.Message, "No help topic for '"), "'")
		info.Message = fmt.Sprintf("no help on %q: there is no such command", topic)
		info.Hints = []string{"see the commands with: mcpctl --help"}
	case errors.As(err, &ces), errors.As(err, &ce), errors.As(err, &cnf):
		codes("config", exitUsage)
	case errors.Is(err, context.Canceled):
		codes("interrupted", exitInterrupted)
		info.Message = "interrupted"
		var co *carriedOn
		if errors.As(err, &co) {
			info.Message = co.Error()
			info.Hints = []string{"see how it goes with: mcpctl status"}
		}
	case errors.Is(err, context.DeadlineExceeded):
		codes("timeout", exitTimeout)
	}
	return info
}

// noArgs refuses arguments to a command that takes none.
func noArgs(cmd *cli.Command) error {
	if cmd.Args().Len() > 0 {
		return usagef(cmd.FullName()+" takes no arguments", "see: "+cmd.FullName()+" --help")
	}
	return nil
}

// A carriedOn is the interruption (Ctrl-C) of a command that asked the
// session for something the session goes on with: only the waiting ends.
type carriedOn struct{ what string }

func (c *carriedOn) Error() string { return "interrupted: the session carries on with " + c.what }

func (c *carriedOn) Unwrap() error { return context.Canceled }

// sessionCarriesOn is err, or, when ctx ended it (Ctrl-C), a carriedOn
// with what.
func sessionCarriesOn(ctx context.Context, err error, what string) error {
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return &carriedOn{what: what}
	}
	return err
}
