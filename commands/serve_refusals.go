package commands

import (
	"net/http"
	"sync"
	"time"
)

// refusals tells on stderr of requests refused for want of the token: a
// client set up wrong, or someone trying. One line per window (10s) at
// most, with the count since the last line; those of a window that had its
// line already are told at its end, so a burst is told in full.
type refusals struct {
	note    func(format string, args ...any)
	every   time.Duration
	mu      sync.Mutex
	last    time.Time   // when the last line was written
	n       int         // refused since
	from    string      // the last one's client
	pending *time.Timer // the line due at the end of the window
}

func newRefusals(note func(format string, args ...any)) *refusals {
	return &refusals{note: note, every: 10 * time.Second}
}

func (rf *refusals) add(r *http.Request) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	rf.n++
	rf.from = r.RemoteAddr
	if ua := r.Header.Get("User-Agent"); ua != "" {
		rf.from += " (" + ua + ")"
	}
	switch wait := rf.every - time.Since(rf.last); {
	case wait <= 0:
		rf.tellLocked()
	case rf.pending == nil:
		rf.pending = time.AfterFunc(wait, rf.flush)
	}
}

// flush tells what is left untold (at a window's end, and when serve ends).
func (rf *refusals) flush() {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if rf.pending != nil {
		rf.pending.Stop()
		rf.pending = nil
	}
	if rf.n > 0 {
		rf.tellLocked()
	}
}

func (rf *refusals) tellLocked() {
	rf.note("warning: refused %d request(s) without the right token, the last from %s", rf.n, rf.from)
	rf.n, rf.last = 0, time.Now()
}
