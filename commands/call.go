package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/engine"
	"github.com/mcpctl/mcpctl/internal/ctxio"
	"github.com/mcpctl/mcpctl/output"
	"github.com/urfave/cli/v3"
)

type callOptions struct {
	name     string
	pairs    []string
	args     string
	timeout  durationFlag
	progress bool
	task     bool
	retry    int
	sampling string
}

func newCallCmd(env *Env) *cli.Command {
	var opts callOptions
	return &cli.Command{
		Name:      "call",
		Usage:     "Call a tool with arguments",
		ArgsUsage: "SERVER.TOOL [KEY=VALUE | KEY:=JSON]...",
		Description: `Calls a tool and prints its result: the text on a terminal, the whole MCP
result as JSON otherwise (every content block, structuredContent, _meta).

Arguments:
  key=value      text, typed by the tool's input schema: a string property
                 stays a string (pin=000123 keeps its zeros), a number,
                 boolean, object or array property is parsed as one
  key:=json      raw JSON (n:=5, tags:='["a","b"]', s:='"text"')
  key=@file      the file's content as the value; key:=@file reads JSON;
                 key=@- reads stdin (as it is, a last newline kept; a
                 file's UTF-8 BOM is dropped)
  key=\@x        a value that starts with @
  --args JSON    a JSON object of arguments, or @FILE, or - for stdin;
                 key=value pairs are applied over it

Arguments are checked against the tool's input schema before the server sees
them; a violation exits 2 naming the property and the rule. A result the
tool marks as an error (isError) is printed and exits 1; with --jq, the
error on stderr also says the result's first text, which the filter may
have left out. A result whose
structuredContent breaks the tool's outputSchema (or is missing) is printed
as sent, with a warning on stderr and in _meta["mcpctl/warnings"].

Progress the server reports is a live line on stderr on a terminal, or JSON
lines on stderr with --progress, even with -q:
{"progress":{"progress":1,"total":3,"message":"..."}} (a task's also have
its status and taskId; total and message only when the server sends them).
Ctrl-C or --timeout tells the server to cancel (exit 130 or 4). A tool
whose execution.taskSupport is "required" runs as a task (MCP 2025-11-25):
created, polled with its status shown as
progress (each change of it a sign of life for --timeout), its result
fetched, and cancelled on Ctrl-C or --timeout; --task runs an "optional"
one as a task too.

The timeout counts from the last sign of life: each progress notification
gives the call the timeout again, up to 10 times the timeout in all. A call
is sent once: it is tried again after a timeout, or after its server died
and is being restarted, only with --retry N or when the tool is annotated
idempotentHint: true (then up to 3 tries), waiting 1s, 2s, 4s... between.

When the server asks something during the call (elicitation), a terminal
gets the question: a form to fill in, or a URL to visit; otherwise the
config's elicitation hook answers, or the question is declined. Sampling
requests go to --sampling-command, else the config's sampling hook; the
timeout stops while they are answered, and --sampling-command is killed
after --timeout (2m without one).

  mcpctl call everything.echo message=hi
  mcpctl call filesystem.read_text_file path=README.md -r --jq '.content[0].text'
  mcpctl call everything.get-sum a:=2 b:=3
  echo '{"message": "hi"}' | mcpctl call everything.echo --args -`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "args", Usage: "arguments as a `JSON` object, @FILE or - (stdin)", Destination: &opts.args},
			timeoutFlag(&opts.timeout),
			&cli.BoolFlag{Name: "progress", Usage: "print progress as JSON lines on stderr", Destination: &opts.progress},
			&cli.BoolFlag{Name: "task", Usage: "run a tool that may run as a task (taskSupport optional) as one", Destination: &opts.task},
			&cli.IntFlag{Name: "retry", Usage: "try the call up to `N` more times after a timeout or a server restart", Destination: &opts.retry},
			&cli.StringFlag{Name: "sampling-command", Usage: "answer the server's sampling requests with `CMD` (params as JSON on stdin, the result as JSON on stdout)", Destination: &opts.sampling},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() == 0 {
				return usagef("call needs a tool: mcpctl call SERVER.TOOL [KEY=VALUE]...", "list the tools with: mcpctl tools")
			}
			opts.name = cmd.Args().First()
			opts.pairs = cmd.Args().Tail()
			return runCall(ctx, env, opts)
		},
	}
}

func runCall(ctx context.Context, env *Env, opts callOptions) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	if _, _, err := engine.SplitName(opts.name); err != nil {
		return env.unqualified(ctx, err, opts.name, "tool")
	}
	if opts.retry < 0 {
		return usagef(fmt.Sprintf("--retry must be 0 or more, not %d", opts.retry))
	}
	req := &engine.CallRequest{Name: opts.name, Task: opts.task, Retry: opts.retry,
		Sampling: env.samplingHook(opts.sampling, opts.timeout.d), Elicitation: env.terminalElicitation()}
	req.TimeoutMs = opts.timeout.millis()
	var done func()
	req.OnProgress, done = env.progressReporter(opts.progress, opts.name)
	defer done()
	quietWhileAsking(req, done)
	if err := env.stdinReadOnce(opts.args, opts.pairs); err != nil {
		return err
	}
	if req.Arguments, err = readArgsFlag(ctx, env, opts.args); err != nil {
		return err
	}
	if req.Pairs, err = resolvePairFiles(env, opts.pairs, "tool"); err != nil {
		return err
	}
	var res *engine.CallResult
	var printed error
	err = env.withHostTimed(ctx, serverOf(opts.name), opts.timeout.d, func(h host) error {
		if res, err = h.CallTool(ctx, req); err != nil {
			return err
		}
		// Printed before the servers started for the call stop: one slow
		// to stop (saving its state) does not hold the result back.
		done()
		for _, w := range resultWarnings(res.Result) {
			env.note("warning: %s", w)
		}
		printed = p.Print(res.Result, func(w io.Writer) error { return output.ToolResult(w, res.Result) })
		return nil
	})
	done()
	if err != nil {
		return err
	}
	err = printed
	var je *output.JQError
	if res.IsError && (err == nil || errors.As(err, &je)) {
		te := &toolError{name: opts.name, server: res.Server, filter: err}
		if err != nil || env.format.JQ != "" {
			// The filter may have kept why from being printed (--jq
			// .structuredContent gives null): stderr tells it.
			te.said = firstText(res.Result)
		}
		return te
	}
	if err != nil {
		return err
	}
	return nil
}

// quietWhileAsking keeps the live progress line off the terminal while
// the user answers a question there: clear wipes the line. One lock holds
// the check and the drawing together, so a line being drawn as the question
// comes is finished before it is wiped, never drawn over the question.
func quietWhileAsking(req *engine.CallRequest, clear func()) {
	ask, show := req.Elicitation, req.OnProgress
	if ask == nil || show == nil {
		return
	}
	var mu sync.Mutex
	asking := 0
	req.OnProgress = func(p engine.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if asking == 0 {
			show(p)
		}
	}
	req.Elicitation = func(ctx context.Context, server string, params json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		asking++
		clear()
		mu.Unlock()
		defer func() {
			mu.Lock()
			asking--
			mu.Unlock()
		}()
		return ask(ctx, server, params)
	}
}

// resultWarnings are what mcpctl found wrong with a result it passed on
// (_meta["mcpctl/warnings"]: a structuredContent that breaks the tool's
// outputSchema).
func resultWarnings(result json.RawMessage) []string {
	var r struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(result, &r) != nil {
		return nil
	}
	var warnings []string
	json.Unmarshal(r.Meta[engine.WarningsMetaKey], &warnings)
	return warnings
}

// firstText is the first text block of a tool result, on one line and
// cut to 200 characters: what a failed tool said.
func firstText(result json.RawMessage) string {
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	json.Unmarshal(result, &r)
	for _, c := range r.Content {
		if c.Type == "text" && c.Text != "" {
			return c.Text // whole: redacted before it is cut (toolError.Error)
		}
	}
	return ""
}

// readArgsFlag reads --args: inline JSON, @FILE, or - for stdin (which
// env.stdinReadOnce has checked is free).
func readArgsFlag(ctx context.Context, env *Env, v string) (json.RawMessage, error) {
	var data []byte
	from := "" // where the JSON came from, for its errors
	switch {
	case v == "":
		return nil, nil
	case v == "-":
		b, err := ctxio.Until(ctx, func() ([]byte, error) { return io.ReadAll(env.In) })
		if ctx.Err() != nil {
			// Ctrl-C while stdin is still open: interrupted, not empty.
			return nil, ctx.Err()
		}
		if err != nil {
			return nil, fmt.Errorf("reading arguments from stdin: %w", err)
		}
		if len(bytes.TrimSpace(b)) == 0 {
			return nil, usagef("--args -: stdin was empty", `pipe a JSON object in, e.g. echo '{"path": "README.md"}' | mcpctl call SERVER.TOOL --args -`)
		}
		data, from = b, "stdin"
	case strings.HasPrefix(v, "@"):
		b, err := env.readFile(v[1:])
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			return nil, usagef(fmt.Sprintf("--args %s: %v", v, unwrapPathError(err)))
		}
		data, from = b, v[1:]
	default:
		data = []byte(v)
	}
	data = withoutBOM(data)
	if !utf8.Valid(data) {
		// Inline arguments are not repeated: they often carry tokens.
		msg := "--args is not UTF-8 text"
		if from != "" {
			msg = fmt.Sprintf("--args %s: %s is not UTF-8 text", v, from)
		}
		return nil, usagef(msg, "send binary data as base64, if the tool takes it so")
	}
	if pos, why := jsonMistake(data); pos != "" {
		if from == "" {
			return nil, usagef(fmt.Sprintf("--args is not valid JSON (at %s: %s)", pos, why), `pass a JSON object, e.g. --args '{"path": "README.md"}'`)
		}
		return nil, usagef(fmt.Sprintf("--args %s: %s:%s: not valid JSON: %s", v, from, pos, why), "the arguments must be a JSON object")
	}
	if string(bytes.TrimSpace(data)) == "null" {
		// The engine reads null as no arguments (a Go nil map); given by
		// hand it is a mistake, as a string or a number is.
		return nil, usagef("--args "+v+": the arguments must be a JSON object, got null", "for no arguments leave --args out, or pass {}")
	}
	return data, nil
}

// jsonMistake says where ("2:5", line and column) and why data is not
// valid JSON; pos is "" when it is. The text itself is not shown:
// arguments often carry tokens.
func jsonMistake(data []byte) (pos, why string) {
	if json.Valid(data) {
		return "", ""
	}
	var v any
	err := json.Unmarshal(data, &v)
	off, why := len(data), "unexpected end of input"
	var se *json.SyntaxError
	if errors.As(err, &se) && !strings.Contains(se.Error(), "unexpected end") {
		off, why = int(se.Offset)-1, se.Error() // Offset is just past the character at fault
	}
	line, col := config.LineCol(data, off)
	return fmt.Sprintf("%d:%d", line, col), why
}

// readStdin reads all of stdin, until Ctrl-C.
func (env *Env) readStdin() ([]byte, error) {
	read := func() ([]byte, error) { return io.ReadAll(env.In) }
	if env.ctx == nil {
		return read()
	}
	return ctxio.Until(env.ctx, read)
}

// readFile reads the file at path (relative to the working directory)
// until the run's context ends: @/dev/stdin or @<(...) may wait on a
// writer that never closes.
func (env *Env) readFile(path string) ([]byte, error) {
	if env.ctx == nil {
		return os.ReadFile(env.abs(path))
	}
	return ctxio.Until(env.ctx, func() ([]byte, error) { return os.ReadFile(env.abs(path)) })
}

// resolvePairFiles replaces key=@file and key:=@file with the file's
// content (key=@- with stdin's), and key=\@x with the literal key=@x. Files
// are read here, by the CLI, because paths are the user's, not the
// session's.
func resolvePairFiles(env *Env, pairs []string, takes string) ([]string, error) {
	out := make([]string, len(pairs))
	for i, p := range pairs {
		k, v, found := strings.Cut(p, "=")
		// Sent on, bytes that are not UTF-8 would become U+FFFD in
		// silence: a file name with them would name another file. (A
		// file's name may have them: its content is checked once read.)
		if !utf8.ValidString(k) || !strings.HasPrefix(v, "@") && !utf8.ValidString(v) {
			return nil, usagef(fmt.Sprintf("argument %s is not UTF-8 text", strings.ToValidUTF8(strings.TrimSuffix(k, ":"), "?")),
				"send binary data as base64, if the "+takes+" takes it so")
		}
		switch {
		case !found:
			out[i] = p
		case strings.HasPrefix(v, `\@`):
			out[i] = k + "=" + v[1:]
		case strings.HasPrefix(v, "@") && len(v) > 1:
			var data []byte
			var err error
			if v == "@-" { // env.stdinReadOnce made sure it is read once
				data, err = env.readStdin()
			} else {
				data, err = env.readFile(v[1:])
			}
			if env.ctx != nil && env.ctx.Err() != nil {
				return nil, env.ctx.Err() // Ctrl-C while a pipe was read
			}
			if err != nil {
				return nil, usagef(fmt.Sprintf("argument %s: %v", strings.TrimSuffix(k, ":"), unwrapPathError(err)),
					`to pass a value that starts with @, write key=\@value`)
			}
			data = withoutBOM(data)
			from, file := v[1:], v[1:] // where it came from; the file for a hint
			if v == "@-" {
				from, file = "stdin", "FILE"
			}
			if key, isJSON := strings.CutSuffix(k, ":"); isJSON {
				if pos, why := jsonMistake(data); pos != "" {
					return nil, usagef(fmt.Sprintf("argument %s: %s:%s: not valid JSON: %s", key, from, pos, why),
						fmt.Sprintf("key:=@FILE takes a file of JSON; to pass its text as a string, write %s=@%s", key, v[1:]))
				}
			} else if !utf8.Valid(data) {
				// A JSON string cannot hold its bytes: they would be sent
				// as U+FFFD, silently.
				return nil, usagef(fmt.Sprintf("argument %s: %s is not UTF-8 text", k, from),
					fmt.Sprintf("send binary data as base64, e.g. %s=\"$(base64 -w0 %s)\", if the %s takes it so", k, file, takes))
			}
			out[i] = k + "=" + string(data)
		default:
			out[i] = p
		}
	}
	return out, nil
}

// withoutBOM is data without the BOM Windows editors and PowerShell begin
// a file with: not JSON's, nor the text's, and skipped as a config file's
// is.
func withoutBOM(data []byte) []byte { return bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) }

func (env *Env) abs(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(env.WorkDir, p)
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}

// unqualified is err, of a name that is not server.item ("echo"), told
// better where that costs no server's start: a running session's lists,
// as they are, say which of its servers offer one so named; else a server
// of that name is told to be one, or an example is made of the config's
// first server.
func (env *Env) unqualified(ctx context.Context, err error, name, what string) error {
	var ee *engine.Error
	if name == "" || strings.Contains(name, ".") || !errors.As(err, &ee) {
		return err
	}
	told := *ee
	if client, sess, cerr := env.client(); cerr == nil && sess.Running() {
		// Read only, and quick: a typo is not worth a wait.
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		client.NoWait = true
		var names []string
		if what == "tool" {
			tools, _ := client.Tools(lctx, "")
			for _, t := range tools {
				names = append(names, t.Name())
			}
		} else {
			prompts, _ := client.Prompts(lctx, "")
			for _, p := range prompts {
				names = append(names, p.Name())
			}
		}
		var said *engine.Error
		if errors.As(engine.NamedWithoutServer(err, name, what, names), &said) && len(said.Candidates) > 0 {
			return said // as the engine says it (serve, a Go caller)
		}
	}
	cfg, _, cerr := env.loadConfigForNames()
	if cerr != nil || len(cfg.Servers) == 0 {
		return err
	}
	if cfg.Server(name) != nil {
		told.Hint = []string{fmt.Sprintf("%s is a server: name one of its %ss as %s.NAME; list them with: mcpctl %ss %s", name, what, name, what, name)}
		return &told
	}
	told.Hint = []string{fmt.Sprintf("name a %s as server.%s, e.g. %s.%s; list them with: mcpctl %ss", what, what, cfg.Servers[0].Name, name, what)}
	return &told
}
