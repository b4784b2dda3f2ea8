package commands

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// A client gone from serve's stdin is seen as it goes: a pipe's writer
// closing, and a socket's peer shutting its writing down (a half-close,
// which only POLLRDHUP tells), with nothing sent; what it sent before is
// there to be read.
func TestInputHangup(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w.Close()
	hung, stop := hangup(r, pollReadHangup)
	defer stop()
	waitHung(t, "a pipe whose writer closed", hung)
	if n := unread(r); n != 0 {
		t.Errorf("unread of an empty pipe: %d", n)
	}

	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, peer := os.NewFile(uintptr(fds[0]), "ours"), os.NewFile(uintptr(fds[1]), "peer")
	defer ours.Close()
	defer peer.Close()
	peer.Write([]byte("{}\n"))
	if err := syscall.Shutdown(fds[1], syscall.SHUT_WR); err != nil {
		t.Fatal(err)
	}
	hung, stop2 := hangup(ours, pollReadHangup)
	defer stop2()
	waitHung(t, "a socket whose peer shut its writing down", hung)
	if n := unread(ours); n != 3 {
		t.Errorf("unread of a socket with a line sent: %d, want 3", n)
	}
}

func waitHung(t *testing.T, what string, hung <-chan struct{}) {
	t.Helper()
	select {
	case <-hung:
	case <-time.After(5 * time.Second):
		t.Errorf("%s: no hangup seen", what)
	}
}
