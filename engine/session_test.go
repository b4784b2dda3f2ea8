package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// otherUID is a user the tests give files to (nobody); only root can.
const otherUID = 65534

// sessionIn returns session "st" with the given variables set.
func sessionIn(t *testing.T, env map[string]string) *Session {
	t.Helper()
	s, err := SessionFor(nil, "st", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sharedStateSession is a session whose MCPCTL_STATE_DIR is a 1777
// directory, as several users would share.
func sharedStateSession(t *testing.T) *Session {
	t.Helper()
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o1777); err != nil {
		t.Fatal(err)
	}
	return sessionIn(t, map[string]string{"MCPCTL_STATE_DIR": shared, "MCPCTL_RUNTIME_DIR": filepath.Join(dir, "rt")})
}

// usageError checks that err is a usage error (exit 2) whose message has
// each of msg and whose hints have hint.
func usageError(t *testing.T, err error, hint string, msg ...string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %T %v, want an *Error", err, err)
	}
	if e.Kind != KindUsage {
		t.Errorf("kind %s, want usage: %v", e.Kind, e)
	}
	for _, m := range msg {
		if !strings.Contains(e.Message, m) {
			t.Errorf("message %q lacks %q", e.Message, m)
		}
	}
	if !strings.Contains(strings.Join(e.Hint, "\n"), hint) {
		t.Errorf("hints %q lack %q", e.Hint, hint)
	}
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode()
}

// A state directory made open beforehand (by us) is made 0700, its
// servers/ too, and a log 0666 is made 0600.
func TestStateDirTightened(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	s := sharedStateSession(t)
	if err := os.MkdirAll(s.ServerLogDir(), 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(s.StateDir, 0o777)
	if err := os.WriteFile(s.LogFile(), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.AuditFile(), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.MakeDirs(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{s.StateDir, s.ServerLogDir()} {
		if m := mode(t, d); m != os.ModeDir|0o700 {
			t.Errorf("%s: %v, want a 0700 directory", d, m)
		}
	}
	if m := mode(t, s.LogFile()); m != 0o600 {
		t.Errorf("session.log: %v, want 0600", m)
	}
	// A log the session opens is made 0600 too.
	r, err := OpenRotating(s.AuditFile(), 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if m := mode(t, s.AuditFile()); m != 0o600 {
		t.Errorf("audit.log: %v, want 0600", m)
	}
}

// A session's state directory that is a symlink (to a directory another
// user reads) is refused, and nothing is made where it points.
func TestStateDirSymlinkRefused(t *testing.T) {
	s := sharedStateSession(t)
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, s.StateDir); err != nil {
		t.Fatal(err)
	}
	err := s.MakeDirs()
	usageError(t, err, "unset it", s.StateDir, "is a symbolic link")
	if !strings.Contains(strings.Join(err.(*Error).Hint, " "), "MCPCTL_STATE_DIR") {
		t.Errorf("hints name no variable: %q", err.(*Error).Hint)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "servers")); err == nil {
		t.Error("servers/ was made through the symlink")
	}
}

// A log that is a symlink to another file (planted while the directory was
// open) is refused: the victim's file gets no line.
func TestStateLogSymlinkRefused(t *testing.T) {
	s := sharedStateSession(t)
	if err := s.MakeDirs(); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, log := range []string{s.AuditFile(), s.LogFile()} {
		os.Remove(log) // MakeDirs made it: planted in its place
		if err := os.Symlink(victim, log); err != nil {
			t.Fatal(err)
		}
	}
	r, err := OpenRotating(s.AuditFile(), 0, -1)
	if err == nil {
		NewAuditLog(r).Record(AuditEntry{Event: "call"})
		r.Close()
		t.Error("audit.log, a symlink, was opened")
	} else if !strings.Contains(err.Error(), s.AuditFile()+" is a symbolic link") {
		t.Errorf("error: %v", err)
	}
	// up opens session.log itself, after MakeDirs.
	usageError(t, s.MakeDirs(), "rm "+s.LogFile(), s.LogFile()+" is a symbolic link")
	if data, _ := os.ReadFile(victim); string(data) != "mine\n" {
		t.Errorf("the victim's file was written: %q", data)
	}
}

// Another user's state directory, or log in ours, is refused. Only root
// can make a file another user's.
func TestStateDirOtherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: only root can give a directory to another user (the symlink tests cover the rest)")
	}
	s := sharedStateSession(t)
	if err := os.Mkdir(s.StateDir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(s.StateDir, otherUID, otherUID); err != nil {
		t.Fatal(err)
	}
	usageError(t, s.MakeDirs(), "MCPCTL_STATE_DIR", s.StateDir, "belongs to another user (uid 65534)")

	if err := os.Chown(s.StateDir, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.LogFile(), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(s.LogFile(), otherUID, otherUID); err != nil {
		t.Fatal(err)
	}
	usageError(t, s.MakeDirs(), "rm "+s.LogFile(), s.LogFile()+" belongs to another user")
	if _, err := OpenRotating(s.LogFile(), 0, -1); err == nil || !strings.Contains(err.Error(), "belongs to another user (uid 65534)") {
		t.Errorf("another user's log was opened: %v", err)
	}
}

// A runtime directory not ours is a usage error (exit 2) naming it and the
// variable it comes from, from MakeDirs and Claim alike.
func TestRuntimeDirNotOurs(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		env  map[string]string
		rt   string
		hint string
	}{
		{map[string]string{"MCPCTL_RUNTIME_DIR": filepath.Join(dir, "a")}, filepath.Join(dir, "a"), "it comes from $MCPCTL_RUNTIME_DIR; point it at a directory of your own"},
		{map[string]string{"XDG_RUNTIME_DIR": filepath.Join(dir, "x")}, filepath.Join(dir, "x", "mcpctl"), "it comes from $XDG_RUNTIME_DIR; point $MCPCTL_RUNTIME_DIR at a directory of your own"},
	} {
		os.MkdirAll(filepath.Dir(c.rt), 0o700)
		if err := os.Symlink(target, c.rt); err != nil {
			t.Fatal(err)
		}
		c.env["MCPCTL_STATE_DIR"] = filepath.Join(dir, "state")
		s := sessionIn(t, c.env)
		usageError(t, s.MakeDirs(), c.hint, "runtime directory "+c.rt+" is a symbolic link")
		_, err := s.Claim()
		usageError(t, err, c.hint, c.rt)
	}

	// The default, in the temp directory: squatted by another user.
	t.Setenv("TMPDIR", dir)
	s := sessionIn(t, map[string]string{"MCPCTL_STATE_DIR": filepath.Join(dir, "state")})
	if err := os.Mkdir(s.Dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() != 0 {
		// Only root can give it away; a symlink stands in for it.
		os.Remove(s.Dir)
		if err := os.Symlink(target, s.Dir); err != nil {
			t.Fatal(err)
		}
		usageError(t, s.MakeDirs(), "point $MCPCTL_RUNTIME_DIR at a directory of your own", s.Dir)
		return
	}
	if err := os.Chown(s.Dir, otherUID, otherUID); err != nil {
		t.Fatal(err)
	}
	usageError(t, s.MakeDirs(), "it is the default, as neither $MCPCTL_RUNTIME_DIR nor $XDG_RUNTIME_DIR is set; point $MCPCTL_RUNTIME_DIR at a directory of your own", "runtime directory "+s.Dir+" belongs to another user (uid 65534)")
	_, err := s.Claim()
	usageError(t, err, "point $MCPCTL_RUNTIME_DIR at a directory of your own", s.Dir, "belongs to another user")
}

// A log whose directory is removed is opened again, the directory made
// again 0700, by Recheck and, every few seconds, by a write.
func TestRotatingFileDirRemoved(t *testing.T) {
	s := sharedStateSession(t)
	if err := s.MakeDirs(); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRotating(s.LogFile(), 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a, err := OpenRotating(s.AuditFile(), 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if reopened, err := r.Recheck(); reopened || err != nil {
		t.Fatalf("Recheck of a file still there: %v %v", reopened, err)
	}
	if err := os.RemoveAll(s.StateDir); err != nil {
		t.Fatal(err)
	}
	if reopened, err := r.Recheck(); !reopened || err != nil {
		t.Fatalf("Recheck after rm -rf: %v %v", reopened, err)
	}
	r.Write([]byte("after\n"))
	if data, _ := os.ReadFile(s.LogFile()); string(data) != "after\n" {
		t.Errorf("session.log holds %q", data)
	}
	if m := mode(t, s.StateDir); m != os.ModeDir|0o700 {
		t.Errorf("state dir made again %v, want 0700", m)
	}
	if m := mode(t, s.LogFile()); m != 0o600 {
		t.Errorf("session.log made again %v, want 0600", m)
	}
	// A writer that was not told looks by itself, once a while has passed.
	a.mu.Lock()
	a.checked = a.checked.Add(-recheckEvery)
	a.mu.Unlock()
	a.Write([]byte("audit\n"))
	if data, _ := os.ReadFile(s.AuditFile()); string(data) != "audit\n" {
		t.Errorf("audit.log holds %q", data)
	}
}

// A state directory removed and made again by someone else (here a symlink
// to elsewhere; as root, also a directory of another user's) does not get
// the logs: they go on to the removed file, where the refusal said they go
// (QA: they were written into the directory just refused).
func TestRotatingFileDirReplacedNotFollowed(t *testing.T) {
	cases := map[string]func(t *testing.T, dir, elsewhere string){
		"symlink": func(t *testing.T, dir, elsewhere string) {
			if err := os.Symlink(elsewhere, dir); err != nil {
				t.Fatal(err)
			}
		},
	}
	if os.Getuid() == 0 {
		cases["another user's"] = func(t *testing.T, dir, _ string) {
			if err := os.Mkdir(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, replace := range cases {
		t.Run(name, func(t *testing.T) {
			s := sharedStateSession(t)
			if err := s.MakeDirs(); err != nil {
				t.Fatal(err)
			}
			r, err := OpenRotating(s.AuditFile(), 16, -1) // rotating at 16 bytes too
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			elsewhere := t.TempDir()
			if err := os.RemoveAll(s.StateDir); err != nil {
				t.Fatal(err)
			}
			replace(t, s.StateDir, elsewhere)
			if reopened, err := r.Recheck(); reopened || err == nil {
				t.Errorf("Recheck of a directory not ours: reopened %v, %v", reopened, err)
			}
			r.mu.Lock()
			r.checked = r.checked.Add(-recheckEvery)
			r.mu.Unlock()
			for range 4 { // past the size a rotation comes at, which cannot open a new file
				if _, err := r.Write([]byte("audit line\n")); err != nil {
					t.Errorf("a write: %v (it goes to the file it has)", err)
				}
			}
			for _, dir := range []string{s.StateDir, elsewhere} {
				if entries, _ := os.ReadDir(dir); len(entries) > 0 {
					t.Errorf("%s got %v", dir, entries)
				}
			}
		})
	}
}
