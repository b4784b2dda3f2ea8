package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/engine"
	"github.com/mcpctl/mcpctl/internal/fakemcp"
	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"
)

// The test binary is also mcpctl and the fake MCP server: testscript puts
// both on the scripts' PATH.
func TestMain(m *testing.M) {
	testscript.Main(cleanup{m}, map[string]func(){
		"mcpctl":   func() { os.Exit(run()) },
		"mcp-fake": func() { os.Exit(fakemcp.Main(os.Args[1:])) },
	})
}

// cleanup removes what the tests built once they have run.
type cleanup struct{ m *testing.M }

func (c cleanup) Run() int {
	defer fakemcp.RemovePlainBinary()
	code := c.m.Run()
	// After the whole suite, no process any script started may be left:
	// not a session, not a server, not what a server started.
	marksMu.Lock()
	defer marksMu.Unlock()
	for _, mark := range marks {
		for _, d := range describe(markedProcesses(mark)) {
			fmt.Fprintf(os.Stderr, "process left after the suite: %s\n", d)
			code = 1
		}
	}
	return code
}

// marks are the marks of every script run, for the check after the suite.
var (
	marksMu sync.Mutex
	marks   []string
)

// TestScript runs every behaviour in testdata/script against the fake
// server: one behaviour per file.
func TestScript(t *testing.T) {
	testscript.Run(t, scriptParams("testdata/script"))
}

func scriptParams(dir string) testscript.Params {
	return testscript.Params{
		Dir:                 dir,
		Setup:               setupScript,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Condition: func(cond string) (bool, error) {
			if cond == "root" {
				return os.Geteuid() == 0, nil
			}
			if shell, ok := strings.CutPrefix(cond, "shell:"); ok {
				// scripts/setup installs zsh and fish where it can, and says
				// so where it cannot.
				_, err := exec.LookPath(shell)
				return err == nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"leaked":     cmdLeaked,
			"alive":      cmdAlive,
			"groupalive": cmdGroupAlive,
			"waitfile":   cmdWaitFile,
			"waitgrep":   cmdWaitGrep,
			"mksock":     cmdMksock,
			"plainfake":  cmdPlainFake,
			"kill9":      cmdSignal("kill9", syscall.SIGKILL),
			"sigterm":    cmdSignal("sigterm", syscall.SIGTERM),
			"sigquit":    cmdSignal("sigquit", syscall.SIGQUIT),
			"freeport":   cmdFreePort,
			"envfile":    cmdEnvFile,
			"browse":     cmdBrowse,
			"waitport":   cmdWaitPort,
			"watchdog":   cmdWatchdog,
		},
	}
}

// markKey names the variable every script sets to a value of its own. The
// processes mcpctl starts inherit it, which is how `leaked` finds them.
const markKey = "MCPCTL_TEST_MARK"

// setupScript gives each script its own HOME, XDG directories and socket
// directory, so no test touches the developer's config or sessions, and
// stops whatever a failed script left running.
func setupScript(env *testscript.Env) error {
	work := env.WorkDir
	// Socket paths must stay short (about 104 bytes); $WORK is long.
	rt, err := os.MkdirTemp("", "mcx")
	if err != nil {
		return err
	}
	for k, v := range map[string]string{
		"HOME":            filepath.Join(work, "home"),
		"XDG_CONFIG_HOME": filepath.Join(work, "home", ".config"),
		"XDG_STATE_HOME":  filepath.Join(work, "home", ".local", "state"),
		"XDG_CACHE_HOME":  filepath.Join(work, "home", ".cache"),
		"XDG_DATA_HOME":   filepath.Join(work, "home", ".local", "share"),
		"XDG_RUNTIME_DIR": rt,
	} {
		env.Setenv(k, v)
		if k != "XDG_RUNTIME_DIR" {
			os.MkdirAll(v, 0o700)
		}
	}
	for _, k := range []string{"MCPCTL_CONFIG", "MCPCTL_SESSION", "MCPCTL_RUNTIME_DIR", "MCPCTL_STATE_DIR", "MCPCTL_FORCE_TTY"} {
		env.Setenv(k, "")
	}
	mark := make([]byte, 8)
	rand.Read(mark)
	env.Setenv(markKey, hex.EncodeToString(mark))
	markValue := env.Getenv(markKey)
	marksMu.Lock()
	marks = append(marks, markValue)
	marksMu.Unlock()
	env.Defer(func() {
		// Stop sessions the script left up the proper way first; whatever
		// still carries the mark after that was left behind: a failure.
		socks, _ := filepath.Glob(filepath.Join(rt, "mcpctl", "*.sock"))
		for _, s := range socks {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			(&engine.Client{Socket: s}).Shutdown(ctx)
			cancel()
		}
		if !eventually(func() bool { return len(markedProcesses(markValue)) == 0 }) {
			left := markedProcesses(markValue)
			desc := describe(left)
			for _, pid := range left {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			env.T().Fatal("processes left behind after the script (killed now):\n" + strings.Join(desc, "\n"))
		}
		os.RemoveAll(rt)
		// A detached session writes a race report (go test -race) only to
		// its log; fail the script on it.
		logs, _ := filepath.Glob(filepath.Join(work, "home", ".local", "state", "mcpctl", "*", "session.log"))
		for _, l := range logs {
			if data, _ := os.ReadFile(l); bytes.Contains(data, []byte("WARNING: DATA RACE")) {
				env.T().Fatal("data race in the session; its log " + l + ":\n" + string(data))
			}
		}
	})
	return nil
}

// markedProcesses returns the live (not zombie) processes whose environment
// holds MCPCTL_TEST_MARK=mark.
func markedProcesses(mark string) []int {
	needle := []byte(markKey + "=" + mark + "\x00")
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.Contains(append(env, 0), needle) {
			continue
		}
		if procState(pid) != "" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procState returns the state letter of a live process, "" for a process
// that is gone or a zombie (exited; only its parent's bookkeeping is left).
func procState(pid int) string {
	// A killed multi-threaded process shows its leader as a zombie while
	// its other threads are still exiting, its files (a listening socket,
	// say) still open: it is gone only when every thread is.
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/[0-9]*/stat")
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(data, ')')
		f := strings.Fields(string(data[i+1:]))
		if len(f) >= 3 && f[0] != "Z" && f[0] != "X" {
			return f[0]
		}
	}
	return ""
}

func procGroup(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	i := bytes.LastIndexByte(data, ')')
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 3 {
		return -1
	}
	g, _ := strconv.Atoi(f[2])
	return g
}

// eventually polls cond until it holds or a short deadline passes: a
// process that was just told to stop may take a moment to be gone.
func eventually(cond func() bool) bool { return within(10*time.Second, cond) }

// within polls cond until it holds or d has passed.
func within(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// leaked succeeds when a process started by this script (it carries the
// script's mark) still runs. `! leaked` waits briefly for them to go.
func cmdLeaked(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 0 {
		ts.Fatalf("usage: leaked")
	}
	mark := ts.Getenv(markKey)
	if !neg {
		if len(markedProcesses(mark)) == 0 {
			ts.Fatalf("no process of this script is running")
		}
		return
	}
	if !eventually(func() bool { return len(markedProcesses(mark)) == 0 }) {
		ts.Fatalf("processes left behind:\n%s", strings.Join(describe(markedProcesses(mark)), "\n"))
	}
}

// describe names processes by pid and command line.
func describe(pids []int) []string {
	var out []string
	for _, pid := range pids {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(cmd), "\x00", " ")))
	}
	return out
}

func pidsFrom(ts *testscript.TestScript, file string) []int {
	var pids []int
	for _, f := range strings.Fields(ts.ReadFile(file)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			ts.Fatalf("%s: %q is not a pid", file, f)
		}
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		ts.Fatalf("%s holds no pid", file)
	}
	return pids
}

// alive FILE succeeds when the process whose pid FILE holds runs.
// `! alive FILE` waits briefly (10s) for it to be gone; `! alive -within D
// FILE` waits at most D.
func cmdAlive(ts *testscript.TestScript, neg bool, args []string) {
	wait, args := waitFlag(ts, args)
	if len(args) != 1 {
		ts.Fatalf("usage: alive [-within D] PIDFILE")
	}
	checkPIDs(ts, neg, wait, pidsFrom(ts, args[0]), func(pid int) bool { return procState(pid) != "" })
}

// waitFlag takes a leading "-within D" off args; the default wait is 10s.
func waitFlag(ts *testscript.TestScript, args []string) (time.Duration, []string) {
	if len(args) < 2 || args[0] != "-within" {
		return 10 * time.Second, args
	}
	d, err := time.ParseDuration(args[1])
	ts.Check(err)
	return d, args[2:]
}

// watchdog SESSIONPIDFILE OUTFILE finds the watchdog the session started,
// checks that it runs in a process session and group of its own (a Ctrl-C
// at the terminal does not reach it) and holds no socket and no pipe but
// its stdin, other than what the test itself inherited (it keeps nothing of
// the session's open), and writes its pid to OUTFILE.
func cmdWatchdog(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: watchdog SESSIONPIDFILE OUTFILE")
	}
	session := pidsFrom(ts, args[0])[0]
	var found []int
	// A replacement may be on its way: look for up to 3 s.
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		found = nil
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			pid, _ := strconv.Atoi(filepath.Base(d))
			cmd, _ := os.ReadFile(filepath.Join(d, "cmdline"))
			if st := procState(pid); procParent(pid) == session && string(cmd) == "mcpctl\x00_watchdog\x00" && st != "" && st != "Z" {
				found = append(found, pid)
			}
		}
		if len(found) == 1 || time.Now().After(deadline) {
			break
		}
	}
	if len(found) != 1 {
		ts.Fatalf("want one watchdog child of the session %d, found %v", session, found)
	}
	pid := found[0]
	if sid, _ := unix.Getsid(pid); sid != pid || procGroup(pid) != pid {
		ts.Fatalf("watchdog %d: session %d, group %d; want both its own", pid, sid, procGroup(pid))
	}
	// What the test itself inherited (from whoever runs go test) every
	// process below it inherits too; that is not the session's.
	inherited := map[string]bool{}
	own, _ := filepath.Glob("/proc/self/fd/*")
	for _, fd := range own {
		target, _ := os.Readlink(fd)
		inherited[target] = true
	}
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	for _, fd := range fds {
		target, _ := os.Readlink(fd)
		n := filepath.Base(fd)
		if inherited[target] {
			continue
		}
		if strings.HasPrefix(target, "socket:") || (strings.HasPrefix(target, "pipe:") && n != "0") {
			ts.Fatalf("watchdog %d holds fd %s: %s", pid, n, target)
		}
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(strconv.Itoa(pid)), 0o644))
}

func procParent(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	i := bytes.LastIndexByte(data, ')')
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 2 {
		return -1
	}
	p, _ := strconv.Atoi(f[1])
	return p
}

// browse FILE plays the user's browser: it GETs the first http URL in
// FILE, following redirects (to mcpctl's loopback listener, say).
func cmdBrowse(ts *testscript.TestScript, neg bool, args []string) {
	deny := len(args) == 2 && args[0] == "-deny"
	if deny {
		args = args[1:]
	}
	if len(args) != 1 || neg {
		ts.Fatalf("usage: browse [-deny] FILE")
	}
	url := regexp.MustCompile(`http://\S+`).FindString(ts.ReadFile(args[0]))
	if url == "" {
		ts.Fatalf("no URL in %s", args[0])
	}
	if deny {
		// The user says no: the authorization server redirects back
		// with an error instead of a code.
		u, err := neturl.Parse(url)
		ts.Check(err)
		q := u.Query()
		back := q.Get("redirect_uri") + "?" + neturl.Values{"error": {"access_denied"}, "error_description": {"the user said no"}, "state": {q.Get("state")}}.Encode()
		resp, err := http.Get(back)
		ts.Check(err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			ts.Fatalf("the redirect with an error got %s", resp.Status)
		}
		return
	}
	resp, err := http.Get(url)
	ts.Check(err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	ts.Logf("browsed %s: %s %s", url, resp.Status, body)
	if resp.StatusCode != http.StatusOK {
		ts.Fatalf("the browser got %s", resp.Status)
	}
}

// envfile VAR FILE sets VAR to FILE's content, trimmed.
func cmdEnvFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: envfile VAR FILE")
	}
	ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile(args[1])))
}

// freeport VAR sets VAR to a TCP port on 127.0.0.1 that is free now.
func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: freeport VAR")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ts.Setenv(args[0], strconv.Itoa(port))
}

// waitport PORT waits until something listens on 127.0.0.1:PORT.
func cmdWaitPort(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: waitport PORT")
	}
	if !eventually(func() bool {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+args[0], time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		ts.Fatalf("nothing listens on port %s", args[0])
	}
}

// kill9 FILE and sigterm FILE send SIGKILL or SIGTERM to the processes
// whose pids FILE holds.
func cmdSignal(name string, sig syscall.Signal) func(*testscript.TestScript, bool, []string) {
	return func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 1 || neg {
			ts.Fatalf("usage: %s PIDFILE", name)
		}
		for _, pid := range pidsFrom(ts, args[0]) {
			ts.Check(syscall.Kill(pid, sig))
		}
	}
}

// groupalive FILE succeeds when a process of any process group listed in
// FILE (one pid per line, e.g. from `status --jq .servers[].pid`) runs.
func cmdGroupAlive(ts *testscript.TestScript, neg bool, args []string) {
	wait, args := waitFlag(ts, args)
	if len(args) != 1 {
		ts.Fatalf("usage: groupalive [-within D] PIDFILE")
	}
	checkPIDs(ts, neg, wait, pidsFrom(ts, args[0]), func(pgid int) bool {
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			pid, _ := strconv.Atoi(filepath.Base(d))
			if procGroup(pid) == pgid && procState(pid) != "" {
				return true
			}
		}
		return false
	})
}

func checkPIDs(ts *testscript.TestScript, neg bool, wait time.Duration, pids []int, live func(int) bool) {
	anyLive := func() bool {
		for _, p := range pids {
			if live(p) {
				return true
			}
		}
		return false
	}
	if neg {
		if !within(wait, func() bool { return !anyLive() }) {
			ts.Fatalf("still running after %s: %v", wait, pids)
		}
		return
	}
	if !anyLive() {
		ts.Fatalf("not running: %v", pids)
	}
}

// waitfile FILE waits until FILE exists and is not empty.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: waitfile FILE")
	}
	p := ts.MkAbs(args[0])
	if !eventually(func() bool { st, err := os.Stat(p); return err == nil && st.Size() > 0 }) {
		ts.Fatalf("%s did not appear", args[0])
	}
}

// waitgrep FILE REGEXP waits until FILE has a line matching REGEXP (a
// background command writes it).
func cmdWaitGrep(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: waitgrep FILE REGEXP")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	p := ts.MkAbs(args[0])
	if !eventually(func() bool { data, _ := os.ReadFile(p); return re.Match(data) }) {
		data, _ := os.ReadFile(p)
		ts.Fatalf("%s has no line matching %s:\n%s", args[0], args[1], data)
	}
}

// mksock PATH leaves a unix socket file at PATH that nothing listens on, as
// a crashed session would.
// cmdPlainFake links the fake server built without the race detector at
// PATH: scripts that set resource limits need it (the race runtime cannot
// start under a memory limit).
func cmdPlainFake(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: plainfake PATH")
	}
	exe, err := fakemcp.PlainBinary()
	ts.Check(err)
	ts.Check(os.Symlink(exe, ts.MkAbs(args[0])))
}

func cmdMksock(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: mksock PATH")
	}
	p := ts.MkAbs(args[0])
	os.MkdirAll(filepath.Dir(p), 0o700)
	l, err := net.Listen("unix", p)
	ts.Check(err)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
}
