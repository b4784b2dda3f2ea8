package commands

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/mcpctl/mcpctl/config"
	"github.com/urfave/cli/v3"
)

// The watchdog is a small process a session starts beside itself. The
// session tells it, on a pipe, of each server process group as it starts
// ("+PGID") and once it is stopped ("-PGID"). When the pipe reaches EOF the
// session is gone; if it went without stopping its servers (kill -9, a
// crash), the watchdog SIGKILLs every group still registered, so nothing
// the session started survives it: Pdeathsig reaches only each group's
// leader, not what it started (npx's node).
const watchdogCmd = "_watchdog"

// watchdogParentEnv gives the watchdog the pid of the mcpctl it watches.
const watchdogParentEnv = "MCPCTL_WATCHDOG_PARENT"

// watchdogJSONEnv, "1", has the watchdog write a JSON log line: its stderr
// is a detached session's log.
const watchdogJSONEnv = "MCPCTL_WATCHDOG_JSON"

func newWatchdogCmd(env *Env) *cli.Command {
	return &cli.Command{
		Name:   watchdogCmd,
		Hidden: true,
		Usage:  "internal: kill the servers of a session that died (started by the session)",
		Action: func(ctx context.Context, cmd *cli.Command) error {
			// A Ctrl-C or a closed terminal is for the session, which
			// stops its servers itself; the watchdog waits for it to go.
			signal.Ignore(syscall.SIGINT, syscall.SIGHUP)
			runWatchdog(env.In, env.ErrOut)
			return nil
		},
	}
}

// runWatchdog reads "+PGID" and "-PGID" lines until EOF, then kills every
// group still registered and says so on log.
func runWatchdog(in io.Reader, log io.Writer) {
	// Told by the parent: read here, Getppid would name init should the
	// parent die before this process got this far.
	parent, err := strconv.Atoi(os.Getenv(watchdogParentEnv))
	if err != nil {
		parent = os.Getppid()
	}
	groups := map[int]bool{}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if len(line) < 2 {
			continue
		}
		pgid, err := strconv.Atoi(line[1:])
		if err != nil || pgid <= 1 {
			continue
		}
		switch line[0] {
		case '+':
			groups[pgid] = true
		case '-':
			delete(groups, pgid)
		}
	}
	if len(groups) == 0 {
		return
	}
	var killed []int
	for pgid := range groups {
		if syscall.Kill(-pgid, syscall.SIGKILL) == nil {
			killed = append(killed, pgid)
		}
	}
	slices.Sort(killed)
	if len(killed) == 0 {
		return
	}
	// The parent is a session, or a command without one (watch, serve).
	if os.Getenv(watchdogJSONEnv) == "1" {
		// Into the session's log, a line like its others.
		slog.New(slog.NewJSONHandler(log, nil)).Warn("watchdog: the session died, leaving its servers running; killed their process groups", "pid", parent, "groups", killed)
		return
	}
	fmt.Fprintf(log, "mcpctl watchdog: mcpctl (pid %d) ended without stopping its servers; killed process groups %v\n", parent, killed)
}

// A watchdog is the session's end of the pipe to its watchdog process. One
// that dies (killed by hand, say) is replaced, and told of every group
// still running, so that a kill -9 of the session later leaves nothing.
type watchdog struct {
	mu       sync.Mutex
	w        *os.File                      // nil once closed
	groups   map[int]bool                  // the groups registered, for a replacement
	warn     func(msg string, args ...any) // set by report: slog's Warn, or a note
	replaced int
	jsonLog  bool // its stderr is a detached session's log (watchdogJSONEnv)
}

// maxReplacements bounds how often a dying watchdog is replaced: one that
// cannot live is not started in a loop.
const maxReplacements = 5

// startWatchdog starts the watchdog: this executable again, in a session
// of its own (a Ctrl-C at the terminal reaches the session, not it), with
// the read end of a pipe as stdin and nothing else of ours: every other
// descriptor of this process is close-on-exec. Its stderr is the session's
// log when that is a file.
func startWatchdog(jsonLog bool) (*watchdog, error) {
	wd := &watchdog{groups: map[int]bool{}, warn: func(string, ...any) {}, jsonLog: jsonLog}
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if err := wd.spawnLocked(); err != nil {
		return nil, err
	}
	return wd, nil
}

// spawnLocked starts a watchdog process and makes it wd's.
func (wd *watchdog) spawnLocked() error {
	exe := "/proc/self/exe" // works even when the binary was replaced
	if runtime.GOOS != "linux" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return err
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := &exec.Cmd{
		Path:        exe,
		Args:        []string{"mcpctl", watchdogCmd},
		Stdin:       r,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	// Input values stay with the session.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, config.InputEnvPrefix) && !strings.HasPrefix(kv, watchdogParentEnv+"=") && !strings.HasPrefix(kv, watchdogJSONEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d", watchdogParentEnv, os.Getpid()))
	if wd.jsonLog {
		cmd.Env = append(cmd.Env, watchdogJSONEnv+"=1")
	}
	if st, err := os.Stderr.Stat(); err == nil && st.Mode().IsRegular() {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		w.Close()
		return err
	}
	wd.w = w
	go func() {
		cmd.Wait() // reaped should it end before this process
		wd.lost(w)
	}()
	return nil
}

// lost replaces a watchdog process that ended while still wanted (its
// pipe, w, not closed by close), and tells the new one of every group.
func (wd *watchdog) lost(w *os.File) {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if wd.w != w {
		return // closed, or replaced already
	}
	w.Close()
	wd.w = nil
	if wd.replaced >= maxReplacements {
		wd.warn("the watchdog keeps ending; a kill -9 of mcpctl would leave its servers' children running")
		return
	}
	wd.replaced++
	if err := wd.spawnLocked(); err != nil {
		wd.warn("the watchdog ended and cannot be started again; a kill -9 of mcpctl would leave its servers' children running", "error", err.Error())
		return
	}
	wd.warn("the watchdog ended; started a new one", "groups", len(wd.groups))
	for pgid := range wd.groups {
		wd.sendLocked('+', pgid)
	}
}

// sendLocked writes one line to the watchdog. A write fails once its
// process has ended; lost, when it is reaped, replaces it and tells the
// new one of every group.
func (wd *watchdog) sendLocked(sign rune, pgid int) {
	if wd.w == nil {
		return
	}
	if _, err := fmt.Fprintf(wd.w, "%c%d\n", sign, pgid); err != nil {
		wd.warn("cannot reach the watchdog", "error", err.Error())
	}
}

// report tells the watchdog of a process group; it is engine.Options.OnProcess.
// warn says what goes wrong with the watchdog (slog's Warn, for a
// session's log; a note on stderr, for a command without one).
func (wd *watchdog) report(warn func(msg string, args ...any)) func(pgid int, running bool) {
	wd.mu.Lock()
	wd.warn = warn
	wd.mu.Unlock()
	return func(pgid int, running bool) {
		wd.mu.Lock()
		defer wd.mu.Unlock()
		sign := '-'
		if running {
			sign = '+'
			wd.groups[pgid] = true
		} else {
			delete(wd.groups, pgid)
		}
		wd.sendLocked(sign, pgid)
	}
}

// close lets the watchdog go; every group must be unregistered by then.
func (wd *watchdog) close() {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if wd.w != nil {
		wd.w.Close()
		wd.w = nil
	}
}
