package engine

import (
	"fmt"
	"os"
	"sync"
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
// rotation happens where several decided on it.
type RotatingFile struct {
	path       string
	maxBytes   int64
	keep       int
	checkEvery int64

	mu        sync.Mutex
	f         *os.File
	size      int64 // of the file, as last seen, and what this one wrote since
	unchecked int64 // bytes written since the file was last looked at
	onRotate  func(*os.File)
}

// maxCheckEvery bounds how much one writer appends between looks at the
// file: a log written by several processes at once may pass its limit by
// that much for each of them.
const maxCheckEvery = 256 << 10

// OpenRotating opens (or creates) path for appending. maxBytes <= 0 means
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

func (r *RotatingFile) open() error {
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	r.f, r.size, r.unchecked = f, st.Size(), 0
	return nil
}

// current reports whether r's file is still the one at its path (another
// process may have rotated it), and sizes it.
func (r *RotatingFile) current() bool {
	mine, err := r.f.Stat()
	if err != nil {
		return false
	}
	r.size, r.unchecked = mine.Size(), 0
	there, err := os.Stat(r.path)
	return err == nil && os.SameFile(mine, there)
}

// reopen leaves a file another process rotated for the one now at the path.
func (r *RotatingFile) reopen() error {
	r.f.Close()
	r.f = nil
	return r.openNew()
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
	if r.unchecked >= r.checkEvery || over() {
		if !r.current() {
			if err := r.reopen(); err != nil {
				return 0, fmt.Errorf("opening %s again: %w", r.path, err)
			}
		}
	}
	if over() {
		if err := r.rotate(); err != nil {
			return 0, fmt.Errorf("rotating %s: %w", r.path, err)
		}
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
		old.Close()
	}()
	if locked && !r.current() {
		r.f = nil
		return r.openNew() // another process rotated it
	}
	r.f = nil
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
