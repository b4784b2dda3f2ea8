package engine

import (
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The stdout tail keeps lines raw, for every line that is not JSON-RPC
// over a server's life, and redacts them only when they are read: before
// they are cut to what is shown, so a secret across the cut is hidden.
func TestStdoutTailRedactsOnRead(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	var calls atomic.Int64
	tail := newRedactedTail(10, func(s string) string {
		calls.Add(1)
		return strings.ReplaceAll(s, secret, "[redacted]")
	})
	// The secret starts before the 500th byte and ends after it.
	across := strings.Repeat("a", tailShown-5) + secret + " and more"
	for i := range 30 {
		tail.addRaw([]byte(strings.Repeat("x", i) + "\xff log line"))
	}
	tail.addRaw([]byte(strings.Repeat("y", 10000))) // kept up to tailKept bytes
	tail.addRaw([]byte(across))
	if n := calls.Load(); n != 0 {
		t.Fatalf("redact was called %d times as lines were added; want 0 (only on read)", n)
	}
	if n := len(tail.raw); n != 10 {
		t.Fatalf("the tail holds %d lines; want 10", n)
	}
	for _, raw := range tail.raw {
		if len(raw) > tailKept {
			t.Fatalf("a line of %d bytes is kept; want at most %d", len(raw), tailKept)
		}
	}

	got := tail.last(3)
	if n := calls.Load(); n != 3 {
		t.Errorf("redact was called %d times reading 3 lines; want 3", n)
	}
	if len(got) != 3 {
		t.Fatalf("last(3) = %d lines", len(got))
	}
	if want := strings.Repeat("x", 29) + "? log line"; got[0] != want {
		t.Errorf("line 0 = %q; want %q (valid UTF-8)", got[0], want)
	}
	if want := strings.Repeat("y", tailShown) + "…"; got[1] != want {
		t.Errorf("a long line = %d bytes; want it cut to %d and marked", len(got[1]), tailShown)
	}
	last := got[2]
	if strings.Contains(last, secret[:5]) || strings.Contains(last, "sk-live") {
		t.Errorf("a secret across the cut shows in part: %q", last[len(last)-20:])
	}
	if want := cutShown(strings.Repeat("a", tailShown-5) + "[redacted] and more"); last != want {
		t.Errorf("the last line = ...%q; want ...%q", last[len(last)-20:], want[len(want)-20:])
	}
	if got := tail.last(50); len(got) != 10 {
		t.Errorf("last(50) = %d lines; want the 10 kept", len(got))
	}

	// The buffers are reused: the lines are copies, not the caller's.
	buf := []byte("first")
	tail.addRaw(buf)
	copy(buf, "XXXXX")
	if got := tail.last(1)[0]; got != "first" {
		t.Errorf("the tail kept the caller's buffer: %q", got)
	}
}

// The stderr tail is unchanged: it keeps what it is given, cut.
func TestStdoutTailLeavesStderrTail(t *testing.T) {
	tail := newLineTail(2)
	tail.add("one")
	tail.add(strings.Repeat("z", 600))
	tail.add("three")
	got := tail.last(5)
	if len(got) != 2 || got[0] != strings.Repeat("z", tailShown)+"…" || got[1] != "three" {
		t.Errorf("last = %q", got)
	}
}

// A start that failed has had its stdout's read end closed by the SDK:
// reading ends with "file already closed", not at EOF, and awaitStdout
// must not wait its full time for an EOF that cannot come.
func TestStdoutClosedReadEndEndsAwait(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close() // held open, as a grandchild would: no EOF
	j := newJSONLines(r, func([]byte, string) {})
	readDone := make(chan error, 1)
	go func() {
		for {
			if _, err := j.next(); err != nil {
				readDone <- err
				return
			}
		}
	}()
	w.WriteString("a banner\n")
	time.Sleep(10 * time.Millisecond) // the reader now blocks in a read
	j.Close()                         // as the SDK does when Connect fails
	select {
	case <-readDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the reader did not end after the read end was closed")
	}
	if j.eof.Load() {
		t.Error("eof is set, but the server never closed its stdout")
	}
	select {
	case <-j.done:
	default:
		t.Error("reading is not over after it failed")
	}

	done := make(chan struct{})
	close(done)
	p := &process{lines: j, done: done}
	start := time.Now()
	p.awaitStdout(250 * time.Millisecond)
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("awaitStdout waited %v after reading had ended; want no wait", d)
	}

	// Closed before anything was read: the first read fails at once.
	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	j2 := newJSONLines(r2, func([]byte, string) {})
	j2.exited = done
	r2.Close()
	if _, err := j2.next(); err == nil {
		t.Fatal("reading a closed read end did not fail")
	}
	p2 := &process{lines: j2, done: done}
	start = time.Now()
	p2.awaitStdout(250 * time.Millisecond)
	j2.Close() // its wait for the end, too, is over at once
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("awaitStdout and Close waited %v on a closed read end; want no wait", d)
	}
}
