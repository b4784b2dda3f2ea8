package engine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/internal/lineio"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"golang.org/x/sys/unix"
)

// A process is one stdio server's operating-system process, in a process
// group of its own so that stopping it also stops what it started (npx
// starts npm, which starts sh, which starts node).
type process struct {
	server string
	limits config.Limits
	lines  *jsonLines // its stdout, once connected
	// outOfMemory and outOfFiles: stderr said the process ran out of what
	// its limits bound. crashReport: stderr carried a runtime's report of
	// a crash (a fatal error, a segmentation fault).
	outOfMemory, outOfFiles, crashReport atomic.Bool
	cmd                                  *exec.Cmd
	pgid                                 int
	stdin                                *os.File // our end of the server's stdin
	stdout                               *os.File // our end of the server's stdout
	tail                                 *lineTail
	// stdoutTail keeps the last lines of stdout that were not JSON-RPC
	// (redacted as they are read): a server that fails to start may have
	// said why there, and one that prints its answer has put it there.
	stdoutTail *lineTail

	// stopped: mcpctl decided to stop it (markStopped), so how it ended
	// is not the server's doing.
	stopped atomic.Bool

	done       chan struct{} // closed once the leader is reaped
	exitErr    error
	exitedAt   time.Time
	stderrDone chan struct{} // closed when stderr reaches EOF

	onProcess func(pgid int, running bool) // Options.OnProcess, or nil
	ended     sync.Once                    // onProcess(pgid, false) once
}

// startProcess starts the server's command. Its stderr goes, line by line,
// to logPath (when set), to a tail kept for error messages, and to onLine.
// onProcess, when set, is told of the process group as it starts and once
// stop has ended it.
func startProcess(s *config.Server, logPath string, logger *slog.Logger, onProcess func(pgid int, running bool), onLine func(string)) (*process, error) {
	// Checked again: the start may come long after the config's check
	// (a server started on use), and a config error stays one.
	if err := s.CheckCwd(); err != nil {
		return nil, checkError(err)
	}
	path, err := s.ResolveCommand()
	if err != nil {
		return nil, checkError(err)
	}
	// The child's ends of three pipes. They are *os.File, so exec hands
	// them over as they are and cmd.Wait never waits on a copying
	// goroutine that a grandchild holding the pipe could block forever.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        append([]string{s.Command}, s.Args...),
		Env:         serverEnv(s, os.Environ()),
		Dir:         s.Cwd,
		Stdin:       inR,
		Stdout:      outW,
		Stderr:      errW,
		SysProcAttr: sysProcAttr(),
	}
	err = cmd.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if err == nil && s.Limits.Any() {
		// The limits bind the process from here on, and every process it
		// starts (npx's node is started well after this).
		if lerr := applyLimits(cmd.Process.Pid, s.Limits); lerr != nil {
			signalGroup(cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
			inW.Close()
			outR.Close()
			errR.Close()
			// Not "cannot run": the program ran; its limits could not be set.
			return nil, errorf(KindUnavailable, s.Name, "server %s: cannot apply limits.%v (%s)", s.Name, lerr, s.Where("limits")).
				hint("lower the limit, or raise the hard limit (ulimit -H) before mcpctl starts").wrap(lerr)
		}
	}
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, startError(s, err)
	}
	p := &process{
		server:     s.Name,
		limits:     s.Limits,
		cmd:        cmd,
		pgid:       cmd.Process.Pid,
		stdin:      inW,
		stdout:     outR,
		tail:       newLineTail(20),
		stdoutTail: newRedactedTail(10, s.Redact),
		done:       make(chan struct{}),
		stderrDone: make(chan struct{}),
		onProcess:  onProcess,
	}
	if onProcess != nil {
		onProcess(p.pgid, true)
	}
	var logFile *RotatingFile
	if logPath != "" {
		if err := os.MkdirAll(filepath.Dir(logPath), 0o700); err == nil {
			var lerr error
			if logFile, lerr = OpenRotating(logPath, DefaultLogMaxBytes, DefaultLogKeep); lerr != nil {
				// A symlink in its place, say: refused, and said, not
				// dropped in silence.
				logger.Warn("the server's stderr is not logged: "+lerr.Error(), "hint", "remove it; mcpctl makes it again: rm "+logPath)
			}
		}
		if logFile != nil {
			fmt.Fprintf(logFile, "%s --- mcpctl: started server %s (pid %d): %s\n",
				time.Now().Format(StderrTimeLayout), s.Name, cmd.Process.Pid, s.Redact(s.Command))
		}
	}
	// What the server prints may quote the secrets its config gave it
	// (an API key in an error message): none reaches a log, an error or
	// an event.
	go p.drainStderr(errR, logFile, s.Redact, onLine)
	go func() {
		p.exitErr = cmd.Wait()
		p.exitedAt = time.Now()
		// Logged before done: once stop returns the session's log may close.
		logger.Debug("server process exited", "pid", cmd.Process.Pid, "status", exitDescription(p.exitErr))
		close(p.done)
	}()
	return p, nil
}

// maxStderrLine bounds one stderr line; the rest of a longer line is
// dropped, so a server cannot grow mcpctl's memory without a newline.
const maxStderrLine = 64 * 1024

// StderrTimeLayout is the time at the start of every line of a server's
// stderr log: when mcpctl read it.
const StderrTimeLayout = "2006-01-02T15:04:05.000Z07:00"

func (p *process) drainStderr(r *os.File, logFile *RotatingFile, redact func(string) string, onLine func(string)) {
	defer close(p.stderrDone)
	defer r.Close()
	if logFile != nil {
		defer logFile.Close()
	}
	br := bufio.NewReaderSize(r, 64*1024)
	for {
		line, cut, err := lineio.ReadLine(br, maxStderrLine)
		if len(line) > 0 || cut {
			text := string(bytes.TrimRight(line, "\r\n"))
			text = redact(text)
			if cut {
				text += " …(line cut)"
			}
			if logFile != nil {
				io.WriteString(logFile, time.Now().Format(StderrTimeLayout)+" "+text+"\n")
			}
			p.tail.add(text)
			p.noteSigns(text)
			if onLine != nil {
				onLine(text)
			}
		}
		if err != nil {
			return
		}
	}
}

// stderrTail returns the last n stderr lines. When the process has exited
// it first lets the reader reach EOF, so its last words are included.
func (p *process) stderrTail(n int) []string {
	if p == nil {
		return nil // a remote server
	}
	if p.exited() {
		waitDone(p.stderrDone, 500*time.Millisecond)
	}
	return p.tail.last(n)
}

// stderrTailBefore is stderrTail of the lines the process wrote before
// when (a startup deadline: what it wrote once mcpctl closed its pipes,
// which the SDK may do as the deadline passes, is mcpctl's doing).
func (p *process) stderrTailBefore(n int, when time.Time) []string {
	if p == nil {
		return nil
	}
	return p.tail.lastBefore(n, when)
}

// awaitExit waits for a process that may be exiting, so an error can say
// how it ended: up to 5s once it has closed its stdout (it is on its way
// out; npx's parents can take a while on a busy machine), else brief.
func (p *process) awaitExit(brief time.Duration) {
	if p == nil {
		return
	}
	if p.lines != nil && p.lines.eof.Load() {
		brief = 5 * time.Second
	}
	waitDone(p.done, brief)
}

// awaitGroupGone waits, up to limit, until nothing of process group pgid
// is left, and reports whether nothing is.
func awaitGroupGone(pgid int, limit time.Duration) bool {
	for deadline := time.Now().Add(limit); groupAlive(pgid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// awaitStdout waits, up to brief, for the reader of an exited process's
// stdout to reach its end: the lines it wrote last (a usage message) are
// then in stdoutTail for its error, where they could still be in the pipe.
func (p *process) awaitStdout(brief time.Duration) {
	if p == nil || p.lines == nil || !p.exited() {
		return
	}
	waitDone(p.lines.done, brief)
}

// exitedBefore reports whether the process had exited by t.
func (p *process) exitedBefore(t time.Time) bool {
	return p.exited() && p.exitedAt.Before(t)
}

// markStopped notes that mcpctl decided to stop the process (a stop, a
// restart, too many failures): how it then ends is not the server's
// doing. One that ended first ended on its own.
func (p *process) markStopped() {
	if p != nil && !p.exited() {
		p.stopped.Store(true)
	}
}

// stoppedByUs reports whether mcpctl stopped the process, rather than it
// ending on its own.
func (p *process) stoppedByUs() bool { return p != nil && p.stopped.Load() }

// exited reports whether the leader process has been reaped.
func (p *process) exited() bool {
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends the process the way the MCP spec asks: close stdin, give it a
// short grace to exit, SIGTERM the whole group, SIGKILL it after timeout.
// The leader is always reaped; the rest of the group is signalled until
// none of it is left (they are reparented, so init reaps them; or mcpctl,
// when it is init). killed says whether any of it had to be SIGKILLed.
func (p *process) stop(grace, timeout time.Duration) (killed bool) {
	if p == nil {
		return false
	}
	p.stdin.Close()
	if !p.waitExit(grace, timeout) {
		terminateGroup(p.pgid)
		if !waitDone(p.done, timeout) {
			signalGroup(p.pgid, syscall.SIGKILL)
			killed = true
			<-p.done
		}
	}
	// The leader is gone; what it started may not be.
	if groupAlive(p.pgid) {
		terminateGroup(p.pgid)
		if !awaitGroupGone(p.pgid, timeout) {
			signalGroup(p.pgid, syscall.SIGKILL)
			killed = true
			awaitGroupGone(p.pgid, time.Second)
		}
	}
	reapGroup(p.pgid)
	if p.onProcess != nil {
		p.ended.Do(func() { p.onProcess(p.pgid, false) })
	}
	p.stdout.Close()
	// Let the log get the server's last words, but never wait long: a
	// stray grandchild in another process group could hold the pipe.
	waitDone(p.stderrDone, time.Second)
	return killed
}

// terminateGroup sends SIGTERM to the group, and SIGCONT after it, as
// systemd does: a stopped process (kill -STOP, a debugger's, a shell's ^Z)
// gets its SIGTERM only once it runs, and would otherwise wait out the
// shutdown timeout for its SIGKILL.
func terminateGroup(pgid int) {
	signalGroup(pgid, syscall.SIGTERM)
	signalGroup(pgid, syscall.SIGCONT)
}

// waitExit waits for the process to exit after its stdin closed: grace, and
// up to limit longer while the process or what it started is still at work
// (running or waiting to run, using a tenth of a CPU or more, or in disk
// sleep). A server that saves its state on end of input is not sent SIGTERM
// halfway through, which most do not handle; one that sits idle (a Node
// server, whose timers keep it alive) gets it when the grace ends, even if a
// thread of its runtime wakes now and then. Whether it worked is read over
// the grace's last millisecond, and then over stretches that double to 32ms
// (Linux; elsewhere the grace is all).
func (p *process) waitExit(grace, limit time.Duration) bool {
	step := min(grace/2, time.Millisecond)
	if step <= 0 {
		return waitDone(p.done, grace)
	}
	next := time.Now().Add(grace)
	// The first reading is taken beside the wait, not in it: reading a
	// Node server's dozen threads takes 0.3-0.7 ms, and the runtime's
	// timers round what is left of the grace up to a millisecond, which
	// ended a 2 ms grace after about 3.
	type reading struct {
		at  time.Time
		cpu time.Duration
		ok  bool
	}
	first := make(chan reading, 1)
	t := time.AfterFunc(grace-step, func() {
		at := time.Now()
		cpu, _, ok := activity(p.pgid)
		first <- reading{at, cpu, ok}
	})
	if waitDone(p.done, grace) {
		t.Stop()
		return true
	}
	var r reading
	select {
	case r = <-first:
	case <-p.done:
		return true
	}
	if !r.ok {
		return waitDone(p.done, time.Until(next))
	}
	before, then := r.cpu, r.at
	deadline := next.Add(limit)
	for {
		if waitDone(p.done, time.Until(next)) {
			return true
		}
		now, active, _ := activity(p.pgid)
		if !active && now-before < time.Since(then)/10 || time.Now().After(deadline) {
			return false
		}
		step = min(2*step, 32*time.Millisecond)
		before, then, next = now, time.Now(), time.Now().Add(step)
	}
}

// closeStdin closes the server's stdin: the MCP way to ask it to exit.
func (p *process) closeStdin() {
	if p != nil {
		p.stdin.Close()
	}
}

func waitDone(ch <-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// exitDescription says how a process ended: "exited with code 3",
// "killed by SIGTERM".
func exitDescription(err error) string {
	if err == nil {
		return "exited with code 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			if name := unix.SignalName(ws.Signal()); name != "" {
				return "killed by " + name
			}
			return "killed by signal " + ws.Signal().String()
		}
		return fmt.Sprintf("exited with code %d", ee.ExitCode())
	}
	return err.Error()
}

// checkError turns a config check into the engine's error.
func checkError(err error) error {
	var ce *config.CheckError
	if !errors.As(err, &ce) {
		return err
	}
	// The message is the config's own, which names server and place; a
	// config error, as config validate reports it, though found at start.
	e := errorf(KindConfig, ce.Server, "%s", ce.Error())
	if ce.Hint != "" {
		e.hint("%s", ce.Hint)
	}
	return e
}

// exitReason says how the process ended and, when a limit set in the
// config explains it, which one.
func (p *process) exitReason() string {
	desc := exitDescription(p.exitErr)
	var ee *exec.ExitError
	errors.As(p.exitErr, &ee)
	var ws syscall.WaitStatus
	if ee != nil {
		ws, _ = ee.Sys().(syscall.WaitStatus)
	}
	if p.exited() {
		waitDone(p.stderrDone, 500*time.Millisecond)
	}
	l := p.limits
	switch {
	case l.CPUTime > 0 && ws.Signaled() && (ws.Signal() == syscall.SIGXCPU || ws.Signal() == syscall.SIGKILL) &&
		ee.UserTime()+ee.SystemTime() >= l.CPUTime.Truncate(time.Second):
		// SIGXCPU at the soft limit, SIGKILL at the hard one for programs
		// that ignore SIGXCPU (Go does); the CPU it used tells it was the limit.
		return fmt.Sprintf("%s (cpuTime limit of %s used up)", desc, l.CPUTime)
	case l.Memory > 0 && p.exitErr != nil && p.outOfMemory.Load():
		return fmt.Sprintf("%s (memory limit of %s reached)", desc, sizeText(l.Memory))
	case l.OpenFiles > 0 && p.exitErr != nil && p.outOfFiles.Load():
		return fmt.Sprintf("%s (openFiles limit of %d reached)", desc, l.OpenFiles)
	}
	return desc
}

// noteSigns watches stderr for a process running out of what its limits
// bound: the last words of runtimes that could not get memory (Go, Node,
// C++, Python, the C library) or file descriptors. They are noted as they
// pass, since a stack trace after them can be longer than any tail.
func (p *process) noteSigns(line string) {
	if p.limits.Memory > 0 && (containsAny(line, "out of memory", "Cannot allocate memory", "cannot allocate memory", "std::bad_alloc", "MemoryError", "Fatal process OOM", "failed to reserve") ||
		// Go, when the limit stops it mapping a new thread's stack first.
		strings.Contains(line, "failed to create new OS thread") && strings.Contains(line, "errno=12")) {
		p.outOfMemory.Store(true)
	}
	if p.limits.OpenFiles > 0 && containsAny(line, "too many open files", "EMFILE") {
		p.outOfFiles.Store(true)
	}
	// Go's own report of a fault in the runtime, not a panic of the
	// program's (whose "[signal SIGSEGV" line follows "panic:").
	if p.limits.Memory > 0 && (strings.HasPrefix(line, "SIGSEGV: segmentation violation") || strings.HasPrefix(line, "SIGBUS: bus error") ||
		strings.HasPrefix(line, "fatal error: unexpected signal during runtime execution")) {
		p.crashReport.Store(true)
	}
}

// crashedUnderMemoryLimit reports a process with a memory limit that
// crashed (SIGSEGV, SIGBUS or SIGABRT, or Go's runtime reporting a fault
// of its own and exiting 2) with no word of memory: the limit may still be
// why. Go's collector, for one, can die of a failed allocation with a bare
// SIGSEGV. Not meant: a server that exits with an error of its own, a
// program's panic, a SIGKILL (which the limit never sends). reason is its
// exitReason.
func (p *process) crashedUnderMemoryLimit(reason string) bool {
	if p.limits.Memory == 0 || p.exitErr == nil || strings.Contains(reason, "limit") {
		return false
	}
	var ee *exec.ExitError
	if !errors.As(p.exitErr, &ee) {
		return false
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		switch ws.Signal() {
		case syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGABRT:
			return true
		}
		return false
	}
	return ee.ExitCode() == 2 && p.crashReport.Load()
}

func containsAny(s string, needles ...string) bool {
	for _, n := range needles {
		if strings.Contains(s, n) {
			return true
		}
	}
	return false
}

func sizeText(n int64) string {
	switch {
	case n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

func startError(s *config.Server, err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return errorf(KindUnavailable, s.Name, "server %s: cannot run %s: permission denied", s.Name, s.Redact(s.Command)).wrap(err)
	}
	if errors.Is(err, syscall.E2BIG) {
		return errorf(KindConfig, s.Name, "server %s: its arguments and environment together are more than the system passes a program (argument list too long) (%s)", s.Name, s.Source).
			hint("pass the long values in a file the server reads; with inheritEnv false it gets less of mcpctl's own environment").wrap(err)
	}
	if errors.Is(err, syscall.ENOEXEC) {
		// Not a program this system runs, nor a script: the config's.
		return errorf(KindConfig, s.Name, "server %s: %s is not a program this system runs, nor a script with a #! line (%s)", s.Name, s.Redact(s.Command), s.Source).
			hint("run it through its interpreter, e.g. \"command\": \"sh\", \"args\": [%q]", s.Redact(s.Command)).wrap(err)
	}
	return errorf(KindUnavailable, s.Name, "server %s: cannot start %s: %s", s.Name, s.Redact(s.Command), s.Redact(err.Error())).wrap(err)
}

// serverEnv is the environment server s starts with: the part of env
// (NAME=value lines, mcpctl's own) it inherits (see
// config.Server.InheritEnv), with its Env applied (later keys win, as exec
// would otherwise keep the first).
func serverEnv(s *config.Server, env []string) []string {
	out := make([]string, 0, len(env)+len(s.Env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		// Input values, and serve's token, reach a server only where its
		// config puts them.
		if strings.HasPrefix(k, config.InputEnvPrefix) || k == config.ServeTokenEnv || !s.Inherits(k) {
			continue
		}
		if _, over := s.Env[k]; !over {
			out = append(out, kv)
		}
	}
	for k, v := range s.Env {
		out = append(out, k+"="+v)
	}
	return out
}

// tailShown is how much of a line a lineTail shows; tailKept is how much
// of one a redacted tail keeps, more than it shows, so that a secret
// across the cut is still found and hidden before the line is cut.
const (
	tailShown = 500
	tailKept  = 4096
)

// A lineTail keeps the last n lines written to it.
type lineTail struct {
	mu    sync.Mutex
	n     int
	lines []string
	at    []time.Time // when each of lines came
	// A redacted tail (newRedactedTail) keeps, in raw, up to tailKept
	// bytes of each line as it came, and redacts them only when they
	// are read: it is written to on a hot path (every stdout line that
	// is not JSON-RPC, for the server's life) and read only for errors.
	redact func(string) string
	raw    [][]byte // the oldest first; their buffers are reused
}

func newLineTail(n int) *lineTail { return &lineTail{n: n} }

// newRedactedTail returns a tail of n lines, added with addRaw, that
// passes them through redact as they are read.
func newRedactedTail(n int, redact func(string) string) *lineTail {
	return &lineTail{n: n, redact: redact}
}

// cutShown cuts a line to what a tail shows.
func cutShown(line string) string {
	if len(line) > tailShown {
		line = line[:tailShown] + "…"
	}
	return line
}

func (t *lineTail) add(line string) {
	line = cutShown(line)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	t.at = append(t.at, time.Now())
	if len(t.lines) > t.n {
		t.lines = t.lines[len(t.lines)-t.n:]
		t.at = t.at[len(t.at)-t.n:]
	}
}

// lastBefore is last(n) of a tail added with add, of the lines that came
// before when.
func (t *lineTail) lastBefore(n int, when time.Time) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	end := len(t.lines)
	for end > 0 && !t.at[end-1].Before(when) {
		end--
	}
	return append([]string(nil), t.lines[max(end-n, 0):end]...)
}

// addRaw adds a line to a redacted tail: a copy of its first tailKept
// bytes, as they are, into the buffer of the line it pushes out.
func (t *lineTail) addRaw(line []byte) {
	line = line[:min(len(line), tailKept)]
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.raw) < t.n {
		t.raw = append(t.raw, append([]byte(nil), line...))
		return
	}
	oldest := t.raw[0]
	copy(t.raw, t.raw[1:])
	t.raw[len(t.raw)-1] = append(oldest[:0], line...)
}

func (t *lineTail) last(n int) []string {
	t.mu.Lock()
	if t.redact == nil {
		defer t.mu.Unlock()
		n = min(n, len(t.lines))
		return append([]string(nil), t.lines[len(t.lines)-n:]...)
	}
	n = max(min(n, len(t.raw)), 0)
	out := make([]string, n)
	for i, raw := range t.raw[len(t.raw)-n:] {
		out[i] = string(bytes.ToValidUTF8(raw, []byte("?")))
	}
	t.mu.Unlock()
	// Redacted before it is cut, so that a secret across the cut is
	// hidden too.
	for i, line := range out {
		out[i] = cutShown(t.redact(line))
	}
	return out
}

// maxMessage bounds one JSON-RPC message from a server. A longer line is
// dropped (and logged); the request it answered then times out.
const maxMessage = 64 << 20

// jsonLines passes through only the lines of r that are JSON-RPC messages
// and reports the others to skip. The MCP spec forbids anything else on
// stdout, but real servers print banners and JSON log lines there, and one
// such line would otherwise end the session.
type jsonLines struct {
	r    *bufio.Reader
	c    io.Closer
	skip func(line []byte, why string)
	// skipped counts the lines passed to skip: a server that never
	// finishes starting may be writing something other than MCP there.
	skipped atomic.Int64
	// eof is set once the server closed its stdout: it is exiting.
	eof atomic.Bool
	// done is closed once reading is over (it met any error: the end,
	// or a read end already closed, as when the SDK's Connect fails; or
	// its reader stopped): nothing more goes to skip.
	done     chan struct{}
	doneOnce sync.Once
	// exited, when set, is closed once the server's process has exited:
	// Close then reads to the end first (see Close).
	exited <-chan struct{}
}

// droppedMarker is the data of the error mcpctl answers in place of a
// message too long to read, so the error does not blame the server for
// words it did not send.
const droppedMarker = "mcpctl: dropped an answer too long to read"

// droppedAnswer is the error response mcpctl reads in place of the answer
// to request id when that answer was too long to read.
func droppedAnswer(id json.RawMessage) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":"the answer was longer than %d MiB, the most mcpctl reads in one message; it was dropped","data":%q}}`,
		id, jsonrpc.CodeInternalError, maxMessage>>20, droppedMarker)
}

func newJSONLines(rc io.ReadCloser, skip func([]byte, string)) *jsonLines {
	return &jsonLines{r: bufio.NewReaderSize(rc, 64*1024), c: rc, skip: skip, done: make(chan struct{})}
}

// next returns the messages of the next line that is a JSON-RPC message or
// a batch of them. A plain message ([parsePlain]) is made from the parts
// found checking it; anything else is decoded by the SDK's decoder, once.
func (j *jsonLines) next() ([]jsonrpc.Message, error) {
	for {
		raw, tail, cut, err := lineio.ReadLineTail(j.r, maxMessage, 256)
		var msgs []jsonrpc.Message
		if t := bytes.TrimSpace(raw); cut {
			j.skipped.Add(1)
			// More than is shown, so that a secret across the cut is
			// still found and hidden before the line is cut.
			j.skip(t[:min(len(t), 4096)], fmt.Sprintf("longer than %d MiB", maxMessage>>20))
			// The request it answers would otherwise wait out its timeout,
			// and say the server did not answer.
			if id := cutResponseID(t, tail); id != nil {
				msgs, _ = decodeMessages(droppedAnswer(id))
			}
		} else if len(t) > 0 {
			if pm, plain := parsePlain(t); plain {
				if msg, err := pm.message(); err == nil {
					return []jsonrpc.Message{msg}, nil
				}
			}
			var why string
			if msgs, why = decodeMessages(t); why != "" {
				j.skipped.Add(1)
				j.skip(t, why)
			}
		}
		if err == io.EOF {
			j.eof.Store(true)
		}
		if err != nil {
			j.end()
		}
		// At the end, a last line without a newline still counts; the next
		// call meets the end again.
		if len(msgs) > 0 {
			return msgs, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// decodeMessages decodes a line that is a JSON-RPC 2.0 message or a batch
// of them, or says why it is not one: a log line such as {"level":"info"}
// is valid JSON, but not that. A line that claims to be JSON-RPC but does
// not decode as a message (a method that is not a string, an id that is an
// object) is refused here too: passed on, it would end the SDK's
// connection and so the server's session.
func decodeMessages(line []byte) (msgs []jsonrpc.Message, why string) {
	var raws []json.RawMessage
	switch line[0] {
	case '{':
		raws = []json.RawMessage{line}
	case '[':
		if json.Unmarshal(line, &raws) != nil || len(raws) == 0 {
			return nil, "not JSON-RPC"
		}
	default:
		return nil, "not JSON-RPC"
	}
	for _, m := range raws {
		msg, err := jsonrpc.DecodeMessage(m)
		if err != nil {
			// Only on the unhappy path: was it meant as JSON-RPC at all?
			var v struct {
				Version string `json:"jsonrpc"`
			}
			if json.Unmarshal(m, &v) != nil || v.Version != "2.0" {
				return nil, "not JSON-RPC"
			}
			return nil, "invalid JSON-RPC: " + err.Error()
		}
		msgs = append(msgs, msg)
	}
	return msgs, ""
}

// cutResponseID returns the id of the response whose line was cut after
// head (tail is the end of what was dropped), or nil when it was not a
// response or its id cannot be found. The Go and Python SDKs write the id
// before the result, the TypeScript one after it.
func cutResponseID(head, tail []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var id json.RawMessage
	for {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return nil
		}
		var v json.RawMessage
		switch key {
		case "method":
			return nil // a request or notification: nobody waits for it
		case "result", "error":
			if id != nil {
				return id
			}
			// The id, if any, comes after this (cut) value: the tail ends
			// with it.
			i := bytes.LastIndex(tail, []byte(`"id":`))
			if i < 0 {
				return nil
			}
			dec := json.NewDecoder(bytes.NewReader(tail[i+5:]))
			if dec.Decode(&v) != nil || !validID(v) {
				return nil
			}
			rest := bytes.TrimSpace(tail[i+5+int(dec.InputOffset()):])
			if string(rest) != "}" && string(rest) != `,"jsonrpc":"2.0"}` {
				return nil
			}
			return v
		}
		if dec.Decode(&v) != nil {
			return nil
		}
		if key == "id" {
			if !validID(v) {
				return nil
			}
			id = v
		}
	}
}

// validID reports whether v is a JSON-RPC id: a number or a string.
func validID(v json.RawMessage) bool {
	_, err := jsonrpc.DecodeMessage(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{}}`, v))
	return len(v) > 0 && (v[0] == '"' || v[0] == '-' || v[0] >= '0' && v[0] <= '9') && err == nil
}

// Close closes the read end. When the process has exited, what it wrote
// last is read first, for a moment: its last words (a usage message) go
// to its error, where the SDK's closing the connection as the start fails
// could cut them off unread.
func (j *jsonLines) Close() error {
	select {
	case <-j.exited:
		waitDone(j.done, 100*time.Millisecond)
	default:
	}
	return j.c.Close()
}

// end marks reading over; it may be said more than once.
func (j *jsonLines) end() { j.doneOnce.Do(func() { close(j.done) }) }

// skippedLines is how many lines of its stdout were not JSON-RPC.
func (p *process) skippedLines() int64 {
	if p == nil || p.lines == nil {
		return 0
	}
	return p.lines.skipped.Load()
}

// skippedNote says that n lines of stdout were not JSON-RPC.
func skippedNote(n int64) string {
	if n == 1 {
		return "it wrote 1 line to stdout that was not JSON-RPC"
	}
	return fmt.Sprintf("it wrote %d lines to stdout that were not JSON-RPC", n)
}

// killedBySignal reports whether the process was killed by a signal that
// no limit of its own explains: someone or something else ended it, and a
// new start may well work.
func (p *process) killedBySignal() bool {
	var ee *exec.ExitError
	if !errors.As(p.exitErr, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && !strings.Contains(p.exitReason(), "limit")
}
