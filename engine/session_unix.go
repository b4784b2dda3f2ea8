//go:build unix

package engine

import (
	"fmt"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive, non-blocking lock that lasts until the file
// is closed or the process dies, so a crashed session never blocks the next.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if err == syscall.EWOULDBLOCK {
			return nil, ErrSessionRunning
		}
		return nil, err
	}
	return f, nil
}

// holdsLock checks that f, handed over by the process that claimed the
// session, is the lock file at path and holds its lock: flock again on the
// same open file succeeds only then.
func holdsLock(f *os.File, path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("the session's lock %s: %w", path, err)
	}
	if held, err := f.Stat(); err != nil || !os.SameFile(st, held) {
		return fmt.Errorf("the file handed over as the session's lock is not %s", path)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if err == syscall.EWOULDBLOCK {
			return ErrSessionRunning
		}
		return err
	}
	return nil
}

// A peerListener accepts only connections from processes of our own user.
// The socket's mode already says so; this holds even if the mode is changed.
// onRefuse, when set (before the first Accept), hears of each refusal.
type peerListener struct {
	net.Listener
	onRefuse func(peerCred, error)
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		owner := os.Getuid()
		cred := peerCredOf(c)
		if err := checkPeer(cred, owner); err != nil {
			if l.onRefuse != nil {
				l.onRefuse(cred, err)
			}
			go refuse(c, err, owner)
			continue
		}
		return c, nil
	}
}
