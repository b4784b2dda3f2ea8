package commands

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/engine"
	"github.com/mcpctl/mcpctl/output"
	"github.com/urfave/cli/v3"
)

type upOptions struct {
	foreground bool
	notifyFD   int
	lockFD     int // the session's lock, claimed by the up that started this one
	headersFD  int // the --header flags of the up that started this one, as JSON
	ttl        time.Duration
	logLevel   string
}

func newUpCmd(env *Env) *cli.Command {
	var opts upOptions
	return &cli.Command{
		Name:  "up",
		Usage: "Start the session and all its servers in the background",
		Description: `Starts a background session for the config: it starts every server that is
not disabled, in parallel (one with "dependsOn" once those it depends on are
ready), keeps them running and answers later commands over a unix socket.
"up" returns when every server is ready, and reports each with its tool
count and start time; on a terminal, stderr shows each start live meanwhile.
If one server fails to start, none is left running and "up" exits 3 naming
it (2 when its config is at fault: a command not found, a missing cwd, a
limit above the hard limit). If the session already runs, "up" says so,
warns of its servers that are down, and exits 0; if it is ending (a "down"
under way), "up" waits for it to end and starts a new one. Inputs the config
needs are asked for here, on the terminal.

The session follows its config files: after an edit it starts added servers,
stops removed ones and restarts changed ones (see "mcpctl reload"). SIGHUP
reloads too, except for an "up --foreground" attached to a terminal, which
takes it as the terminal gone and ends.

With --ttl the session stops itself, as "down" would, once that long has
passed without a request. Any command that reaches the session counts as a
request (status included), and a request in progress keeps it up for as long
as it runs: a long call, or an open "watch".

  mcpctl up
  mcpctl -c examples/mcp.json up
  mcpctl up --ttl 30m           # stop after 30 minutes without a request
  mcpctl up --foreground        # stay attached; Ctrl-C stops it
  mcpctl up --log-level debug   # log every request to the session log`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "foreground", Usage: "run the session in this process instead of the background", Destination: &opts.foreground},
			&cli.DurationFlag{Name: "ttl", Usage: "stop the session after `DURATION` (e.g. 30s, 5m) without a request (default: never)", Destination: &opts.ttl, HideDefault: true},
			&cli.StringFlag{Name: "log-level", Usage: "the session log's `LEVEL`: debug, info, warn or error (default: the config's logLevel, else info)", Destination: &opts.logLevel},
			&cli.IntFlag{Name: "notify-fd", Hidden: true, Destination: &opts.notifyFD},
			&cli.IntFlag{Name: "lock-fd", Hidden: true, Destination: &opts.lockFD},
			&cli.IntFlag{Name: "headers-fd", Hidden: true, Destination: &opts.headersFD},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() > 0 {
				return usagef("up takes no arguments", "start a different config with: mcpctl -c FILE up")
			}
			if opts.ttl < 0 || (cmd.IsSet("ttl") && opts.ttl == 0) {
				return usagef(fmt.Sprintf("--ttl %s: the time to live must be more than 0", opts.ttl), "for a session without a time limit leave --ttl out")
			}
			if _, err := parseLogLevel(opts.logLevel); err != nil {
				return usagef("--log-level: "+err.Error(), "use one of debug, info, warn, error")
			}
			return asStartFailure(runUp(ctx, env, opts))
		},
	}
}

// readyMsg is what a session started in the background reports, on the pipe
// its parent gave it, once all servers are ready or one failed.
type readyMsg struct {
	Status *engine.Status `json:"status,omitempty"`
	Error  *engine.Error  `json:"error,omitempty"`
	// Running says another session already held the socket.
	Running bool `json:"running,omitempty"`
	// Progress is a server's start, reported as it happens, before the
	// last message.
	Progress *upProgress `json:"progress,omitempty"`
}

func runUp(ctx context.Context, env *Env, opts upOptions) error {
	if opts.notifyFD > 0 {
		// A session up started: its stderr is its log, which holds JSON
		// lines only.
		env.ErrOut = &logLines{log: slog.New(slog.NewJSONHandler(env.ErrOut, nil))}
	}
	if opts.headersFD > 0 {
		// Only from the up that starts this session (spawnSession), on
		// a descriptor of its own: 0 to 2 are the terminal's.
		if opts.notifyFD == 0 || opts.headersFD <= 2 {
			return usagef("--headers-fd is mcpctl's own, for the session up starts", "give the headers with --header NAME=VALUE")
		}
		if err := env.readHeaders(opts.headersFD); err != nil {
			return err
		}
	}
	p, err := env.Printer()
	if err != nil {
		return err
	}
	client, sess, err := env.client()
	if err != nil {
		return err
	}
	client.OnConfigMismatch = nil // up says it in its own words
	if opts.notifyFD == 0 && opts.lockFD == 0 {
		// A session that runs has its inputs and variables: up again says
		// so without them (and asks for none), as any other command would,
		// even when the config no longer loads (the session says so).
		if _, err := client.Status(ctx); err == nil {
			cfg, _, err := env.loadConfigForNames()
			if err != nil {
				paths, _ := env.configPaths()
				cfg = &config.Config{Paths: paths}
			}
			if err := alreadyUp(ctx, env, p, opts, client, sess, cfg); !errors.Is(err, errSessionGone) {
				return err
			}
		}
	}
	if err := sess.CheckSocket(); err != nil {
		return err
	}
	if err := sess.MakeDirs(); err != nil {
		return err
	}
	// The session is claimed before its config is read (and its inputs
	// asked for): a down, a status or another up from now on finds it
	// starting, not missing. Its lock goes to the session process.
	var claimed *os.File
	if !opts.foreground && opts.notifyFD == 0 {
		if lock, err := sess.Claim(); err == nil {
			claimed = lock
			defer func() {
				if claimed != nil {
					claimed.Close()
				}
			}()
		}
	}
	if paths, err := env.configPaths(); err == nil {
		if err := config.Rereadable(paths, env.WorkDir); err != nil {
			return err
		}
	}
	cfg, err := env.loadConfig()
	if err != nil {
		return err
	}
	// A session found running may be ending (a down under way), or one
	// another up started may fail: either way it is gone, and this up
	// starts one of its own, as often as three times.
	for try := 1; ; try++ {
		err := upOnce(ctx, env, p, opts, cfg, client, sess, &claimed)
		if !errors.Is(err, errSessionGone) {
			return err
		}
		if try == 3 {
			return &engine.Error{Kind: engine.KindUnavailable, Message: fmt.Sprintf("session %s ended three times as up waited for it", sess.Name),
				Hint: []string{"something else stops it (another mcpctl down?); see its log with: mcpctl logs"}}
		}
	}
}

// droppedConn reports whether err is a connection the session closed
// mid-answer, as one that is ending does.
func droppedConn(err error) bool {
	// EPIPE: the request was written as the session closed the connection.
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// errSessionGone: the session alreadyUp waited for ended.
var errSessionGone = errors.New("the session ended")

// upOnce starts the session, or finds it running. claimed is the session's
// lock when this up holds it (no session runs), handed to the session
// process it starts.
func upOnce(ctx context.Context, env *Env, p *output.Printer, opts upOptions, cfg *config.Config, client *engine.Client, sess *engine.Session, claimed **os.File) error {
	if opts.notifyFD == 0 && opts.lockFD == 0 && *claimed == nil { // not the session an up started
		if _, err := client.Status(ctx); err == nil {
			return alreadyUp(ctx, env, p, opts, client, sess, cfg)
		}
	}
	if opts.foreground {
		return runSession(ctx, env, p, cfg, sess, opts)
	}
	var board *startBoard
	if env.liveOK() {
		board = newStartBoard(env.ErrOut, env.colorOK(), env.stderrWidth(), env.stderrHeight(), cfg.Names())
	}
	st, err := spawnSession(ctx, env, cfg, sess, opts.ttl, opts.logLevel, board, claimed)
	if board != nil {
		if st != nil {
			board.settle(st)
		}
		board.done()
	}
	if err != nil {
		return err
	}
	if st == nil { // another up won the race to start the session
		return alreadyUp(ctx, env, p, opts, client, sess, cfg)
	}
	if env.StderrTTY {
		env.noteHint("session %s is up (pid %d); stop it with: mcpctl down", st.Session.Name, st.Session.PID)
	}
	return printUp(p, st)
}

// noteTTL tells the user that a --ttl given to `up` does not change the
// session that already runs.
func noteTTL(env *Env, st *engine.Status, ttl time.Duration) {
	if ttl > 0 && st.Session != nil && st.Session.TTLSeconds != ttl.Seconds() {
		env.noteHint("the running session keeps its ttl; to change it: mcpctl down && mcpctl up --ttl %s", ttl)
	}
}

// alreadyUp reports a session that another `up` started, once it has
// started its servers: a second `up` during the first one's start waits.
func alreadyUp(ctx context.Context, env *Env, p *output.Printer, opts upOptions, client *engine.Client, sess *engine.Session, cfg *config.Config) error {
	var longest, longestStop time.Duration
	for _, s := range cfg.Servers {
		longest = max(longest, s.StartupTimeout)
		longestStop = max(longestStop, s.ShutdownTimeout)
	}
	deadline := time.Now().Add(longest + 10*time.Second)
	// A down stops the servers together, each within its shutdown timeout
	// and a kill after it.
	stopDeadline := time.Now().Add(longestStop + 10*time.Second)
	for {
		st, err := client.Status(ctx)
		switch {
		case errors.Is(err, engine.ErrNoSession) && sess.Running() && time.Now().Before(deadline):
			// It holds the session's lock but does not listen yet, or no
			// longer.
		case errors.Is(err, engine.ErrNoSession) && !sess.Running():
			return errSessionGone
		case err != nil && droppedConn(err) && time.Now().Before(stopDeadline):
			// It hung up mid-answer: a session ending drops its
			// connections as it goes. Gone once its lock is free.
			if !sess.Running() {
				return errSessionGone
			}
		case err != nil:
			return err
		case st.Session.Stopping && time.Now().Before(stopDeadline):
			// A down is under way: wait for the session to be gone.
		case st.Session.Ready || time.Now().After(deadline):
			if len(env.configFlags) > 0 && len(st.Session.ConfigFiles) > 0 && !slices.Equal(slices.Sorted(slices.Values(st.Session.ConfigFiles)), slices.Sorted(slices.Values(cfg.Paths))) {
				return env.otherSessionsConfig("up", "start", "use", st.Session.Name, st.Session.ConfigFiles, cfg.Paths)
			}
			env.note("session %s is already running (pid %d)", st.Session.Name, st.Session.PID)
			noteTTL(env, st, opts.ttl)
			if len(env.headerFlags) > 0 {
				env.noteHint("warning: --header was not sent: the running session's servers keep the headers they started with; to change them: mcpctl down && mcpctl up --header ...")
			}
			if opts.logLevel != "" {
				env.noteHint("the running session keeps its log level; to change it: mcpctl down && mcpctl up --log-level %s", opts.logLevel)
			}
			if !slices.Equal(slices.Sorted(slices.Values(st.Session.ConfigFiles)), slices.Sorted(slices.Values(cfg.Paths))) && len(st.Session.ConfigFiles) > 0 {
				// A session named by --session may run another project's
				// config: its servers are not this one's.
				env.note("warning: it runs %s, not %s", strings.Join(st.Session.ConfigFiles, ", "), strings.Join(cfg.Paths, ", "))
			}
			// Up again is how a script makes sure of a session: a server
			// that is down there is worth a word before its calls fail.
			for _, s := range st.Servers {
				switch {
				case s.StoppedByHand:
					env.noteHint("warning: server %s is stopped (mcpctl stop); to start it: mcpctl start %s", s.Name, s.Name)
				case s.State == engine.StateUnavailable:
					env.noteHint("warning: server %s is unavailable: %s; to start it again: mcpctl restart %s", s.Name, s.LastError, s.Name)
				}
			}
			return printUp(p, st)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func printUp(p *output.Printer, st *engine.Status) error {
	return p.Print(st, func(w io.Writer) error {
		rows := make([][]string, len(st.Servers))
		for i, s := range st.Servers {
			started := "-" // not started: lazy, manual, disabled
			if s.State == engine.StateReady || s.State == engine.StateDegraded {
				started = fmt.Sprintf("%.2fs", s.StartupSeconds)
			}
			rows[i] = []string{s.Name, stateLabel(s), toolCount(s), started}
		}
		return output.Table(w, []string{"server", "state", "tools", "started in"}, rows)
	})
}

// spawnSession starts `mcpctl up --foreground` detached (its own session id,
// stdin from /dev/null, output to the session log) and waits for its report
// on a pipe. A nil status with no error means another session runs.
func spawnSession(ctx context.Context, env *Env, cfg *config.Config, sess *engine.Session, ttl time.Duration, logLevel string, board *startBoard, claimed **os.File) (*engine.Status, error) {
	// The session is claimed (by runUp, else here) and its lock handed to
	// the process: from then on a down, a status or another up finds it
	// starting, where in the moments before it listened they found no
	// session (and a down left it running).
	lock := *claimed
	*claimed = nil
	if lock == nil {
		var err error
		lock, err = sess.Claim()
		if errors.Is(err, engine.ErrSessionRunning) {
			return nil, nil // another up started it: alreadyUp waits for it
		}
		if err != nil {
			return nil, err
		}
	}
	defer lock.Close()
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding mcpctl's own executable: %w", err)
	}
	if err := os.MkdirAll(sess.StateDir, 0o700); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(sess.LogFile(), os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	// What the log holds before is earlier sessions': an error of this
	// one shows only its own lines.
	logStart, _ := logf.Seek(0, io.SeekEnd)
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	args := []string{"up", "--foreground", "--notify-fd=3", "--lock-fd=4", "--session", sess.Name}
	if ttl > 0 {
		args = append(args, "--ttl", ttl.String())
	}
	if logLevel != "" {
		args = append(args, "--log-level", logLevel)
	}
	for _, p := range cfg.Paths {
		args = append(args, "--config", p)
	}
	// --header values reach the session through a pipe: not its
	// arguments (ps shows them) nor its environment (its servers'). It
	// applies them to every load of the config, reloads too.
	var headers *os.File
	if len(env.headerFlags) > 0 {
		hr, hw, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		defer hr.Close()
		data, _ := json.Marshal(env.headerFlags)
		_, err = hw.Write(data) // far below a pipe's buffer
		hw.Close()
		if err != nil {
			return nil, err
		}
		headers = hr
		args = append(args, "--headers-fd=5")
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir = env.WorkDir
	// Inputs asked for here reach the session, which cannot ask, through
	// its environment only; it keeps them from the servers' environments.
	cmd.Env = append(os.Environ(), cfg.InputEnviron()...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{w, lock}
	if headers != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, headers)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	// The lock is the session process's now (or nobody's): a copy held
	// here would keep the session "running" should this up be stopped
	// (Ctrl-Z) and the session die.
	lock.Close()
	if err != nil {
		return nil, fmt.Errorf("starting the session: %w", err)
	}
	// Reap it should it exit while we still run (tests run Main in-process).
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()

	var longest time.Duration
	for _, s := range cfg.Servers {
		longest = max(longest, s.StartupTimeout)
	}
	// The session bounds each start itself; this only guards against a
	// session that hangs.
	limit := longest + 30*time.Second
	type report struct {
		line []byte
		err  error
	}
	got := make(chan report, 1)
	go func() {
		rd := bufio.NewReader(r)
		for {
			line, err := rd.ReadBytes('\n')
			var msg readyMsg
			if err == nil && json.Unmarshal(line, &msg) == nil && msg.Progress != nil {
				if board != nil {
					board.update(*msg.Progress)
				}
				continue
			}
			got <- report{line, err}
			return
		}
	}()
	var rep report
	select {
	case rep = <-got:
	case <-ctx.Done():
		// Interrupted: the session we started stops its servers and goes.
		cmd.Process.Signal(syscall.SIGTERM)
		return nil, ctx.Err()
	case <-time.After(limit):
		cmd.Process.Signal(syscall.SIGTERM)
		return nil, &engine.Error{Kind: engine.KindTimeout,
			Message: fmt.Sprintf("the session did not report ready within %s; it was stopped", limit),
			Hint:    []string{"see its log: " + sess.LogFile()},
			Stderr:  tailFile(sess.LogFile(), logStart, 10)}
	}
	var msg readyMsg
	if rep.err != nil || json.Unmarshal(rep.line, &msg) != nil {
		return nil, &engine.Error{Kind: engine.KindUnavailable,
			Message: "the session exited before its servers were ready",
			Hint:    []string{"see its log: " + sess.LogFile()},
			Stderr:  tailFile(sess.LogFile(), logStart, 10)}
	}
	switch {
	case msg.Error != nil:
		// The session stops its servers and exits: wait for it, so that
		// the next command does not reach it on its way out.
		select {
		case <-exited:
		case <-ctx.Done():
		case <-time.After(15 * time.Second):
		}
		return nil, msg.Error
	case msg.Running:
		return nil, nil
	}
	return msg.Status, nil
}

// tailFile returns the last n lines of a file written after offset from
// (all of it if it has since been rotated), for error messages.
func tailFile(path string, from int64, n int) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	if from <= int64(len(data)) {
		data = data[from:]
	}
	if len(data) > 64*1024 {
		data = data[len(data)-64*1024:]
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// logLines turns what a detached session writes on stderr (a note, its
// last error) into lines of its JSON log: an error object becomes an ERROR
// line with its message, "warning:" a WARN line, anything else INFO.
type logLines struct {
	mu  sync.Mutex
	log *slog.Logger
	buf []byte
}

func (w *logLines) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.line(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

func (w *logLines) line(s string) {
	var e struct {
		Error *struct {
			Code    string   `json:"code"`
			Message string   `json:"message"`
			Hints   []string `json:"hints"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(s), &e) == nil && e.Error != nil {
		w.log.Error(e.Error.Message, "code", e.Error.Code, "hints", e.Error.Hints)
		return
	}
	s = strings.TrimPrefix(s, "mcpctl: ")
	level := slog.LevelInfo
	switch {
	case strings.HasPrefix(s, "error: "):
		level = slog.LevelError
	case strings.HasPrefix(s, "warning: "):
		level = slog.LevelWarn
	}
	w.log.Log(context.Background(), level, s)
}
