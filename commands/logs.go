package commands

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/mcpctl/mcpctl/engine"
	"github.com/mcpctl/mcpctl/schemas"
	"github.com/urfave/cli/v3"
)

type logsOptions struct {
	server string
	follow bool
	since  string
	audit  bool
	lines  int
	tail   bool // -n given: lines is how many
}

func newLogsCmd(env *Env) *cli.Command {
	var opts logsOptions
	return &cli.Command{
		Name:      "logs",
		Usage:     "Show the session's log, a server's stderr or the audit log",
		ArgsUsage: "[SERVER]",
		Description: `Without SERVER, prints the session's log: JSON lines with "time", "level"
and "msg", and "requestId" on the lines about a request. With SERVER, prints
what that server wrote to stderr, each line after the time mcpctl read it.
With --audit, prints the audit log: a JSON line per call (the user's uid,
the tool, its argument names but never their values, duration and
outcome), per start, stop or failure of a server, per start, stop or
restart by hand, per config reload and per connection refused (another
user's); with SERVER only that server's.

The logs are in the session's state directory and rotate at 10 MiB,
keeping 3 old files (NAME.1 to NAME.3); the old files are printed first.
--since keeps the lines newer than a duration ago or than a time; -n keeps
the last N of them; -f keeps printing lines as they come, across a
rotation, until interrupted.

Lines are printed as they are in the file (on a terminal, with control
characters written as escapes). With --jq or --json each line is
a JSON value: the session and audit logs' lines as they are, a server's
stderr line as {"time": ..., "text": ...}; --jq filters each one.

  mcpctl logs
  mcpctl logs github --since 10m
  mcpctl logs -n 20 -f --audit
  mcpctl logs --since 2026-01-02T15:04:05Z
  mcpctl logs --jq 'select(.level == "ERROR") | .msg' -r`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing new lines until interrupted, or until what reads them goes away", Destination: &opts.follow},
			&cli.StringFlag{Name: "since", Usage: "only lines newer than `WHEN`: a duration ago (10m, 2h) or a time (RFC 3339)", Destination: &opts.since},
			&cli.BoolFlag{Name: "audit", Usage: "show the audit log", Destination: &opts.audit},
			&cli.IntFlag{Name: "lines", Aliases: []string{"n"}, Usage: "print only the last `N` lines (then follow, with -f; -n 0 -f: new lines only) (default: all)", Destination: &opts.lines, HideDefault: true},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() > 1 {
				return usagef("logs takes at most one server name", "e.g. mcpctl logs SERVER")
			}
			opts.server = cmd.Args().First()
			opts.tail = cmd.IsSet("lines")
			return runLogs(ctx, env, opts)
		},
	}
}

var serverName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// parseSince reads --since: a duration before now, or a time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	} else if err == nil {
		return time.Time{}, fmt.Errorf("--since %s is a duration below zero: it counts back from now, e.g. --since %s", s, -d)
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q is neither a duration nor a time", s)
}

func runLogs(ctx context.Context, env *Env, opts logsOptions) error {
	since, err := parseSince(opts.since, time.Now())
	if err != nil {
		return usagef(err.Error(), "e.g. --since 10m, --since 2h or --since 2026-01-02T15:04:05Z")
	}
	if opts.lines < 0 {
		return usagef(fmt.Sprintf("-n %d: the number of lines cannot be negative", opts.lines), "e.g. -n 20")
	}
	emit, err := logEmitter(env)
	if err != nil {
		return err
	}
	if opts.server != "" && !serverName.MatchString(opts.server) {
		return usagef(fmt.Sprintf("invalid server name %q", opts.server), "server names have letters, digits, '_' and '-'")
	}
	sess, err := env.session()
	if err != nil {
		return err
	}
	if opts.server != "" {
		// A typo would find no lines and say nothing, or with -f wait
		// for ever for a server that never writes.
		known := logNames(sess.ServerLogDir())
		if opts.audit {
			known = auditNames(sess.AuditFile())
		}
		if err := env.checkLogServer(opts.server, known); err != nil {
			return err
		}
	}
	noSession := func(missing string) error {
		e := &engine.Error{Kind: engine.KindNoSession,
			Message: fmt.Sprintf("no logs: session %s has never run for %s (no %s)", sess.Name, env.configShown(), missing),
			Hint:    []string{"start it with: mcpctl up", "a command run without a session keeps only its servers' stderr: mcpctl logs SERVER"}}
		switch {
		case opts.audit:
			e.Hint[1] = "a command run without a session keeps no audit log"
		case opts.server != "":
			e.Message = fmt.Sprintf("no log for server %s: it has never been started for %s (no %s)", opts.server, env.configShown(), missing)
			e.Hint = []string{"start the session with: mcpctl up",
				fmt.Sprintf("or run a command that starts it, which keeps its stderr too, e.g.: mcpctl tools %s", opts.server)}
		}
		return e
	}
	// A session that up is starting (it holds the session's lock) has
	// not made its log yet: -f waits for it (mcpctl up & mcpctl logs -f).
	starting := opts.follow && sess.Running()
	if opts.follow && !starting && !exists(sess.LogFile()) {
		// mcpctl up & mcpctl logs -f: the up may not have claimed the
		// session yet (it may have made its directory already).
		starting = awaitClaim(ctx, sess, time.Second)
	}
	if opts.server != "" && !opts.audit && !exists(filepath.Join(sess.ServerLogDir(), opts.server+".log")) {
		// A variable the config needs and this shell lacks (a token the
		// session was given) does not hide what kind of server it is.
		if cfg, _, err := env.loadConfigForNames(); err == nil {
			if s := cfg.Server(opts.server); s != nil && !s.IsStdio() {
				return &engine.Error{Kind: engine.KindUsage, Server: opts.server,
					Message: fmt.Sprintf("server %s is a remote server (%s): it writes no stderr, so it has no log", opts.server, s.Redact(s.URL)),
					Hint:    []string{"what mcpctl did with it, and its errors, are in the session's log: mcpctl logs"}}
			}
		}
	}
	if !starting && (!exists(sess.StateDir) || sess.CheckStateDir() != nil) && sess.Running() {
		// Removed while the session runs: it makes it again, and its logs
		// in it, within a few seconds.
		if sess.CheckStateDir() != nil || !awaitFiles(ctx, 3*time.Second, sess.LogFile(), sess.AuditFile()) {
			if _, err := os.Lstat(sess.StateDir); err == nil {
				// Something else in its place (a symlink, a file, another
				// user's): the session refuses to make it there, or to
				// write through it; what it holds is not the session's.
				return &engine.Error{Kind: engine.KindConfig,
					Message: fmt.Sprintf("no logs: the state directory %s of session %s is not a directory of the user's own (a symlink, or a file), so the session cannot make it again", sess.StateDir, sess.Name),
					Hint:    []string{fmt.Sprintf("remove it, and the session makes it again within a few seconds: rm %s", sess.StateDir)}}
			}
			return &engine.Error{Kind: engine.KindUnavailable,
				Message: fmt.Sprintf("no logs: the state directory %s of session %s is missing; the session runs, and makes it again within a few seconds", sess.StateDir, sess.Name),
				Hint:    []string{"try again in a moment: mcpctl logs", "if it stays missing, the session cannot make it again; restart it: mcpctl down && mcpctl up"}}
		}
	}
	if _, err := os.Stat(sess.StateDir); errors.Is(err, fs.ErrNotExist) && !starting {
		return noSession(sess.StateDir)
	}
	path := sess.LogFile()
	keep := func([]byte) bool { return true }
	switch {
	case opts.audit:
		path = sess.AuditFile()
		if opts.server != "" {
			keep = func(line []byte) bool {
				var e struct{ Server string }
				return json.Unmarshal(line, &e) == nil && e.Server == opts.server
			}
		}
	case opts.server != "":
		path = filepath.Join(sess.ServerLogDir(), opts.server+".log")
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && !opts.follow {
			if pid := env.runningPID(ctx, opts.server); pid != 0 {
				// Its log went with a removed state directory: the
				// session opens it again at the server's next line.
				env.note("server %s (pid %d) runs, but has no log now: its next line on stderr makes it again", opts.server, pid)
				return nil
			}
			hint := "a server's log is written once the session, or a command run without it, starts it; see: mcpctl status"
			if names := logNames(sess.ServerLogDir()); len(names) > 0 {
				hint = "servers with a log: " + strings.Join(names, ", ")
			}
			return &engine.Error{Kind: engine.KindUsage, Server: opts.server,
				Message: fmt.Sprintf("no log for server %s in session %s", opts.server, sess.Name), Hint: []string{hint}}
		}
	}
	if (opts.server == "" || opts.audit) && !exists(path) && !exists(path+".1") && !starting && sess.Running() {
		// Removed while the session runs: it opens it again soon.
		awaitFiles(ctx, 3*time.Second, path)
	}
	if (opts.server == "" || opts.audit) && !exists(path) && !exists(path+".1") && !starting {
		// Commands run without a session leave their servers' logs
		// here, but a session's own log is only ever the session's; -f
		// too: it would wait, silent, for a session nobody starts.
		return noSession(path)
	}
	lf := &lineFilter{emit: emit, since: since, keep: keep, tail: opts.lines}
	if starting && !opts.audit {
		lf.gone = func() error {
			if sess.Running() || exists(path) {
				return nil
			}
			return noSession(path)
		}
	}
	// -n 0: none of the lines there, so that -f -n 0 follows new lines only.
	lf.none = opts.tail && opts.lines == 0
	for i := engine.DefaultLogKeep; i >= 1; i-- {
		if err := lf.file(fmt.Sprintf("%s.%d", path, i)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			if opts.follow && outputClosed(err) {
				return nil // as below: -f's reader gone, while the rotated lines print
			}
			return err
		}
	}
	if !opts.follow {
		if err := lf.file(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return lf.flush()
	}
	// Its reader gone ends -f as Ctrl-C does.
	ctx, stop := untilOutputClosed(ctx, env.Out)
	defer stop()
	if err := lf.follow(ctx, path); !outputClosed(err) {
		return err
	}
	return nil
}

// checkLogServer refuses a server that neither the config (as found
// here, nothing asked) nor the logs (known: the servers they name) know. A
// server a reload removed is still in the logs. Without a config found
// here, nothing is refused.
func (env *Env) checkLogServer(server string, known []string) error {
	cfg, _, err := env.loadConfigForNames()
	if err != nil {
		// Not the session's config to check against (--session from
		// another directory): a name is not refused for want of it.
		return nil
	}
	names := append(cfg.Names(), known...)
	if len(names) == 0 || slices.Contains(names, server) {
		return nil
	}
	slices.Sort(names)
	names = slices.Compact(names)
	hint := "servers of the config or its logs: " + strings.Join(names, ", ")
	if near := schemas.Closest(server, names); len(near) > 0 {
		hint = fmt.Sprintf("did you mean %s?", near[0])
	}
	return &engine.Error{Kind: engine.KindUsage, Server: server, Message: "unknown server " + server, Hint: []string{hint}}
}

// auditNames are the servers the audit log at path (and its old files)
// names.
func auditNames(path string) []string {
	var names []string
	for i := engine.DefaultLogKeep; i >= 0; i-- {
		name := path
		if i > 0 {
			name = fmt.Sprintf("%s.%d", path, i)
		}
		data, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			// A request refused as a mistake names a server that may not
			// exist: not known for that.
			var e struct{ Server, Outcome string }
			if json.Unmarshal(line, &e) == nil && e.Server != "" && e.Outcome != string(engine.KindUsage) {
				names = append(names, e.Server)
			}
		}
	}
	return names
}

// logNames are the servers with a stderr log in dir, sorted.
func logNames(dir string) []string {
	have, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	names := make([]string, 0, len(have))
	for _, h := range have {
		names = append(names, strings.TrimSuffix(filepath.Base(h), ".log"))
	}
	sort.Strings(names)
	return names
}

// A stderrLine is a line of a server's stderr log (or any line that is not
// JSON) as --jq and --json see it.
type stderrLine struct {
	Time string `json:"time,omitempty"`
	Text string `json:"text"`
}

// logEmitter prints a log line: as it is, or with --jq or --json as a JSON
// value through the printer, one per line as watch prints events.
func logEmitter(env *Env) (func([]byte) error, error) {
	p, err := env.Printer()
	if err != nil {
		return nil, err
	}
	if env.format.JQ == "" && !env.format.JSON {
		return plainLines(p.Plain()), nil
	}
	return func(line []byte) error {
		if json.Valid(line) {
			_, err := p.Line(json.RawMessage(line))
			return err
		}
		v := stderrLine{Text: string(line)}
		if first, rest, ok := bytes.Cut(line, []byte(" ")); ok {
			if _, err := time.Parse(time.RFC3339Nano, string(first)); err == nil {
				v = stderrLine{Time: string(first), Text: string(rest)}
			}
		}
		_, err := p.Line(v)
		return err
	}, nil
}

// plainLines prints each line as it is.
func plainLines(w io.Writer) func([]byte) error {
	return func(line []byte) error {
		_, err := w.Write(append(line, '\n'))
		return err
	}
}

// A lineFilter prints the lines of log files newer than since. A line's
// time is its JSON "time" field, or the time it starts with (a server's
// stderr log); a line without one (a panic's trace in the session log)
// goes with the line before it. With tail > 0 it holds the lines kept
// until flush, and prints the last tail of them (with none set, none of
// them); then it prints each line as it comes.
type lineFilter struct {
	emit     func([]byte) error
	since    time.Time
	keep     func([]byte) bool
	lastKept bool
	tail     int
	none     bool
	held     [][]byte
	live     bool
	err      error // the first error of emit; no line is printed after it
	// gone, when set, is asked while the file is not there yet: a start
	// that ended without making it is not waited for.
	gone func() error
}

func (lf *lineFilter) line(line []byte) {
	if len(line) == 0 || lf.err != nil {
		return
	}
	ok := lf.lastKept || lf.since.IsZero()
	if t, found := lineTime(line); found {
		ok = lf.since.IsZero() || !t.Before(lf.since)
	}
	lf.lastKept = ok
	if !ok || !lf.keep(line) {
		return
	}
	if lf.none && !lf.live {
		return
	}
	if lf.tail > 0 && !lf.live {
		if len(lf.held) == lf.tail {
			lf.held = lf.held[1:]
		}
		lf.held = append(lf.held, bytes.Clone(line))
		return
	}
	lf.err = lf.emit(line)
}

// flush prints the lines held for -n; from then on lines print as they
// come.
func (lf *lineFilter) flush() error {
	if !lf.live {
		lf.live = true
		for _, l := range lf.held {
			if lf.err == nil {
				lf.err = lf.emit(l)
			}
		}
		lf.held = nil
	}
	return lf.err
}

func lineTime(line []byte) (time.Time, bool) {
	if line[0] == '{' {
		var v struct {
			Time time.Time `json:"time"`
		}
		if json.Unmarshal(line, &v) == nil && !v.Time.IsZero() {
			return v.Time, true
		}
		return time.Time{}, false
	}
	first, _, _ := bytes.Cut(line, []byte(" "))
	t, err := time.Parse(time.RFC3339Nano, string(first))
	return t, err == nil
}

func (lf *lineFilter) file(path string) error {
	f, err := openLogFile(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = lf.copyLines(f, nil)
	return err
}

// copyLines prints the whole lines r holds after the partial line pending,
// and returns what is left of a last, unfinished line.
func (lf *lineFilter) copyLines(r io.Reader, pending []byte) ([]byte, error) {
	br := bufio.NewReader(r)
	for {
		chunk, err := br.ReadBytes('\n')
		pending = append(pending, chunk...)
		if err == io.EOF {
			return pending, nil
		}
		if err != nil {
			return pending, err
		}
		lf.line(bytes.TrimRight(pending, "\r\n"))
		if lf.err != nil {
			return nil, lf.err
		}
		pending = pending[:0]
	}
}

// followPoll is how often -f looks for more lines.
const followPoll = 100 * time.Millisecond

// follow prints path's lines and then those added to it, like tail -f:
// when the file is rotated (another file now has its name) it finishes the
// old one and goes on with the new one from its start. It waits for a
// file that is not there yet. It ends when ctx does.
func (lf *lineFilter) follow(ctx context.Context, path string) error {
	var f *os.File
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	var pending []byte
	for {
		if f == nil {
			if g, err := openLogFile(path); err == nil {
				f, pending = g, nil
			} else if lf.gone != nil {
				if err := lf.gone(); err != nil {
					return err
				}
			}
		}
		if f != nil {
			var err error
			if pending, err = lf.copyLines(f, pending); err != nil {
				return err
			}
			// Rotated: the name is another file's now. What the old one
			// got since the read above is read before moving on.
			if st, err := os.Stat(path); err == nil {
				if cur, err := f.Stat(); err == nil && !os.SameFile(st, cur) {
					if pending, err = lf.copyLines(f, pending); err != nil {
						return err
					}
					if len(pending) > 0 {
						lf.line(pending)
					}
					f.Close()
					f = nil
					continue
				}
			}
		}
		// What is there is read: print the last -n lines of it, then the
		// rest as it comes.
		if err := lf.flush(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followPoll):
		}
	}
}

// awaitClaim waits up to d for a command to hold sess's lock (an up
// starting it), and reports whether one does.
func awaitClaim(ctx context.Context, sess *engine.Session, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		if sess.Running() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	return sess.Running()
}

// awaitFiles waits up to d for every one of paths to exist.
func awaitFiles(ctx context.Context, d time.Duration, paths ...string) bool {
	for deadline := time.Now().Add(d); ; {
		if !slices.ContainsFunc(paths, func(p string) bool { return !exists(p) }) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// runningPID is the pid of the session's server name when it runs; 0 when
// it does not, or no session answers.
func (env *Env) runningPID(ctx context.Context, name string) int {
	client, _, err := env.client()
	if err != nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second) // a session that hangs is no answer
	defer cancel()
	st, err := client.Status(ctx)
	if err != nil {
		return 0
	}
	for _, s := range st.Servers {
		if s.Name == name && s.PID != 0 {
			return s.PID
		}
	}
	return 0
}

// openLogFile opens a log to read it, never through a symlink: one in its
// place is not mcpctl's log (the session refuses to write through it).
func openLogFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, &engine.Error{Kind: engine.KindConfig, Message: fmt.Sprintf("%s is a symbolic link, not a log of mcpctl's: it is not read", path),
			Hint: []string{"remove it; mcpctl makes the log again: rm " + path}}
	}
	return f, err
}
