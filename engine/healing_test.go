package engine

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A listener whose socket file is removed listens there again, and takes
// connections on the new one; once closed, it makes none.
func TestHealingListener(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	l0, err := listenSocket(path)
	if err != nil {
		t.Fatal(err)
	}
	heals := make(chan error, 4)
	l := newHealingListener(path, l0)
	l.onHeal = func(err error) { heals <- err }
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	// removed removes what remove does, and checks that the listener
	// makes its socket again and takes connections on it.
	removed := func(what string, remove func(string) error) {
		t.Helper()
		if err := remove(path); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-heals:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(3 * healEvery):
			t.Fatalf("the socket was not made again after removing %s", what)
		}
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		select {
		case a := <-accepted:
			a.Close()
		case <-time.After(5 * time.Second):
			t.Fatalf("the connection to the new socket was not accepted (%s removed)", what)
		}
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("the new socket: %v, %v", st, err)
		}
	}
	removed("the socket", os.Remove)
	// The directory too, as a cleaner of /tmp may take it.
	removed("its directory", func(p string) error { return os.RemoveAll(filepath.Dir(p)) })
	l.Close()
	if _, ok := <-accepted; ok {
		t.Error("Accept went on after Close")
	}
	os.Remove(path)
	time.Sleep(healEvery + 500*time.Millisecond)
	if _, err := os.Lstat(path); err == nil {
		t.Error("a closed listener made its socket again")
	}
}

// A Close that comes while the listener makes its socket again leaves no
// socket file behind (it left the new one, which no one removed).
func TestHealingListenerClosedWhileHealing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	l0, err := listenSocket(path)
	if err != nil {
		t.Fatal(err)
	}
	l := newHealingListener(path, l0)
	healed := make(chan struct{})
	l.onHeal = func(err error) {
		if err == nil {
			l.Close() // the session ends just as the socket is back
			close(healed)
		}
	}
	go l.Accept()
	os.Remove(path)
	select {
	case <-healed:
	case <-time.After(3 * healEvery):
		t.Fatal("the socket was not made again")
	}
	deadline := time.Now().Add(time.Second)
	for {
		_, err := os.Lstat(path)
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the socket made while closing is left behind")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A session whose runtime directory is removed, lock and all, holds its
// lock again with its new socket; at its end it removes its socket, but
// not a file another made at the path.
func TestSessionRelocksAndRemovesOnlyItsSocket(t *testing.T) {
	rt := filepath.Join(t.TempDir(), "rt")
	s := testSession(t, rt)
	ln, release, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	go dropEach(ln)
	if err := os.RemoveAll(rt); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * healEvery)
	for _, err := os.Stat(s.Socket); err != nil; _, err = os.Stat(s.Socket) {
		if time.Now().After(deadline) {
			t.Fatal("the socket was not made again")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !s.Running() {
		t.Error("the session does not hold its lock again")
	}
	// Another's socket at the path is left alone at the end.
	ln.Close()
	os.Remove(s.Socket)
	other, err := listenSocket(s.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	release()
	if _, err := os.Lstat(s.Socket); err != nil {
		t.Errorf("the other socket was removed: %v", err)
	}
	if s.Running() {
		t.Error("the lock is still held after release")
	}
}

// A session whose runtime directory a cleaner of /tmp took, lock and all,
// and in whose place a second session started before it made its socket
// again, hears that another holds its lock (and Daemon.Serve ends it): it
// saw a socket file at its path and took it for its own, and ran on with
// its servers, unreachable, to come back once the second ended (QA).
func TestSessionTakenOverHearsOfIt(t *testing.T) {
	rt := filepath.Join(t.TempDir(), "rt")
	s := testSession(t, rt)
	ln, release, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	defer ln.Close()
	healed := make(chan error, 4)
	ln.(*peerListener).Listener.(*healingListener).onHeal = func(err error) { healed <- err }
	go dropEach(ln)
	if err := os.RemoveAll(rt); err != nil {
		t.Fatal(err)
	}
	ln2, release2, err := testSession(t, rt).Listen()
	if err != nil {
		t.Fatalf("the second session: %v", err)
	}
	defer release2()
	defer ln2.Close()
	select {
	case err := <-healed:
		if !errors.Is(err, ErrSessionRunning) {
			t.Errorf("heard %v, want that another session holds the lock", err)
		}
	case <-time.After(3 * healEvery):
		t.Fatal("the session taken over heard nothing")
	}
}

// dropEach accepts the connections of ln, and closes each, until ln is
// closed: the listener's healing starts with its first Accept.
func dropEach(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}
