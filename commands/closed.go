package commands

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// errOutputClosed ends a command whose reader went away: mcpctl watch | head -1.
var errOutputClosed = errors.New("the reader of mcpctl's output went away")

// exitOutputClosed is a shell's code for a process that SIGPIPE ended:
// what mcpctl … | head reported before mcpctl stopped its servers first.
const exitOutputClosed = 128 + int(syscall.SIGPIPE)

// outputClosed reports whether err is a write to mcpctl's own stdout or
// stderr that failed because its reader went away (main asks the runtime
// for EPIPE there instead of death by SIGPIPE, so that servers are
// stopped properly), or errOutputClosed.
func outputClosed(err error) bool {
	if errors.Is(err, errOutputClosed) {
		return true
	}
	var pe *fs.PathError
	return errors.As(err, &pe) && errors.Is(pe.Err, syscall.EPIPE) &&
		(pe.Path == os.Stdout.Name() || pe.Path == os.Stderr.Name())
}

// untilOutputClosed returns ctx cancelled with errOutputClosed once the
// reader of w, a pipe or a socket, goes away, for a command that may write
// nothing for a long time (watch, logs -f): it would learn only at its
// next write, its servers running meanwhile. As tail -f does, it asks the
// kernel (poll) for the error a write would get. stop ends the watching.
func untilOutputClosed(ctx context.Context, w io.Writer) (_ context.Context, stop func()) {
	f, ok := w.(*os.File)
	if !ok {
		return ctx, func() {}
	}
	hung, stopWatching := hangup(f, 0)
	if hung == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stopped := make(chan struct{})
	go func() {
		select {
		case <-hung:
			cancel(errOutputClosed)
		case <-stopped:
		}
	}()
	return ctx, func() {
		stopWatching()
		close(stopped)
		cancel(nil)
	}
}

// hangup returns a channel closed once f, a pipe or a socket, hangs up:
// stdout's reader went away, or stdin's writer did (its last bytes may
// still wait to be read). It is nil for anything else (a file, a
// terminal), which never hangs up so. also are poll events that count as
// a hangup too (pollReadHangup: a socket's peer shut its writing down).
// stop ends the watching, and returns once it has.
func hangup(f *os.File, also int16) (hung <-chan struct{}, stop func()) {
	// Not f.Fd(), which would make a non-blocking descriptor blocking. The
	// descriptor is stdin's or stdout's, open as long as mcpctl runs.
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, func() {}
	}
	fd := -1
	rc.Control(func(u uintptr) { fd = int(u) })
	var st unix.Stat_t
	if fd < 0 || unix.Fstat(fd, &st) != nil || (st.Mode&unix.S_IFMT != unix.S_IFIFO && st.Mode&unix.S_IFMT != unix.S_IFSOCK) {
		return nil, func() {}
	}
	wakeR, wakeW, err := os.Pipe()
	if err != nil {
		return nil, func() {}
	}
	ch := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer wakeR.Close()
		// Events 0: only POLLERR and POLLHUP are reported, which a pipe
		// gets when its other end's last holder closes it, a socket when
		// its peer is gone; wakeR reports POLLHUP when stop closes wakeW.
		fds := []unix.PollFd{{Fd: int32(fd), Events: also}, {Fd: int32(wakeR.Fd())}}
		for {
			n, err := unix.Poll(fds, -1)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n == 0 || fds[1].Revents != 0 {
				return
			}
			if fds[0].Revents&(unix.POLLERR|unix.POLLHUP|also) != 0 {
				close(ch)
				return
			}
		}
	}()
	return ch, func() {
		wakeW.Close()
		<-done
	}
}

// unread is how many bytes wait to be read from f, a pipe or a socket (0
// when that cannot be told).
func unread(f *os.File) int {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), ioctlUnread) })
	return n
}

// isDevNull reports whether f is /dev/null: read, it ends at once.
func isDevNull(f *os.File) bool {
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err == nil && os.SameFile(st, null)
}
