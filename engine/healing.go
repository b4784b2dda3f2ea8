package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// healEvery is how often a session looks whether its socket file is still
// there.
const healEvery = 2 * time.Second

// A healingListener listens at its socket's path again when the file is
// removed (an rm, a cleaner of /tmp): a session that cannot be reached
// could not be stopped either, short of kill. It holds the session's lock,
// so no other session listens at that path.
type healingListener struct {
	path string
	// onHeal, when set (before the first Accept), hears of each new
	// listen: err is nil when it worked.
	onHeal func(err error)
	// relock takes the session's lock again if its file went with the
	// directory: another session could otherwise take a new one.
	relock func() error

	once   sync.Once
	stop   chan struct{}
	mu     sync.Mutex
	cur    net.Listener
	file   os.FileInfo // the socket file cur listens at
	closed bool
}

func newHealingListener(path string, l net.Listener) *healingListener {
	st, _ := os.Lstat(path)
	return &healingListener{path: path, cur: l, file: st, stop: make(chan struct{})}
}

// removeOwnSocket removes the socket file if it is still the one this
// listener made. Only an open listener can tell: its socket holds the
// file's inode, which, once the socket is closed and the file removed, a
// file made next at the path may be given.
func (l *healingListener) removeOwnSocket() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.removeIfOwn()
	}
}

// removeIfOwn is removeOwnSocket with l.mu held and the listener open.
func (l *healingListener) removeIfOwn() {
	if st, err := os.Lstat(l.path); err == nil && l.file != nil && os.SameFile(st, l.file) {
		os.Remove(l.path)
	}
}

func (l *healingListener) Accept() (net.Conn, error) {
	l.once.Do(func() { go l.watch() })
	for {
		l.mu.Lock()
		cur := l.cur
		l.mu.Unlock()
		c, err := cur.Accept()
		if err == nil {
			return c, nil
		}
		l.mu.Lock()
		swapped := l.cur != cur && !l.closed
		l.mu.Unlock()
		if !swapped {
			return nil, err
		}
	}
}

// Close stops listening and removes the socket file, if it is still the
// one this listener made.
func (l *healingListener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.removeIfOwn()
		l.closed = true
		close(l.stop)
	}
	return l.cur.Close()
}

func (l *healingListener) Addr() net.Addr {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur.Addr()
}

func (l *healingListener) watch() {
	tick := time.NewTicker(healEvery)
	defer tick.Stop()
	failing := false // said once, until it works
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		if !l.lost() {
			continue
		}
		old, done, err := l.listenAgain()
		if done {
			if err != nil && l.onHeal != nil {
				l.onHeal(err)
			}
			return
		}
		if l.onHeal != nil && (err == nil || !failing) {
			l.onHeal(err)
		}
		failing = err != nil
		if old != nil {
			old.Close() // its Accept returns, and takes the new one
		}
	}
}

// lost says whether the socket file is gone, or is another's: a file made
// at the path since (a second session started in a runtime directory made
// again after a cleaner of /tmp took it, lock and all), which listenAgain
// then finds holds the lock.
func (l *healingListener) lost() bool {
	st, err := os.Lstat(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return err == nil && l.file != nil && !os.SameFile(st, l.file)
}

// listenAgain makes the socket again and takes it for the current one,
// returning the one it replaces. It holds l.mu throughout, so a Close
// comes before it (and it makes nothing) or after it (and removes the new
// socket's file as its own). done says the listener is to watch no more:
// it is closed, or another session holds the lock (err says so).
func (l *healingListener) listenAgain() (old net.Listener, done bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, true, nil
	}
	// A cleaner of /tmp may have taken the directory too, lock and all.
	err = privateDir(filepath.Dir(l.path))
	if err == nil && l.relock != nil {
		if err = l.relock(); errors.Is(err, ErrSessionRunning) {
			// Another session took the lock: the path is its own now.
			return nil, true, fmt.Errorf("another session holds its lock now: %w", err)
		}
	}
	if err != nil {
		return nil, false, err
	}
	nl, err := listenSocket(l.path)
	if err != nil {
		return nil, false, err
	}
	old = l.cur
	l.cur = nl
	l.file, _ = os.Lstat(l.path)
	return old, false, nil
}

// listenSocket listens at path, a unix socket only its owner may use.
func listenSocket(path string) (net.Listener, error) {
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	// The session removes its socket itself, at its very end.
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}
