package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/engine"
	"github.com/mcpctl/mcpctl/output"
	"github.com/urfave/cli/v3"
	"golang.org/x/term"
)

// An Env is what every command works with: its streams, its environment and
// the global flags. It replaces package-level state, so the whole CLI can run
// in-process, many times, in tests.
type Env struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// StdoutTTY and StderrTTY say whether the streams are terminals
	// (MCPCTL_FORCE_TTY=1 forces both, for tests of the terminal layout).
	StdoutTTY bool
	StderrTTY bool
	LookupEnv func(string) (string, bool)
	WorkDir   string
	// ctx is the run's: a signal ends it. What outlives a command's own
	// context (the --jq filter of its result) stops with it.
	ctx context.Context
	// inputFailed is the id of an input that got no value on the
	// terminal: the inputs after it are not asked.
	inputFailed string

	// Global flags.
	configFlags []string
	sessionFlag string
	headerFlags []string // --header NAME=VALUE, for remote servers this command starts
	quiet       bool     // --quiet: no notes, no live progress on stderr
	version     bool     // --version
	format      output.Format

	printer  *output.Printer
	cfgPaths []string
	// command is the command being run (its full name), for hints.
	command string
	// redact hides the servers' secrets in an error made from what they
	// answered (see redactResultError), or says it could not; nil until a
	// host is chosen.
	redact func(string) (string, bool)
}

func newEnv(in io.Reader, out, errOut io.Writer) *Env {
	env := &Env{In: in, Out: out, ErrOut: errOut, LookupEnv: os.LookupEnv}
	env.WorkDir, _ = os.Getwd()
	env.StdoutTTY = isTerminal(out)
	env.StderrTTY = isTerminal(errOut)
	if v, _ := env.LookupEnv("MCPCTL_FORCE_TTY"); v == "1" {
		env.StdoutTTY, env.StderrTTY = true, true
	}
	return env
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (env *Env) getenv(k string) string {
	v, _ := env.LookupEnv(k)
	return v
}

// Printer returns the result printer, compiling --jq on first use.
func (env *Env) Printer() (*output.Printer, error) {
	if env.printer == nil {
		if env.format.Raw && env.format.JQ == "" {
			// It would do nothing: JSON is printed as JSON.
			return nil, usagef("-r (--raw) prints the strings --jq makes without quotes; it needs --jq", rawExample(env.command))
		}
		f := env.format
		f.Context = env.ctx
		f.Stderr = env.ErrOut
		f.TTY = env.StdoutTTY
		if f.TTY {
			f.Width = terminalWidth(env.Out, env.getenv)
		}
		p, err := output.New(env.Out, f)
		if err != nil {
			return nil, err
		}
		env.printer = p
	}
	return env.printer, nil
}

// noteIfSlow notes msg() on a terminal's stderr (not with --quiet) once
// after d, unless the returned stop is called first; stop returns once a
// note begun is written, so nothing is written after it.
func (env *Env) noteIfSlow(d time.Duration, msg func() string) (stop func()) {
	if !env.StderrTTY || env.quiet {
		return func() {}
	}
	written := make(chan struct{})
	t := time.AfterFunc(d, func() {
		defer close(written)
		env.note("%s", msg())
	})
	return func() {
		if !t.Stop() {
			<-written
		}
	}
}

// rawExamples are a --jq -r for each command whose JSON has an obvious
// string to print.
var rawExamples = map[string]string{
	"mcpctl call":      "mcpctl call SERVER.TOOL --jq '.content[0].text' -r",
	"mcpctl prompt":    "mcpctl prompt SERVER.PROMPT --jq '.messages[].content.text' -r",
	"mcpctl resource":  "mcpctl resource URI --jq '.contents[0].text' -r",
	"mcpctl tools":     "mcpctl tools --jq '.[].name' -r",
	"mcpctl prompts":   "mcpctl prompts --jq '.[].name' -r",
	"mcpctl resources": "mcpctl resources --jq '.resources[].uri' -r",
	"mcpctl inspect":   "mcpctl inspect --jq '.[].name' -r",
	"mcpctl status":    "mcpctl status --jq '.servers[] | .name + \" \" + .state' -r",
	"mcpctl metrics":   "mcpctl metrics --jq '.[].server' -r",
	"mcpctl logs":      "mcpctl logs --jq '.msg' -r",
	"mcpctl watch":     "mcpctl watch --jq '.type' -r",
	"mcpctl version":   "mcpctl version --jq '.version' -r",
	"mcpctl":           "mcpctl --version --jq '.version' -r",
}

// rawExample is the hint for -r without --jq in command.
func rawExample(command string) string {
	if ex, ok := rawExamples[command]; ok {
		return "e.g. " + ex
	}
	return fmt.Sprintf("see its JSON with: %s --json; then print a string of it, e.g. --jq '.name' -r", command)
}

// mcpctlCommands are the commands a hint may advise; TestHintCommands
// keeps the list the command tree's.
var mcpctlCommands = []string{"auth", "call", "complete", "completion", "config", "down", "help", "inspect", "logs", "metrics",
	"prompt", "prompts", "reload", "resource", "resources", "restart", "serve", "start", "status", "stop", "tools", "up", "version", "watch"}

// mcpctlCommand finds where a hint tells to run mcpctl: its name and a
// command's, not a sentence about mcpctl ("mcpctl as it is").
var mcpctlCommand = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\bmcpctl ((?:` + strings.Join(mcpctlCommands, "|") + `)\b)`)
})

// withGlobalFlags is hints with the -c and --session the user gave added to
// each mcpctl command they advise ("mcpctl -c my.json up"): without them
// the command copied from the hint finds another config, or none.
func (env *Env) withGlobalFlags(hints []string) []string {
	var flags []string
	piped := false // a config from a pipe, which up refuses
	for _, c := range env.configFlags {
		if procSubstitution.MatchString(c) {
			// -c <(…): its /dev/fd/63 is gone once read.
			flags = append(flags, "-c <(…)")
			piped = true
			continue
		}
		piped = piped || c == "/dev/stdin"
		flags = append(flags, "-c "+shellWord(c))
	}
	var session []string
	if env.sessionFlag != "" {
		session = []string{"--session " + shellWord(env.sessionFlag)}
	}
	if len(flags) == 0 && len(session) == 0 {
		return hints
	}
	withFlags := func(advice string) string {
		cmd := strings.TrimPrefix(advice, "mcpctl ")
		if piped && cmd == "up" {
			// The session reads its config again: a pipe cannot be.
			return strings.Join(slices.Concat([]string{"mcpctl -c FILE"}, session, []string{"up (the config saved to FILE: a session reads it again)"}), " ")
		}
		return strings.Join(slices.Concat([]string{"mcpctl"}, flags, session, []string{cmd}), " ")
	}
	out := make([]string, len(hints))
	for i, h := range hints {
		out[i] = h
		if !strings.Contains(h, " -c ") && !strings.Contains(h, "--config") && !strings.Contains(h, "--session") {
			out[i] = mcpctlCommand().ReplaceAllStringFunc(h, withFlags)
		}
	}
	return out
}

// procSubstitution matches the path a shell gives for <(…).
var procSubstitution = regexp.MustCompile(`^/(dev|proc/(self|[0-9]+))/fd/[0-9]+$`)

// shellWord is s as a shell reads it back: as it is, or single-quoted.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-+=:@,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// jsonRequested says whether --json or --jq was given.
func (env *Env) jsonRequested() bool { return env.format.JSON || env.format.JQ != "" }

// noJSON refuses --json and --jq for a command whose output is not JSON.
func (env *Env) noJSON(cmd *cli.Command, prints string) error {
	if !env.jsonRequested() && !env.format.Raw {
		return nil
	}
	flag := "--jq"
	switch {
	case env.format.JQ != "":
	case env.format.JSON:
		flag = "--json"
	default:
		flag = "-r (--raw)"
	}
	return usagef(fmt.Sprintf("%s prints %s, not JSON: %s does not apply", cmd.FullName(), prints, flag), "leave "+flag+" out")
}

// jsonErrors says whether errors are printed as one JSON object: in JSON
// mode, that is when stdout is not a terminal or --json or --jq was given.
func (env *Env) jsonErrors() bool {
	return env.jsonRequested() || !env.StdoutTTY
}

// note tells the user something on stderr, unless --quiet.
func (env *Env) note(format string, args ...any) {
	if !env.quiet {
		output.Note(env.ErrOut, format, args...)
	}
}

// noteHint is note for a line that advises an mcpctl command: it is given
// with the -c and --session this command was run with (withGlobalFlags).
func (env *Env) noteHint(format string, args ...any) {
	env.note("%s", env.withGlobalFlags([]string{fmt.Sprintf(format, args...)})[0])
}

// discovery finds the config files: every --config, else $MCPCTL_CONFIG,
// else the first of ./mcp.json, ./.vscode/mcp.json, ./.mcp.json, ./mcp.toml,
// ./.codex/config.toml.
func (env *Env) discovery() (*config.Discovery, error) {
	return config.Discover(env.configFlags, env.LookupEnv, env.WorkDir)
}

// configPaths returns the canonical paths of the config files: absolute,
// symlinks resolved. They identify the session.
func (env *Env) configPaths() ([]string, error) {
	if env.cfgPaths != nil {
		return env.cfgPaths, nil
	}
	d, err := env.discovery()
	if err != nil {
		return nil, err
	}
	for _, p := range d.Files {
		env.cfgPaths = append(env.cfgPaths, engine.CanonicalPath(p))
	}
	return env.cfgPaths, nil
}

// configFromStdin reports whether a config file is this process's stdin
// (-c /dev/stdin): stdin is then read for it, and holds nothing else.
func (env *Env) configFromStdin() bool {
	paths, _ := env.configPaths()
	return slices.ContainsFunc(paths, isStdinPath)
}

// isStdinPath reports a path that names stdin.
func isStdinPath(p string) bool {
	switch p {
	case "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0":
		return true
	}
	return false
}

// stdinReadOnce refuses two readers of stdin (--args -, key=@-, or either
// as @/dev/stdin), and one when the config is on stdin: the second read
// got nothing, which was sent as "" in silence.
func (env *Env) stdinReadOnce(args string, pairs []string) error {
	readsStdin := func(v string) bool { return v == "@-" || strings.HasPrefix(v, "@") && isStdinPath(v[1:]) }
	var by []string
	if args == "-" || readsStdin(args) {
		by = append(by, "--args")
	}
	for _, p := range pairs {
		if k, v, found := strings.Cut(p, "="); found && readsStdin(v) {
			by = append(by, "argument "+strings.TrimSuffix(k, ":"))
		}
	}
	switch {
	case len(by) > 0 && env.configFromStdin():
		return usagef(by[0]+" reads stdin, which holds the config (-c /dev/stdin)", "give it inline or from a file: @FILE")
	case len(by) > 1:
		return usagef(fmt.Sprintf("%s and %s both read stdin, which is read once", by[0], by[1]), "give one of them from a file: @FILE")
	}
	return nil
}

// configShown names the config files for messages.
func (env *Env) configShown() string {
	paths, _ := env.configPaths()
	return strings.Join(paths, ", ")
}

// sessionShown names what a command looked for a session of: the session
// named by --session or $MCPCTL_SESSION, else the config files.
func (env *Env) sessionShown() string {
	if name := env.sessionName(); name != "" {
		return "session " + name
	}
	return env.configShown()
}

// sessionName is the session named by --session, else $MCPCTL_SESSION,
// else "" (the session of the config files).
func (env *Env) sessionName() string {
	if env.sessionFlag != "" {
		return env.sessionFlag
	}
	return env.getenv("MCPCTL_SESSION")
}

// loadConfig reads and checks the config files. Inputs without a
// $MCPCTL_INPUT_<ID> are asked for when stdin and stderr are a terminal.
func (env *Env) loadConfig() (*config.Config, error) { return env.loadConfigAsking(env.canAsk()) }

// loadConfigHidingInputs is loadConfig for showing the config with its
// secrets hidden: an input nothing gives a value is not asked for, and
// is <redacted>.
func (env *Env) loadConfigHidingInputs() (*config.Config, error) {
	return env.loadConfigWith(false, config.Redacted)
}

// loadConfigAsking is loadConfig, asking for inputs only when ask is set.
func (env *Env) loadConfigAsking(ask bool) (*config.Config, error) {
	return env.loadConfigWith(ask, "")
}

func (env *Env) loadConfigWith(ask bool, placeholder string) (*config.Config, error) {
	paths, err := env.configPaths()
	if err != nil {
		return nil, err
	}
	opts := config.Options{LookupEnv: env.LookupEnv, WorkDir: env.WorkDir, Placeholder: placeholder, Context: env.ctx}
	switch {
	case ask:
		opts.Ask = env.askInput
	case env.canAsk():
		// On a terminal, but a command that only looks (status).
		opts.NoAskHint = func(name string) string {
			return fmt.Sprintf("set %s, or run a command that starts the servers (mcpctl up), which asks for it", name)
		}
	}
	cfg, err := config.LoadFiles(paths, opts)
	if err != nil {
		return nil, err
	}
	if err := env.addHeaders(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// addHeaders adds the --header flags to each remote server of cfg.
func (env *Env) addHeaders(cfg *config.Config) error {
	headers, err := env.headers()
	if err != nil {
		return err
	}
	for _, h := range headers {
		for _, s := range cfg.Servers {
			if !s.IsStdio() {
				s.AddHeader(h[0], h[1])
			}
		}
	}
	return nil
}

// readHeaders takes the --header flags of the up that started this session
// from the pipe at fd (see spawnSession).
func (env *Env) readHeaders(fd int) error {
	syscall.CloseOnExec(fd) // not for its servers
	f := os.NewFile(uintptr(fd), "headers")
	defer f.Close()
	data, err := io.ReadAll(f)
	if err == nil {
		err = json.Unmarshal(data, &env.headerFlags)
	}
	if err != nil {
		return &engine.Error{Kind: engine.KindInternal, Message: fmt.Sprintf("cannot read the --header flags from the up that started this session: %v", err)}
	}
	return nil
}

// headers are the --header flags as name and value, checked.
func (env *Env) headers() ([][2]string, error) {
	var out [][2]string
	for _, h := range env.headerFlags {
		name, value, ok := strings.Cut(h, "=")
		if !ok {
			name, value, ok = strings.Cut(h, ":")
		}
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" {
			return nil, usagef(fmt.Sprintf("--header %q is not NAME=VALUE", config.Redacted), `e.g. --header "Authorization=Bearer $TOKEN"`)
		}
		if why := config.HeaderProblem(name, value); why != "" {
			return nil, usagef("--header: "+why, `e.g. --header "Authorization=Bearer $TOKEN"`)
		}
		out = append(out, [2]string{name, value})
	}
	return out, nil
}

// session names the session of the config files (or --session).
func (env *Env) session() (*engine.Session, error) {
	name := env.sessionName()
	paths, err := env.configPaths()
	// A session named needs no config to be found: status, down and the
	// rest reach it from anywhere.
	var nf *config.NotFoundError
	if err != nil && name == "" && errors.As(err, &nf) && nf.Why == "" && (nf.Path != "" || len(nf.Looked) > 0) {
		if sess := env.sessionOfGoneConfig(); sess != nil {
			return sess, nil
		}
	}
	if err != nil && (name == "" || !errors.As(err, &nf) || nf.Path != "") {
		return nil, err
	}
	return engine.SessionFor(paths, name, env.getenv)
}

// sessionOfGoneConfig is the running session of config files named by
// --config or $MCPCTL_CONFIG, or of the file discovery would find, that no
// longer all exist (moved or deleted while it ran), so that down, status
// and the rest still reach it; nil when none runs.
func (env *Env) sessionOfGoneConfig() *engine.Session {
	named := env.configFlags
	if len(named) == 0 {
		named = slices.DeleteFunc(filepath.SplitList(env.getenv("MCPCTL_CONFIG")), func(p string) bool { return p == "" })
	}
	if len(named) > 0 {
		return env.runningSessionOf(named)
	}
	for _, c := range config.Candidates {
		if sess := env.runningSessionOf([]string{c}); sess != nil {
			return sess
		}
	}
	return nil
}

// runningSessionOf is the session of the config files named, when it
// runs, with a warning naming those that are gone.
func (env *Env) runningSessionOf(named []string) *engine.Session {
	var paths, gone []string
	for _, p := range named {
		if !filepath.IsAbs(p) {
			p = filepath.Join(env.WorkDir, p)
		}
		if _, err := os.Stat(p); err != nil {
			gone = append(gone, filepath.Base(p))
		}
		if p = engine.CanonicalPath(p); !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	sess, err := engine.SessionFor(paths, "", env.getenv)
	if err != nil {
		return nil
	}
	if _, err := os.Stat(sess.Socket); err != nil || !sess.Running() {
		return nil
	}
	if len(gone) == 1 {
		env.note("warning: config %s no longer exists; using the session it started", gone[0])
	} else {
		env.note("warning: configs %s no longer exist; using the session they started", strings.Join(gone, ", "))
	}
	return sess
}

// engineOptions are the options of every engine this CLI starts, in a
// session or for one command.
func (env *Env) engineOptions(sess *engine.Session, logger *slog.Logger) *engine.Options {
	return &engine.Options{Logger: logger, LogDir: sess.ServerLogDir(), Trace: env.getenv("MCPCTL_TRACE") == "1",
		Auth: &engine.AuthOptions{Dir: engine.TokenDir(env.getenv)}}
}

// client returns a client for the session; it does not check that one runs.
func (env *Env) client() (*engine.Client, *engine.Session, error) {
	sess, err := env.session()
	if err != nil {
		return nil, nil, err
	}
	c := &engine.Client{Socket: sess.Socket, Dial: dialSession(sess), Unpooled: true, OnVersionMismatch: func(v string) {
		env.note("warning: the session runs mcpctl %s, this is mcpctl %s", v, engine.Version())
		env.noteHint("hint: restart it to use this version: mcpctl down && mcpctl up")
	}, OnConfigError: func(why string) {
		env.note("warning: the config does not load, so the session runs the one it had: %s", why)
		if strings.HasSuffix(why, " does not exist") {
			// Moved or deleted: see the session's loader.
			env.noteHint("hint: put it back, and the session reloads it by itself; or stop the session with: mcpctl down")
			return
		}
		if strings.HasSuffix(why, " do not exist") {
			env.noteHint("hint: put them back, and the session reloads them by itself; or stop the session with: mcpctl down")
			return
		}
		env.noteHint("hint: fix the file; the session reloads it by itself (mcpctl status shows the error)")
	}}
	if env.sessionName() != "" && len(env.configFlags) > 0 {
		// Both named: the session's servers are used, whatever -c says.
		named, leaveOut := env.sessionNamedBy()
		if c.ExpectConfig, err = env.configPaths(); err == nil {
			c.OnConfigMismatch = func(files []string) {
				env.note("warning: session %s runs %s, not %s: --config is not used with %s", sess.Name, strings.Join(files, ", "), strings.Join(c.ExpectConfig, ", "), named)
				env.noteHint("hint: %s to use %s", leaveOut, strings.Join(env.configFlags, ", "))
			}
		}
	}
	return c, sess, nil
}

// sessionNamedBy says what named the session (--session or
// $MCPCTL_SESSION), and how to leave it out.
func (env *Env) sessionNamedBy() (named, leaveOut string) {
	if env.sessionFlag == "" {
		return "$MCPCTL_SESSION", "unset MCPCTL_SESSION"
	}
	return "--session", "leave out --session"
}

// otherSessionsConfig refuses to start or stop, with -c given, a session
// named by --session or $MCPCTL_SESSION that runs other files: a down in
// one project's trap would stop another project's session, and an up
// would say "already running" of servers that are not the config's. cmd
// is up or down; doing, what it does ("start", "stop"); leaving -c out,
// what it would do instead.
func (env *Env) otherSessionsConfig(cmd, doing, withoutC, session string, runs, given []string) error {
	named, leaveOut := env.sessionNamedBy()
	return usagef(fmt.Sprintf("session %s (named by %s) runs %s, not %s: mcpctl %s refused", session, named, strings.Join(runs, ", "), strings.Join(given, ", "), cmd),
		fmt.Sprintf("%s to %s the session of %s", leaveOut, doing, strings.Join(env.configFlags, ", ")),
		fmt.Sprintf("or leave out -c to %s session %s", withoutC, session))
}

// sessionWait bounds how long a command waits for a session that holds its
// lock but has no socket: one starting (its up claimed it), or one putting
// back a socket file removed under it (within 2s).
const sessionWait = 5 * time.Second

// dialSession dials the session's socket. While nothing listens there but
// a session holds its lock, it waits for it: a down right after an up
// found no session and left the one starting running.
func dialSession(sess *engine.Session) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		deadline := time.Now().Add(sessionWait)
		for {
			conn, err := d.DialContext(ctx, "unix", sess.Socket)
			// No socket file: starting, or healing. One that refuses is
			// a session ending (its lock held while its servers stop),
			// or a dead one's: no wait.
			if err == nil || !errors.Is(err, syscall.ENOENT) || time.Now().After(deadline) || !sess.Running() {
				return conn, err
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}

// noteStale is for a command that found no session answering: when the
// session died without removing its socket (kill -9, a crash), it removes
// the socket and tells the user, on stderr, that the command goes on
// without a session and how to start one again.
func (env *Env) noteStale(sess *engine.Session, goingOn string) (noted bool) {
	if sess.RemoveStale() {
		env.note("session %s is gone: it ended without stopping (killed or crashed); removed its stale socket %s", sess.Name, sess.Socket)
		env.noteHint("hint: %s; start the session again with: mcpctl up", goingOn)
		return true
	}
	return false
}

// noSession is the error of a command that acts on a session when none
// runs. A socket a dead session left is removed, and said so, first.
func (env *Env) noSession(sess *engine.Session, what, hint string) error {
	env.noteStale(sess, what)
	return &engine.Error{Kind: engine.KindNoSession, Message: "no session is running for " + env.sessionShown(),
		Hint: []string{"start one with: mcpctl up (" + hint + ")"}}
}
