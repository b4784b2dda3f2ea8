package engine

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The go-sdk opens a stdio connection with server/discover (protocol
// 2026-07-28) and falls back to initialize when the server answers with an
// error. A server that ignores requests it does not know answers nothing,
// and the start waited its whole startupTimeout, then failed. The spec has
// the client fall back when the probe times out too: once the server has
// read the probe (its stdin pipe drained) and given no answer within
// probeSilence, or, where the pipe cannot tell, within probeBlind of the
// write, the connection answers the probe itself with an error, and the SDK
// goes on with initialize. A late answer of the server's is dropped; if it
// is a 2026-07-28 server's, the engine stands in for that server no more:
// a start the server then refused (it was initialized by the probe) is made
// again without a stand-in (a slow server behind a relay that drains the
// pipe at once). A server that took the initialize anyway (the go-sdk
// answers server/discover concurrently with what follows it) runs on in
// probeLegacyVersion until its next start.
var (
	probeSilence = 2 * time.Second // vars for tests
	probeBlind   = 5 * time.Second
)

// probeLegacyVersion is what a server whose probe went unanswered is
// spoken to in from then on: the SDK's own fallback.
const probeLegacyVersion = "2025-11-25"

// A discoverProbe is the stdio connection's watch over its server/discover.
type discoverProbe struct {
	mu       sync.Mutex
	id       jsonrpc.ID        // the probe being waited for
	answered chan struct{}     // closed when the server answers it
	dropped  jsonrpc.ID        // a probe given up on: its late answer is dropped
	standIn  *jsonrpc.Response // the answer given in its place, passed on
	gaveUp   func()            // told when a probe is given up on (p.mu held)
	late     func()            // told when the answer to it comes, a 2026-07-28 server's (p.mu not held)
	// lateModern: that late answer was a 2026-07-28 server's (a result,
	// or a modern error): the server was only slow (behind docker run -i,
	// say, which drains the pipe at once), and a modern server may refuse
	// the initialize that followed the stand-in.
	lateModern bool
}

// arm readies the wait for the answer to the probe with id, before it is
// written: the answer may come before the write returns.
func (p *discoverProbe) arm(id jsonrpc.ID) chan struct{} {
	answered := make(chan struct{})
	p.mu.Lock()
	p.id, p.answered = id, answered
	p.mu.Unlock()
	return answered
}

// watch waits for the answer to the probe with id, armed and written to
// stdin; fail delivers the answer that stands in for the server's.
func (p *discoverProbe) watch(id jsonrpc.ID, answered chan struct{}, stdin io.Writer, closed <-chan struct{}, fail func(jsonrpc.Message) bool) {
	silence, blind := probeSilence, probeBlind
	go func() {
		wait := blind
		// Poll until the server has read the probe: a server still
		// starting (npx fetching a package, say) says nothing by its
		// silence.
		for {
			n, known := unreadBytes(stdin)
			if !known {
				break
			}
			if n == 0 {
				wait = silence
				break
			}
			select {
			case <-time.After(20 * time.Millisecond):
			case <-answered:
				return
			case <-closed:
				return
			}
		}
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-answered:
			return
		case <-closed:
			return
		}
		p.mu.Lock()
		if p.answered != answered {
			p.mu.Unlock()
			return // answered meanwhile
		}
		why := fmt.Sprintf("mcpctl: no answer to server/discover within %s of the server reading it", wait)
		if wait == blind {
			why = fmt.Sprintf("mcpctl: no answer to server/discover within %s", wait)
		}
		stand := &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: why}}
		p.answered, p.dropped, p.standIn = nil, id, stand
		// Told before the lock goes: a late answer, read as soon as it
		// does, has late told after it, and late's word is the last.
		if p.gaveUp != nil {
			p.gaveUp()
		}
		p.mu.Unlock()
		fail(stand)
	}()
}

// drop reports whether msg is to be dropped: the late answer to a probe
// given up on. An answer to the probe waited for ends the wait. settled:
// nothing is left to watch for, and reads need not look any more.
func (p *discoverProbe) drop(msg jsonrpc.Message) (drop, settled bool) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return false, false
	}
	var late func()
	p.mu.Lock()
	switch {
	case p.answered != nil && resp.ID == p.id:
		close(p.answered)
		p.answered = nil
	case resp == p.standIn:
		p.standIn = nil
	case p.dropped.IsValid() && resp.ID == p.dropped:
		p.dropped = jsonrpc.ID{}
		var werr *jsonrpc.Error
		p.lateModern = resp.Error == nil || errors.As(resp.Error, &werr) && werr.Code == codeUnsupportedProtocolVersion
		drop = true
		if p.lateModern {
			late = p.late
		}
	}
	settled = p.answered == nil && p.standIn == nil && !p.dropped.IsValid()
	p.mu.Unlock()
	if late != nil {
		late()
	}
	return drop, settled
}

// codeUnsupportedProtocolVersion is 2026-07-28's UnsupportedProtocolVersionError.
const codeUnsupportedProtocolVersion = -32022

// answeredLate reports whether the server answered a probe given up on as
// a 2026-07-28 server does: its start is to be made again without a
// stand-in.
func (p *discoverProbe) answeredLate() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lateModern
}
