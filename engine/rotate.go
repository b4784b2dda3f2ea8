package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Default rotation of the session's logs: at 10 MiB a log becomes
// NAME.1 (NAME.1 becomes NAME.2, …) and at most 3 old files are kept.
const (
	DefaultLogMaxBytes = 10 << 20
	DefaultLogKeep     = 3
)

// A RotatingFile is an io.Writer that appends to a file (mode 0600) and
// rotates it by size: a write that would take it past MaxBytes first
// renames it to Path.1, Path.1 to Path.2 and so on, dropping what is
// beyond Path.Keep, then starts a new file. A single write larger than
// MaxBytes still goes whole into one file. It is safe for concurrent use,
// and for several processes appending to one path (one-shot commands
// beside the session): each looks at the file itself every
// checkEvery bytes it writes (an eighth of MaxBytes, at most 256 KiB) and
// before it rotates, so that the others'
// writes count, a file another rotated is left for the new one, and one
// rotation happens where several decided on it; and every 2 s, so that a
// file removed (its directory and all) is opened again, in a directory
// made again, unless that directory became a symlink or another user's
// (the writes then go on to the file it has).
type RotatingFile struct {
	path       string
	maxBytes   int64
	keep       int
	checkEvery int64

	mu        sync.Mutex
	f         *os.File
	size      int64     // of the file, as last seen, and what this one wrote since
	unchecked int64     // bytes written since the file was last looked at
	checked   time.Time // when it was last looked at
	// What its directory was at the first open: opened again, it must
	// be so still (open).
	dirSeen  bool
	dirOwner int
	dirLink  bool
	onRotate func(*os.File)
}

// recheckEvery is how often, at most, a writer looks whether its file is
// still at its path.
const recheckEvery = 2 * time.Second

// maxCheckEvery bounds how much one writer appends between looks at the
// file: a log written by several processes at once may pass its limit by
// that much for each of them.
const maxCheckEvery = 256 << 10

// OpenRotating opens (or creates) path for appending: a file of the
// user's own, never through a symlink. maxBytes <= 0 means
// [DefaultLogMaxBytes]; keep < 0 means [DefaultLogKeep], and 0 keeps no
// old file.
func OpenRotating(path string, maxBytes int64, keep int) (*RotatingFile, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultLogMaxBytes
	}
	if keep < 0 {
		keep = DefaultLogKeep
	}
	r := &RotatingFile{path: path, maxBytes: maxBytes, keep: keep, checkEvery: min(maxCheckEvery, maxBytes/8)}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

// open opens the file at the path: never through a symlink, and only a
// file of ours (made 0600), as a log in a directory another user could
// write to must not be appended to someone else's file, or read. A
// directory removed meanwhile (rm -rf of the state directory) is made
// again, 0700.
func (r *RotatingFile) open() error {
	// Its directory, opened again, must be as it was: one removed (rm -rf
	// of the state directory) and made again by another user in a
	// directory they share, or put back as a symlink, would get the logs.
	// One that is gone is made again, 0700.
	dir := filepath.Dir(r.path)
	st, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := privateDir(dir); err != nil {
			return err
		}
		st, err = os.Lstat(dir)
	}
	if err != nil {
		return err
	}
	owner, link := -1, st.Mode()&os.ModeSymlink != 0
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		owner = int(sys.Uid)
	}
	switch {
	case !r.dirSeen:
		r.dirSeen, r.dirOwner, r.dirLink = true, owner, link
	case link && !r.dirLink:
		return &unsafeDirError{dir, "is a symbolic link now; mcpctl keeps its files only in a directory of its own"}
	case owner != r.dirOwner && owner != os.Getuid():
		return &unsafeDirError{dir, fmt.Sprintf("belongs to another user (uid %d) now, who could read or replace what mcpctl keeps there", owner)}
	}
	f, err := openLog(r.path)
	if err != nil {
		return err
	}
	fst, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	r.f, r.size, r.unchecked, r.checked = f, fst.Size(), 0, time.Now()
	return nil
}

// openLog opens path for appending (0600), refusing a symlink, what is
// not a regular file (a FIFO would block the open) and a file of another
// user's, and making one of ours 0600.
func openLog(path string) (*os.File, error) {
	if st, err := os.Lstat(path); err == nil && st.Mode().Type()&^os.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s is not a regular file; mcpctl writes its logs only to files of its own (remove it)", path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|unix.O_NOFOLLOW, 0o600)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link; mcpctl writes its logs only to files of its own (remove it)", path)
	}
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*os.File, error) {
		f.Close()
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if !st.Mode().IsRegular() {
		return fail(fmt.Errorf("%s is not a regular file; mcpctl writes its logs only to files of its own (remove it)", path))
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		return fail(fmt.Errorf("%s belongs to another user (uid %d); mcpctl writes its logs only to files of its own (remove it)", path, sys.Uid))
	}
	if st.Mode().Perm() != 0o600 {
		if err := f.Chmod(0o600); err != nil {
			return fail(err)
		}
	}
	return f, nil
}

// current reports whether r's file is still the one at its path (another
// process may have rotated it), and sizes it.
func (r *RotatingFile) current() bool {
	mine, err := r.f.Stat()
	if err != nil {
		return false
	}
	r.size, r.unchecked, r.checked = mine.Size(), 0, time.Now()
	there, err := os.Stat(r.path)
	return err == nil && os.SameFile(mine, there)
}

// reopen leaves a file another process rotated (or removed) for the one
// now at the path. Until one can be opened, the old one stays.
func (r *RotatingFile) reopen() error {
	old := r.f
	if err := r.openNew(); err != nil {
		return err
	}
	old.Close()
	return nil
}

// Write appends p, rotating first when p would take the file past its
// limit.
func (r *RotatingFile) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return 0, os.ErrClosed
	}
	over := func() bool { return r.size > 0 && r.size+int64(len(p)) > r.maxBytes }
	// Also every few seconds: a file removed (its directory and all) is
	// otherwise written to, unseen, until checkEvery bytes later. One that
	// cannot be opened again, or rotated, goes on to the file it has.
	if r.unchecked >= r.checkEvery || over() || time.Since(r.checked) >= recheckEvery {
		// One that cannot be opened again (its directory made again by
		// another user) is not: p goes to the file it has, removed or
		// not, and it looks again in a while (current set checked).
		if !r.current() {
			r.reopen()
		}
	}
	if over() && r.rotate() != nil {
		// No new file could be opened (its directory is not the user's
		// any more): p goes on to the one it has, and the next try comes
		// a maxBytes later.
		r.size = 0
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	r.unchecked += int64(n)
	return n, err
}

// rotate renames the files along, under a lock of the file being rotated,
// held until the new file is open: a process that waited on it finds the
// file rotated, and goes to the new one instead of rotating again. The
// lock is let go by hand, not by closing the file: the session's stdout
// and stderr are the same open file (OnRotate), and a close would not
// release it. A lock not had within a second (a writer gone astray) is
// done without.
func (r *RotatingFile) rotate() error {
	old := r.f
	locked := flockWithin(old, time.Second)
	defer func() {
		if locked {
			unix.Flock(int(old.Fd()), unix.LOCK_UN)
		}
		if r.f != old {
			old.Close() // a new one is open; else the old one goes on
		}
	}()
	if locked && !r.current() {
		return r.openNew() // another process rotated it
	}
	if r.keep == 0 {
		os.Remove(r.path)
	} else {
		for i := r.keep - 1; i >= 1; i-- {
			os.Rename(fmt.Sprintf("%s.%d", r.path, i), fmt.Sprintf("%s.%d", r.path, i+1))
		}
		if err := os.Rename(r.path, r.path+".1"); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return r.openNew()
}

// openNew opens the file now at the path, and tells OnRotate.
func (r *RotatingFile) openNew() error {
	if err := r.open(); err != nil {
		return err
	}
	if r.onRotate != nil {
		r.onRotate(r.f)
	}
	return nil
}

// flockWithin takes an exclusive flock of f, trying for up to wait.
func flockWithin(f *os.File, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return true
		}
		if err != unix.EWOULDBLOCK || time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Recheck looks whether r's file is still the one at its path, and if
// it is not (removed, its directory with it), opens the one there, making
// it and its directory again. It reports whether it opened another. A
// writer that writes seldom calls it now and then, so that its log is
// back soon after it was removed.
func (r *RotatingFile) Recheck() (reopened bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil || r.current() {
		return false, nil
	}
	if err := r.reopen(); err != nil {
		return false, fmt.Errorf("opening %s again: %w", r.path, err)
	}
	return true, nil
}

// Path is the file's path.
func (r *RotatingFile) Path() string { return r.path }

// OnRotate has fn called with each new file a rotation opens, before the
// write that rotated it goes there. fn must not write to r.
func (r *RotatingFile) OnRotate(fn func(*os.File)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onRotate = fn
}

// Close closes the file. Close is idempotent.
func (r *RotatingFile) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}
