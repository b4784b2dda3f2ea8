package engine

import (
	"fmt"
	"os"
	"sync"
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
// MaxBytes still goes whole into one file. It is safe for concurrent use.
type RotatingFile struct {
	path     string
	maxBytes int64
	keep     int

	mu       sync.Mutex
	f        *os.File
	size     int64
	onRotate func(*os.File)
}

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
	r := &RotatingFile{path: path, maxBytes: maxBytes, keep: keep}
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
	r.f, r.size = f, st.Size()
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
	if r.size > 0 && r.size+int64(len(p)) > r.maxBytes {
		if err := r.rotate(); err != nil {
			return 0, fmt.Errorf("rotating %s: %w", r.path, err)
		}
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	return n, err
}

func (r *RotatingFile) rotate() error {
	r.f.Close()
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
	if err := r.open(); err != nil {
		return err
	}
	if r.onRotate != nil {
		r.onRotate(r.f)
	}
	return nil
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
