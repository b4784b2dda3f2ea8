package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A Session names the files of one background session: one per config file
// (like a docker compose project), named from the config's path unless the
// user names it.
type Session struct {
	Name string
	// Dir is the runtime directory (mode 0700) holding Socket and Lock.
	Dir    string
	Socket string
	Lock   string
	// StateDir holds the session's log and its servers' stderr logs.
	StateDir string

	dirFrom, stateFrom string // the variables that set Dir and StateDir
}

// maxSocketPath is the portable limit of a unix socket path (sun_path is 108
// bytes on Linux, 104 on macOS, counting the terminating NUL).
const maxSocketPath = 103

// CanonicalPath is the path of a config file that names a session:
// absolute (from the working directory), symlinks resolved, those of its
// directory when the file itself is gone. A pipe (/dev/stdin) stays as
// it is.
func CanonicalPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if st, err := os.Stat(p); err == nil && st.Mode()&(os.ModeNamedPipe|os.ModeCharDevice|os.ModeDevice|os.ModeSocket) != 0 {
		// /dev/stdin, a shell's <(...): the link names a pipe, no file.
		return p
	}
	for range 8 { // a dangling symlink names the file it pointed to
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return real
		}
		target, err := os.Readlink(p)
		if err != nil {
			break
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p = target
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		return filepath.Join(dir, filepath.Base(p))
	}
	return p
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// SessionFor returns the session of the config files at configPaths
// (usually one; each as CanonicalPath makes it, so that every spelling of
// a file is the same session), or the explicitly named one. getenv reads
// MCPCTL_RUNTIME_DIR, XDG_RUNTIME_DIR, MCPCTL_STATE_DIR and XDG_STATE_HOME.
func SessionFor(configPaths []string, name string, getenv func(string) string) (*Session, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if name == "" && len(configPaths) == 0 {
		return nil, errorf(KindUsage, "", "a session needs a config file or a name")
	}
	if name == "" {
		// The same files are the same session, in whatever order they are
		// given: their servers are the same.
		var paths []string
		for _, p := range configPaths {
			paths = append(paths, CanonicalPath(p))
		}
		slices.Sort(paths)
		configPath := paths[0]
		sum := sha256.Sum256([]byte(strings.Join(paths, "\n")))
		base := filepath.Base(filepath.Dir(configPath))
		if base == ".vscode" {
			base = filepath.Base(filepath.Dir(filepath.Dir(configPath)))
		}
		base = strings.Trim(unsafeName.ReplaceAllString(base, "-"), "-.")
		if len(base) > 24 {
			base = base[:24]
		}
		if base == "" {
			base = "mcp"
		}
		name = base + "-" + hex.EncodeToString(sum[:])[:8]
	} else if unsafeName.MatchString(name) || strings.HasPrefix(name, ".") {
		return nil, errorf(KindUsage, "", "invalid session name %q", name).
			hint("use letters, digits, '.', '_' and '-'")
	}
	dir, dirFrom := runtimeDir(getenv)
	state, stateFrom := stateDir(getenv)
	s := &Session{
		Name:      name,
		Dir:       dir,
		Socket:    filepath.Join(dir, name+".sock"),
		Lock:      filepath.Join(dir, name+".lock"),
		StateDir:  filepath.Join(state, name),
		dirFrom:   dirFrom,
		stateFrom: stateFrom,
	}
	return s, nil
}

// MakeDirs makes the session's runtime and state directories, or checks
// that existing ones are the user's own and private (see
// [Session.EnsureStateDir]). One that cannot be made, or is another
// user's, is a usage error naming the variable it comes from.
func (s *Session) MakeDirs() error {
	if err := s.ensureRuntimeDir(); err != nil {
		return err
	}
	return s.EnsureStateDir()
}

// ensureRuntimeDir makes the runtime directory, or checks an existing one
// (ensureDir): another user must not be able to plant a socket there.
func (s *Session) ensureRuntimeDir() error {
	if err := privateDir(s.Dir); err != nil { // another user must not be able to plant a socket there
		return s.dirError("runtime", s.Dir, s.dirFrom, err)
	}
	return nil
}

// EnsureStateDir makes the session's state directory and its servers/
// directory (0700), or checks that existing ones are the user's own and
// tightens them to 0700; in a state directory other users share
// (MCPCTL_STATE_DIR=/tmp/x), another could have made them first to read
// or redirect the logs. The session's own logs there must be regular
// files of the user's: a symlink planted in the directory before it was
// made private would have them appended to another file.
func (s *Session) EnsureStateDir() error {
	for _, dir := range []string{s.StateDir, s.ServerLogDir()} {
		if err := privateDir(dir); err != nil {
			return s.dirError("state", dir, s.stateFrom, err)
		}
	}
	for _, f := range []string{s.LogFile(), s.AuditFile()} {
		lf, err := openLog(f)
		if err != nil {
			return errorf(KindUsage, "", "%v", err).
				hint("remove it; mcpctl makes it again: rm %s", f)
		}
		lf.Close()
	}
	return nil
}

// CheckStateDir checks the session's state directories that exist, as
// [Session.EnsureStateDir] would, without making or changing any: for a
// command that runs its servers without a session, which writes only their
// stderr logs there (made, private, as each log is opened), and for one
// that reads the logs. It fails only for a directory that is not the
// user's own (a symlink, another user's), whose logs another could read
// or redirect.
func (s *Session) CheckStateDir() *Error {
	for _, dir := range []string{s.StateDir, s.ServerLogDir()} {
		fd, _, err := openOwnDir(dir)
		var unsafe *unsafeDirError
		if errors.As(err, &unsafe) {
			return s.dirError("state", dir, s.stateFrom, err)
		}
		if err != nil {
			return nil // not there (yet), or not to be read: what opens a log says
		}
		unix.Close(fd)
	}
	return nil
}

// dirError explains why the session's runtime or state directory dir
// cannot be used, and which variable it comes from (from, "" for the
// default).
func (s *Session) dirError(what, dir, from string, err error) *Error {
	own := map[string]string{"runtime": "MCPCTL_RUNTIME_DIR", "state": "MCPCTL_STATE_DIR"}[what]
	var unsafe *unsafeDirError
	if !errors.As(err, &unsafe) {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		e := errorf(KindUsage, "", "cannot make the session's %s directory %s: %v", what, dir, err)
		if from == "" {
			e.Kind = KindInternal
			return e.hint("set $%s to a directory you may write", own)
		}
		return e.hint("it comes from $%s; point it at a directory you may write", from)
	}
	e := errorf(KindUsage, "", "the session's %s directory %s", what, unsafe.Error())
	switch {
	case from == own && what == "state":
		// A state directory shared by several users: each session's own
		// directory in it must be its user's.
		e.hint("it comes from $%s, which other users may share; unset it (logs then go to $XDG_STATE_HOME/mcpctl or ~/.local/state/mcpctl), or point it at a directory of your own", own)
	case from == own:
		e.hint("it comes from $%s; point it at a directory of your own (mcpctl makes it, mode 0700)", own)
	case from == "" || from == "TMPDIR" || from == "HOME":
		xdg := map[string]string{"runtime": "XDG_RUNTIME_DIR", "state": "XDG_STATE_HOME"}[what]
		e.hint("it is the default, as neither $%s nor $%s is set; point $%s at a directory of your own, e.g. export %s=$HOME/.mcpctl-%s", own, xdg, own, own, what)
	default:
		e.hint("it comes from $%s; point $%s at a directory of your own, e.g. export %s=$HOME/.mcpctl-%s", from, own, own, what)
	}
	return e
}

// CheckSocket says whether the session's socket path is short enough to
// listen on. Only starting a session needs it: a client finds no session
// at a path too long (the dial fails), and a command goes on without one.
func (s *Session) CheckSocket() error {
	if len(s.Socket) > maxSocketPath {
		return errorf(KindUsage, "", "socket path %s is too long for a unix socket (%d bytes, at most %d)", s.Socket, len(s.Socket), maxSocketPath).
			hint("point MCPCTL_RUNTIME_DIR at a shorter directory, e.g. export MCPCTL_RUNTIME_DIR=/tmp/mcpctl-$(id -u)")
	}
	return nil
}

// runtimeDir is where sessions' sockets are, and the variable that says so
// ("" when none does).
func runtimeDir(getenv func(string) string) (dir, from string) {
	if d := getenv("MCPCTL_RUNTIME_DIR"); d != "" {
		return d, "MCPCTL_RUNTIME_DIR"
	}
	if d := getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "mcpctl"), "XDG_RUNTIME_DIR"
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("mcpctl-%d", os.Getuid())), envSet("TMPDIR")
}

// stateDir is where sessions' logs are, and the variable that says so.
func stateDir(getenv func(string) string) (dir, from string) {
	if d := getenv("MCPCTL_STATE_DIR"); d != "" {
		return d, "MCPCTL_STATE_DIR"
	}
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "mcpctl"), "XDG_STATE_HOME"
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "mcpctl"), envSet("HOME")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("mcpctl-%d-state", os.Getuid())), envSet("TMPDIR")
}

// envSet is name when the process's environment sets it: os.TempDir and
// os.UserHomeDir read it there.
func envSet(name string) string {
	if os.Getenv(name) != "" {
		return name
	}
	return ""
}

// LogFile is the session process's own log.
func (s *Session) LogFile() string { return filepath.Join(s.StateDir, "session.log") }

// AuditFile is the session's audit log: calls, server starts and stops,
// reloads, as JSON lines.
func (s *Session) AuditFile() string { return filepath.Join(s.StateDir, "audit.log") }

// ServerLogDir holds one <server>.log per server.
func (s *Session) ServerLogDir() string { return filepath.Join(s.StateDir, "servers") }

// An unsafeDirError says why a directory is not one of the user's own.
type unsafeDirError struct{ dir, why string }

func (e *unsafeDirError) Error() string { return e.dir + " " + e.why }

// privateDir makes dir (0700), or checks that an existing one is a
// directory of ours, not a symlink, and tightens it to 0700. It looks
// through a descriptor opened without following a symlink, so what it
// checks is what it changes, whatever is renamed meanwhile.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fd, mode, err := openOwnDir(dir)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if mode&0o777 != 0o700 {
		if err := unix.Fchmod(fd, 0o700); err != nil {
			return &fs.PathError{Op: "chmod", Path: dir, Err: err}
		}
	}
	return nil
}

// openOwnDir opens dir without following a symlink, so that what is
// checked is what the caller changes, and checks that it is the user's.
func openOwnDir(dir string) (fd int, mode uint32, err error) {
	fd, err = unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if st, lerr := os.Lstat(dir); lerr == nil && st.Mode()&os.ModeSymlink != 0 {
			return -1, 0, &unsafeDirError{dir, "is a symbolic link; mcpctl keeps its files only in a directory of its own"}
		}
		return -1, 0, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, 0, &fs.PathError{Op: "stat", Path: dir, Err: err}
	}
	if int(st.Uid) != os.Getuid() {
		unix.Close(fd)
		return -1, 0, &unsafeDirError{dir, fmt.Sprintf("belongs to another user (uid %d), who could read or replace what mcpctl keeps there", st.Uid)}
	}
	return fd, uint32(st.Mode), nil
}

// ErrSessionRunning is returned by [Listen] when a session already answers
// on the socket or holds its lock.
var ErrSessionRunning = errors.New("a session is already running")

// Listen claims the session: it takes the session's lock (held until the
// returned release is called), refuses if a session answers on the socket,
// replaces a stale socket file, listens, and restricts the socket to its
// owner. Connections from other users are refused.
func (s *Session) Listen() (ln net.Listener, release func(), err error) {
	return s.ListenHolding(nil)
}

// Claim takes the session's lock for a session process about to be
// started, which is handed it (see [Session.ListenHolding]): from then on
// the session counts as running ([Session.Running]), so a command in the
// moments before it listens waits for it instead of finding none. It
// returns [ErrSessionRunning] when another holds the lock.
func (s *Session) Claim() (*os.File, error) {
	if err := s.CheckSocket(); err != nil {
		return nil, err
	}
	if err := s.ensureRuntimeDir(); err != nil {
		return nil, err
	}
	return lockSoon(s.Lock)
}

// lockSoon is lockFile tried a few times: a command that asks whether a
// session runs ([Session.Running]) holds the lock for a moment, and one
// taken then is not a session.
func lockSoon(path string) (*os.File, error) {
	for try := 1; ; try++ {
		f, err := lockFile(path)
		if !errors.Is(err, ErrSessionRunning) || try == 4 {
			return f, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ListenHolding is [Session.Listen] for a process given the session's lock
// by the one that claimed it ([Session.Claim]); nil takes the lock here.
func (s *Session) ListenHolding(lock *os.File) (ln net.Listener, release func(), err error) {
	fail := func(err error) (net.Listener, func(), error) {
		if lock != nil {
			lock.Close()
		}
		return nil, nil, err
	}
	if err := s.CheckSocket(); err != nil {
		return fail(err)
	}
	if err := s.ensureRuntimeDir(); err != nil {
		return fail(err)
	}
	if lock == nil {
		if lock, err = lockSoon(s.Lock); err != nil {
			return nil, nil, err
		}
	} else if err := holdsLock(lock, s.Lock); err != nil {
		lock.Close()
		return nil, nil, err
	}
	release = func() { lock.Close() }
	if c, err := net.DialTimeout("unix", s.Socket, time.Second); err == nil {
		c.Close()
		release()
		return nil, nil, ErrSessionRunning
	}
	// Nothing answers, and we hold the lock: the file is stale.
	os.Remove(s.Socket)
	l, err := listenSocket(s.Socket)
	if err != nil {
		release()
		return nil, nil, err
	}
	hl := newHealingListener(s.Socket, l)
	var mu sync.Mutex
	locks := []*os.File{lock}
	hl.relock = func() error {
		mu.Lock()
		defer mu.Unlock()
		if st, err := os.Stat(s.Lock); err == nil {
			for _, f := range locks {
				if held, err := f.Stat(); err == nil && os.SameFile(st, held) {
					return nil // the file it holds is still there
				}
			}
		}
		f, err := lockFile(s.Lock)
		if err != nil {
			return err
		}
		locks = append(locks, f)
		return nil
	}
	// The socket goes before the lock, and only if it is still the one
	// this session made: after a handover (see healingListener) the file
	// at the path is another session's.
	release = func() {
		hl.removeOwnSocket()
		mu.Lock()
		defer mu.Unlock()
		for _, f := range locks {
			f.Close()
		}
	}
	return &peerListener{Listener: hl}, release, nil
}

// Running reports whether a session process holds the session's lock: it
// runs, or is about to listen, or is ending.
func (s *Session) Running() bool {
	if _, err := os.Stat(s.Lock); err != nil {
		return false // no session ever ran here: leave no lock file behind
	}
	f, err := lockFile(s.Lock)
	if err != nil {
		return errors.Is(err, ErrSessionRunning)
	}
	f.Close()
	return false
}

// RemoveStale removes the socket file of a session that is gone without
// removing it (kill -9, a crash): nothing holds the session's lock, yet the
// file is there. It reports whether it removed one. Holding the lock while
// it looks keeps it from removing the socket of a session just starting.
func (s *Session) RemoveStale() bool {
	st, err := os.Lstat(s.Socket)
	if err != nil || st.Mode().Type() != os.ModeSocket {
		return false
	}
	lock, err := lockFile(s.Lock)
	if err != nil {
		return false
	}
	defer lock.Close()
	return os.Remove(s.Socket) == nil
}

// TokenDir is where OAuth tokens are kept: $MCPCTL_TOKEN_DIR, else
// $XDG_CONFIG_HOME/mcpctl/tokens, else ~/.config/mcpctl/tokens.
func TokenDir(getenv func(string) string) string {
	if d := getenv("MCPCTL_TOKEN_DIR"); d != "" {
		return d
	}
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "mcpctl", "tokens")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".config", "mcpctl", "tokens")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("mcpctl-%d-tokens", os.Getuid()))
}
