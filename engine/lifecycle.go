package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Restart backoff: the first restart waits restartBackoff, each next one
// twice as long, up to maxBackoff. A server that ran steadily for
// steadyRun before it died starts over with a full set of restarts.
const (
	restartBackoff = time.Second
	maxBackoff     = 30 * time.Second
	steadyRun      = time.Minute
	// retryTries is how often an idempotent request is tried in all.
	retryTries = 3
)

// lifecycle is what a server's supervision keeps beside its state: how
// it is used, how it fails, and when it restarts. Guarded by server.mu.
type lifecycle struct {
	inflight  int         // requests under way
	lastUsed  time.Time   // when the last request ended
	idleTimer *time.Timer // stops the server once idleTimeout passes unused
	// idled: stopped because it was unused (idleTimeout or transient);
	// the next use starts it again.
	idled bool
	// held: stopped by hand (mcpctl stop); only mcpctl start or restart
	// bring it back.
	held bool
	// stopDone is closed when the stop under way is over.
	stopDone chan struct{}
	// byHandRestart is closed when the Restart under way, which stops the
	// server and starts it again, is over (or the start of a reload that
	// added or changed it): a request meanwhile waits for it, as for a
	// server starting.
	byHandRestart chan struct{}

	failures int // consecutive failed requests
	// lastSuccess and lastFailure are when a request (a health check
	// ping too) last succeeded and last counted as a failure, over the
	// server's every run.
	lastSuccess, lastFailure time.Time
	// streamLost: a remote server's event stream broke and is not open
	// again yet (eventStream).
	streamLost bool

	restarts     int         // restarts since it last ran steadily
	restartTimer *time.Timer // the restart waiting for its backoff
	restartAt    time.Time
	restartDone  chan struct{} // closed when that restart attempt is over
	gaveUp       bool          // maxRestarts used up: the circuit is open
	// retired: a reload removed or replaced the server; it never starts
	// again.
	retired bool
	// bgStop is closed when a stop begun in the background (after too
	// many failures) is over; stops by hand, Close and the next start wait
	// for it.
	bgStop chan struct{}
}

// backoff is the wait before restart n (0-based).
func backoff(n int) time.Duration {
	d := restartBackoff
	for i := 0; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// startsOnUse reports whether a request to the stopped server starts it:
// lazy and transient servers, and servers stopped for being idle. A server
// stopped by hand, or one started only by hand, does not.
func (s *server) startsOnUseLocked() bool {
	if s.lc.held || s.cfg().Disabled {
		return false
	}
	switch s.cfg().Activation {
	case "lazy", "transient":
		return true
	}
	return s.lc.idled
}

// successor is the server a reload put in s's place, a retired one;
// nil when there is none (a reload removed it).
func (s *server) successor() *server {
	next, err := s.e.lookup(s.cfg().Name)
	if err != nil || next == s {
		return nil
	}
	return next
}

// acquire returns a handle for a request and counts it as under way;
// the caller must release it. It starts a server that starts on use, waits
// for one that is starting, stopping or about to restart, and otherwise
// says why the server cannot take requests.
func (s *server) acquire(ctx context.Context) (*handle, error) { return s.acquireBy(ctx, 0) }

// acquireBy is acquire whose waits for a start it sets off, or finds
// under way, end after startWithin (0: no bound; see acquireWithin). The
// other waits (a restart due after a crash, a stop, a restart by hand)
// are not bounded by it.
func (s *server) acquireBy(ctx context.Context, startWithin time.Duration) (*handle, error) {
	// A transient server may stop between two looks; a few rounds settle it.
	for range 5 {
		s.mu.Lock()
		if s.lc.retired && s.state == StateStopped {
			s.mu.Unlock()
			if next := s.successor(); next != nil {
				// A reload replaced it since the request found it: the
				// request goes to the server that took its place (which
				// the reload may still be starting), as one made now
				// would.
				return next.acquireBy(ctx, startWithin)
			}
			s.mu.Lock()
		}
		switch s.state {
		case StateReady, StateDegraded:
			s.lc.inflight++
			if s.lc.idleTimer != nil {
				s.lc.idleTimer.Stop()
				s.lc.idleTimer = nil
			}
			h := &handle{s: s, cs: s.cs, conn: s.conn, life: s.life, proc: s.proc, snap: s.snap}
			s.mu.Unlock()
			return h, nil
		case StateStarting:
			s.mu.Unlock()
			// Waited for, not tied to this request: should it end
			// meanwhile, a start begun again goes on too.
			if err := boundedStartWait(ctx, startWithin, s.awaitStart); err != nil {
				return nil, err
			}
		case StateStopping:
			ch := s.lc.stopDone
			s.mu.Unlock()
			if err := waitFor(ctx, ch); err != nil {
				return nil, err
			}
		case StateStopped:
			if ch := s.lc.byHandRestart; ch != nil {
				s.mu.Unlock()
				if err := waitFor(ctx, ch); err != nil {
					return nil, err
				}
				continue
			}
			if !s.startsOnUseLocked() {
				err := s.unavailableLocked()
				s.mu.Unlock()
				return nil, err
			}
			s.mu.Unlock()
			if err := boundedStartWait(ctx, startWithin, s.startOnUse); err != nil {
				return nil, err
			}
		case StateUnavailable:
			if ch := s.lc.byHandRestart; ch != nil {
				// A start under way will bring it back (up, a restart,
				// a reload): its old failure is not the answer.
				s.mu.Unlock()
				if err := waitFor(ctx, ch); err != nil {
					return nil, err
				}
				continue
			}
			ch := s.lc.restartDone
			if ch == nil && (s.transientRetriesLocked() || s.configFailedLocked() || s.lazyStartFailedLocked()) {
				// Started for each request: one that crashed, or whose
				// start failed, is no reason to refuse the next. Nor is
				// a start refused before anything ran (a cwd or command
				// not there): it may be there now, and to look costs
				// nothing.
				s.mu.Unlock()
				if err := boundedStartWait(ctx, startWithin, s.startOnUse); err != nil {
					return nil, err
				}
				continue
			}
			// Wait for a restart that is due within a request's time.
			if ch == nil || time.Until(s.lc.restartAt) > s.requestTimeout(0) {
				err := s.unavailableLocked()
				s.mu.Unlock()
				return nil, err
			}
			s.mu.Unlock()
			if err := waitFor(ctx, ch); err != nil {
				return nil, err
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return nil, s.unavailableLocked()
}

// boundedStartWait runs wait, a wait for a start, for at most startWithin
// (0: no bound); the error then says the bound ran out (errStartWaitOver).
// Outside acquire's loop: a ready server's acquire makes no closure.
func boundedStartWait(ctx context.Context, startWithin time.Duration, wait func(context.Context) error) error {
	if startWithin <= 0 {
		return wait(ctx)
	}
	sctx, cancel := context.WithTimeoutCause(ctx, startWithin, errStartWaitOver)
	defer cancel()
	err := wait(sctx)
	if err != nil && ctx.Err() == nil && context.Cause(sctx) == errStartWaitOver && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", errStartWaitOver, err)
	}
	return err
}

// startOnUse starts s, and what it depends on, for a request; the start
// goes on if the request stops waiting.
func (s *server) startOnUse(ctx context.Context) error {
	if err := s.startDependencies(ctx); err != nil {
		return err
	}
	return s.startShared(ctx)
}

// awaitStart waits for the start under way, not tied to the request: a
// start begun again meanwhile goes on if the request stops waiting.
func (s *server) awaitStart(ctx context.Context) error { return outlive(ctx, s.start, nil) }

// acquireWithin is acquire for a request with a timeout of its own
// (timeoutMs; 0: none): waiting for the server's start, which the request
// may have set off (a server that starts on use), is bounded by it too,
// and the request then gets its timeout afresh, as without a session. The
// start goes on: the next request finds the server up.
func (s *server) acquireWithin(ctx context.Context, timeoutMs int64) (*handle, error) {
	d := time.Duration(max(timeoutMs, 0)) * time.Millisecond
	h, err := s.acquireBy(ctx, d)
	if errors.Is(err, errStartWaitOver) {
		name := s.cfg().Name
		who := "server " + name
		if len(s.cfg().DependsOn) > 0 {
			who += ", or a server it depends on,"
		}
		return nil, errorf(KindTimeout, name, "%s did not finish starting within %s, the request's timeout; its start goes on", who, d).
			hint("give the request more time, or start the server first").wrap(err)
	}
	return h, err
}

// errStartWaitOver ends a request's wait for its server's start.
var errStartWaitOver = errors.New("the request's timeout ran out while its server started")

// startShared starts the server on use. The start is shared by every
// request waiting for it, so a caller giving up must not cut it short for
// the others (the startup timeout bounds it); the caller itself returns at
// the end of its context, and a server that then starts for nobody is
// left to its idle policy.
func (s *server) startShared(ctx context.Context) error {
	return outlive(ctx, s.start, func(err error) {
		if err == nil {
			s.mu.Lock()
			s.armIdleLocked()
			s.mu.Unlock()
		}
	})
}

// outlive runs fn with ctx's values but not its end, and returns fn's
// error, or ctx's when ctx ends first: what fn does (a start) must not be
// cut short by a caller that gives up. fn then goes on, and its error goes
// to abandoned, when that is not nil.
func outlive(ctx context.Context, fn func(context.Context) error, abandoned func(error)) error {
	done := make(chan error, 1)
	go func() { done <- fn(context.WithoutCancel(ctx)) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		if abandoned != nil {
			go func() { abandoned(<-done) }()
		}
		return ctx.Err()
	}
}

// startDependencies brings up the servers that s, started on use, depends
// on (dependsOn), each as a request to it would, before s starts: as
// Engine.Start orders the servers it starts.
func (s *server) startDependencies(ctx context.Context) error {
	for _, name := range s.cfg().DependsOn {
		d, err := s.e.lookup(name)
		if err != nil {
			return err
		}
		if err := s.startDependency(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// startDependency makes sure dependency d runs: it is, or it starts on use.
func (s *server) startDependency(ctx context.Context, d *server) error {
	name := d.cfg().Name
	h, err := d.acquire(ctx)
	if err != nil && ctx.Err() != nil {
		// The caller gave up; the dependency's start goes on.
		return deadlineError(ctx.Err(), name, fmt.Sprintf("the start of server %s (which %s depends on)", name, s.cfg().Name))
	}
	if err != nil {
		return errorf(KindUnavailable, s.cfg().Name, "server %s depends on %s, which is not running: %s", s.cfg().Name, name, asError(err).Message).
			hint("start it with: mcpctl start %s", name).wrap(err)
	}
	h.release()
	return nil
}

func waitFor(ctx context.Context, ch <-chan struct{}) error {
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// release ends a request begun by acquire: a transient server stops once
// nothing uses it, and a server with an idleTimeout is stopped when that
// passes unused.
func (h *handle) release() {
	s := h.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lc.inflight--
	s.lc.lastUsed = time.Now()
	s.armIdleLocked()
}

// armIdleLocked schedules the stop of an unused server.
func (s *server) armIdleLocked() {
	if s.inUseLocked() || (s.state != StateReady && s.state != StateDegraded) {
		return
	}
	if s.proc.exited() {
		// It died under its request, and its watcher is about to say
		// so (unavailable, with why): a stop for want of use now would
		// make it "stopped", its error lost.
		return
	}
	idle := s.cfg().IdleTimeout
	if s.cfg().Activation == "transient" {
		idle = 0
	} else if idle <= 0 {
		return
	}
	if s.lc.idleTimer != nil {
		s.lc.idleTimer.Stop()
	}
	s.lc.idleTimer = time.AfterFunc(idle, func() { s.stopIdle(idle) })
}

// inUseLocked reports whether a request runs on the server, or a watch
// follows one of its resources: a subscription holds the server it was
// made on, and one a reload handed over from the server it replaced (or
// removed, for one added back) holds this one so.
func (s *server) inUseLocked() bool { return s.lc.inflight > 0 || s.subs.held() }

// stopIdle stops the server when nothing used it for idle, keeping what it
// offers: the next use starts it again.
func (s *server) stopIdle(idle time.Duration) {
	why := fmt.Sprintf("unused for %s (idleTimeout)", idle)
	if s.cfg().Activation == "transient" {
		why = "its request is done (activation transient)"
	}
	s.stopWhen(func() bool {
		if s.inUseLocked() || time.Since(s.lc.lastUsed) < idle {
			return false
		}
		s.lc.idled = true
		return true
	}, why)
}

// noteOutcome counts a request's outcome toward the server's health: a
// success makes a degraded server ready again; a failure that says the
// server is in trouble (a timeout, an answer it could not make) degrades
// it, and failureThreshold of them in a row make it unavailable.
func (h *handle) noteOutcome(ctx context.Context, err error) {
	s := h.s
	if ctx.Err() != nil || (err != nil && !countsAsFailure(err)) {
		return
	}
	if err != nil && ctx.Value(retryKey{}) != nil {
		return // the request's first try counted already
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cs != h.cs || (s.state != StateReady && s.state != StateDegraded) {
		return // a request to an earlier run of the server
	}
	if err == nil {
		s.lc.failures, s.lc.lastSuccess = 0, time.Now()
		if s.state == StateDegraded {
			s.setState(StateReady, nil)
		}
		return
	}
	s.lc.failures++
	s.lc.lastFailure = time.Now()
	ee := serverError(s, err)
	threshold := s.cfg().FailureThreshold
	if threshold <= 0 {
		threshold = config.DefaultFailureThreshold
	}
	if s.lc.failures < threshold {
		// Each failure is an event of its own: one more is a step nearer
		// the stop, which the note counts.
		s.setStateNote(StateDegraded, ee, fmt.Sprintf("failures in a row: %d of %d", s.lc.failures, threshold))
		return
	}
	name := s.cfg().Name
	e := errorf(KindUnavailable, name, "server %s failed %d requests in a row and was stopped; the last: %s", name, s.lc.failures, ee.Message)
	e.Stderr = ee.Stderr
	e.hint("start it again with: mcpctl restart %s", name)
	proc, cs, conn := s.proc, s.cs, s.conn
	proc.markStopped()
	s.proc, s.cs, s.conn = nil, nil, nil
	s.endLife()
	s.failLocked(e)
	stopped := make(chan struct{})
	s.lc.bgStop = stopped
	go func() {
		defer close(stopped)
		s.shutdown(proc, cs, conn, 0)
	}()
}

// countsAsFailure: a timeout, a remote server that cannot be reached, or
// an answer that shows the server broken (a parse or invalid-request
// error, or one that is not JSON-RPC at all). Errors about the request
// itself (unknown method, bad params, a resource not found) show a working
// server, as does an internal error: the TypeScript SDK answers every
// exception a handler throws so (an unknown resource URI, a prompt's bad
// argument), and three typos would stop the server for every caller. An
// answer too long to read, which mcpctl answers itself as an internal
// error, counts: the server broke the bound, not the request.
func countsAsFailure(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Kind {
	case KindTimeout:
		return true
	case KindUnavailable:
		return e.unreachable
	case KindProtocol:
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) {
			return true
		}
		switch werr.Code {
		case jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest:
			return true
		case jsonrpc.CodeInternalError:
			return string(werr.Data) == strconv.Quote(droppedMarker)
		}
	}
	return false
}

// transientRetriesLocked reports whether a transient server that is
// unavailable is started again by the next request: unless it is stopped
// by hand, or its restart policy gave up on it.
// configFailedLocked reports a server whose last start was refused for
// what the config names and is not there (its cwd, its command), not
// stopped by hand.
func (s *server) configFailedLocked() bool {
	return s.lastErr != nil && s.lastErr.Kind == KindConfig && !s.lc.held
}

func (s *server) transientRetriesLocked() bool {
	return s.cfg().Activation == "transient" && !s.lc.held && !s.lc.gaveUp && s.lc.restartDone == nil
}

// lazyStartFailedLocked reports a lazy server whose last start on use
// failed (a remote one not there yet, or gone while it idled): it starts
// on use, so the next request tries again, as for a transient one, instead
// of being refused until a restart by hand. One that crashed while it ran
// is its restart policy's.
func (s *server) lazyStartFailedLocked() bool {
	return s.cfg().Activation == "lazy" && !s.lc.held && !s.lc.gaveUp && s.lc.restartDone == nil &&
		!s.startFailedAt.IsZero() && !s.since.After(s.startFailedAt)
}

// restartsByItself reports whether a server that failed is restarted by
// its policy: on-failure, with restarts left (not given up, and not a
// maxRestarts of 0).
func (s *server) restartsByItself() bool {
	c := s.cfg()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case c.Restart != "on-failure" || c.MaxRestarts == 0 || s.lc.gaveUp || s.lc.held:
		return false
	case s.lc.restartDone != nil:
		return true // one is due
	}
	// The failure may not be handled yet (failLocked): it restarts the
	// server if restarts are left, or if the run was steady, which gives
	// them back.
	return s.lc.restarts < c.MaxRestarts || !s.readyAt.IsZero() && time.Since(s.readyAt) > steadyRun
}

// failLocked marks a server that failed on its own (it died, or failed
// too many requests) unavailable and, with restart on-failure, schedules
// its restart after a backoff, until maxRestarts are used up.
func (s *server) failLocked(e *Error) {
	c := s.cfg()
	if c.Restart != "on-failure" || s.lc.held || s.lc.retired || s.e.closed.Load() {
		s.setState(StateUnavailable, e)
		return
	}
	if !s.readyAt.IsZero() && time.Since(s.readyAt) > steadyRun {
		s.lc.restarts = 0
	}
	// Once per run: a restart that fails to start must not reset it again.
	s.readyAt = time.Time{}
	if s.lc.restarts >= c.MaxRestarts {
		s.lc.gaveUp = true
		// A copy: e may be a failed start's error, told already, which
		// setState would take for no news.
		e = e.clone()
		switch s.lc.restarts {
		case 0:
			e.Message += " (maxRestarts 0: not restarted)"
		case 1:
			e.Message += " (gave up after 1 restart)"
		default:
			e.Message += fmt.Sprintf(" (gave up after %d restarts)", s.lc.restarts)
		}
		e.Hint = []string{fmt.Sprintf("start it again with: mcpctl restart %s", c.Name)}
		s.setState(StateUnavailable, e)
		return
	}
	delay := backoff(s.lc.restarts)
	s.lc.restarts++
	s.setStateNote(StateUnavailable, e, fmt.Sprintf("restart %d of %d in %s", s.lc.restarts, c.MaxRestarts, delay))
	s.scheduleRestartLocked(delay)
}

// scheduleRestartLocked starts the server again after delay. Requests that
// come meanwhile wait for it (see acquire).
func (s *server) scheduleRestartLocked(delay time.Duration) {
	s.cancelRestartLocked()
	s.lc.restartAt = time.Now().Add(delay)
	done := make(chan struct{})
	s.lc.restartDone = done
	s.lc.restartTimer = time.AfterFunc(delay, func() { s.restartNow(done) })
}

// restartNow is a restart the policy scheduled.
func (s *server) restartNow(done chan struct{}) {
	s.mu.Lock()
	if s.lc.restartDone != done {
		s.mu.Unlock()
		return // cancelled: stopped, or started by hand meanwhile
	}
	s.lc.restartTimer = nil
	s.mu.Unlock()
	err := s.start(context.Background())
	s.mu.Lock()
	if s.lc.restartDone == done {
		// Not cancelled meanwhile (which closes it): wake the waiters,
		// and go on with the policy if the start failed.
		s.lc.restartDone = nil
		close(done)
		var ee *Error
		if err != nil && s.state == StateUnavailable && errors.As(err, &ee) {
			s.failLocked(ee)
		}
	}
	s.mu.Unlock()
}

// cancelRestartLocked drops a scheduled restart, waking whoever waits on it.
func (s *server) cancelRestartLocked() {
	if s.lc.restartTimer != nil {
		s.lc.restartTimer.Stop()
		s.lc.restartTimer = nil
	}
	if s.lc.restartDone != nil {
		close(s.lc.restartDone)
		s.lc.restartDone = nil
	}
}

// willRecover reports whether a request that failed because the server is
// down may succeed when tried again: a restart is coming.
func (s *server) willRecover() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lc.byHandRestart != nil {
		return true // mcpctl restart: the next try waits for it
	}
	switch s.state {
	case StateStarting, StateReady, StateDegraded:
		return true
	case StateUnavailable:
		return s.lc.restartDone != nil
	}
	return false
}

// healthCheck pings the server every interval while this run of it lasts;
// an unanswered ping counts as a failed request.
func (s *server) healthCheck(h *handle, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-h.life.Done():
			return
		case <-t.C:
		}
		h.do(context.Background(), "ping", "a health check ping", interval, func(ctx context.Context) (any, error) {
			return nil, h.cs.Ping(ctx, nil)
		})
	}
}

// retrying runs try up to *tries times (which a try may change: a call
// learns only from the tool whether it may be retried) while its failure is
// transient (a timeout, or a server that a restart will bring back),
// waiting 1s, then twice as long each time, at most 30s.
//
// A request's tries count as one failure toward the server's
// failureThreshold: once a try's failure counted, the tries after it are
// marked (retryKey) and theirs are not counted again, so that one command
// cannot stop a server by itself. A try whose failure did not count (it
// never reached the server, or the server died under it) leaves the next
// one to count.
func (e *Engine) retrying(ctx context.Context, tries *int, s *server, try func(context.Context) error) error {
	delay := restartBackoff
	again := context.WithValue(ctx, retryKey{}, true)
	counted := false
	tryOnce := func() error {
		tctx := ctx
		if counted {
			tctx = again
		}
		err := try(tctx)
		counted = counted || countsAsFailure(err)
		return err
	}
	for n := 1; ; n++ {
		err := tryOnce()
		var ee *Error
		if errors.As(err, &ee) && ee.unsent && n == 1 {
			// It never reached the server: sending it again once is safe,
			// and at once, as the connection is renewed already.
			e.log.Info("sending a request again that the server did not take", "server", s.cfg().Name, "error", err.Error())
			if err = tryOnce(); err == nil {
				return nil
			}
		}
		if err == nil || n >= *tries || ctx.Err() != nil || !e.transient(err, s) {
			if err != nil && n > 1 {
				var ee *Error
				if errors.As(err, &ee) {
					c := *ee
					c.Message += fmt.Sprintf(" (tried %d times)", n)
					// Retried already: "add --retry" is no advice, and the
					// server may have given up meanwhile.
					c.Hint = nil
					for _, h := range ee.Hint {
						if strings.Contains(h, "restarts by itself") {
							if !s.restartsByItself() {
								h = fmt.Sprintf("start it again with: mcpctl restart %s", s.cfg().Name)
							}
							h = strings.TrimSuffix(h, ", or add --retry 1")
						}
						c.Hint = append(c.Hint, h)
					}
					return &c
				}
			}
			return err
		}
		e.log.Info("retrying a request", "server", s.cfg().Name, "try", n+1, "of", *tries, "in", delay, "error", err.Error())
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return err
		}
		delay = min(2*delay, maxBackoff)
	}
}

// retryKey marks the context of a request's try after its first.
type retryKey struct{}

// readTries is how often a prompt or a read is tried: once when
// its caller set a timeout, which bounds the request rather than each try
// of it; else retryTries.
func readTries(timeoutMs int64) *int {
	n := retryTries
	if timeoutMs > 0 {
		n = 1
	}
	return &n
}

func (e *Engine) transient(err error, s *server) bool {
	var ee *Error
	if !errors.As(err, &ee) {
		return false
	}
	switch ee.Kind {
	case KindTimeout:
		return true
	case KindUnavailable:
		return s.willRecover()
	}
	return false
}

// transientStart: a start that failed in a way a new start may not.
func transientStart(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.transient
}

// errTimedOut is the cause of a request's context when its deadline passed.
var errTimedOut = errors.New("request timed out")

// A deadline ends a request that hears nothing for timeout. Progress
// extends it by timeout again, up to progressCap times the timeout in all.
type deadline struct {
	// byCaller: the timeout is the caller's (--timeout), not the config's.
	byCaller bool

	mu      sync.Mutex
	timer   *time.Timer
	timeout time.Duration
	start   time.Time
	cap     time.Time
	extends int
	capped  bool      // the countdown running was cut short by cap
	holds   int       // callers answering the server's questions
	running bool      // the timer ran when the first hold began
	heldAt  time.Time // when the first hold began
}

// progressCap bounds how far progress can push a request's deadline, as a
// multiple of its timeout: a server that reports progress forever does not
// hold a request forever.
const progressCap = 10

func newDeadline(timeout time.Duration, fire func()) *deadline {
	now := time.Now()
	return &deadline{timer: time.AfterFunc(timeout, fire), timeout: timeout, start: now, cap: now.Add(progressCap * timeout)}
}

// extend restarts the countdown, unless it has run out or reached the cap.
func (d *deadline) extend() {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	next := min(d.timeout, time.Until(d.cap))
	if next > 0 && d.timer.Stop() {
		d.timer.Reset(next)
		d.extends++
		d.capped = next < d.timeout
	}
}

// hold stops the countdown until resume, which starts it afresh: a
// request waits on its caller (a person answering a form), not on the
// server. Holds nest.
func (d *deadline) hold() (resume func()) {
	if d == nil {
		return func() {}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.holds++
	if d.holds == 1 {
		d.running = d.timer.Stop()
		d.heldAt = time.Now()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			if d.holds--; d.holds == 0 && d.running {
				d.cap = d.cap.Add(time.Since(d.heldAt))
				next := min(d.timeout, time.Until(d.cap))
				d.timer.Reset(next)
				d.capped = next < d.timeout
			}
		})
	}
}

func (d *deadline) extended() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.extends > 0
}

// reachedCap says whether the deadline ended at its cap, progress or not,
// and how long the request had run.
func (d *deadline) reachedCap() (bool, time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.capped, time.Since(d.start)
}

func (d *deadline) stop() { d.timer.Stop() }

// autoStarts reports whether the server starts with the engine: not
// disabled, and activation eager.
func (s *server) autoStarts() bool {
	c := s.cfg()
	return !c.Disabled && (c.Activation == "" || c.Activation == "eager")
}

// running reports whether the server is up or on its way up.
func (s *server) running() bool {
	switch s.currentState() {
	case StateStarting, StateReady, StateDegraded:
		return true
	}
	return false
}

func (s *server) isHeld() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lc.held
}

// Stop stops the named servers by hand: they stay stopped, whatever their
// activation and restart policy, until [Engine.Start] or [Engine.Restart]
// names them or a server that depends on them (which it starts them with).
// Servers that depend on them keep running, and fail their requests that
// need them.
func (e *Engine) Stop(names ...string) error {
	if err := e.open(); err != nil {
		return err
	}
	if len(names) == 0 {
		// Not every server: Close stops them all.
		return errorf(KindUsage, "", "name the servers to stop").hint("to stop every server: Engine.Close")
	}
	var servers []*server
	for _, n := range names {
		s, err := e.lookup(n)
		if err != nil {
			return err
		}
		if s.cfg().Disabled {
			return s.disabledError()
		}
		servers = append(servers, s)
	}
	for _, s := range servers {
		s.mu.Lock()
		s.lc.held = true
		s.mu.Unlock()
		// Stopped by hand, it answers nothing, not even from the cache.
		e.cache.drop(func(ce *cacheEntry) bool { return ce.server == s.cfg().Name })
	}
	e.stopAll(servers)
	return nil
}

// Restart stops the named servers and starts them again, with a fresh set
// of restarts for the on-failure policy. The start, once the servers are
// stopped, goes on if ctx ends first (bounded by their startupTimeout): a
// caller giving up must not leave them stopped.
func (e *Engine) Restart(ctx context.Context, names ...string) error {
	if len(names) == 0 {
		return errorf(KindUsage, "", "name the servers to restart")
	}
	var servers []*server
	for _, n := range names {
		s, err := e.lookup(n)
		if err != nil {
			return err
		}
		if !slices.Contains(servers, s) {
			servers = append(servers, s)
		}
	}
	// Restarts of a server take turns (in name order, so that two of
	// several servers cannot wait on each other): overlapping, one's stop
	// cut the other's start short.
	slices.SortFunc(servers, func(a, b *server) int { return strings.Compare(a.cfg().Name, b.cfg().Name) })
	var turns []*server
	endTurns := func() {
		for _, s := range turns {
			<-s.restartTurn
		}
	}
	for _, s := range servers {
		select {
		case s.restartTurn <- struct{}{}:
			turns = append(turns, s)
		case <-ctx.Done():
			endTurns()
			return deadlineError(ctx.Err(), names[0], "waiting for another restart of "+strings.Join(names, ", "))
		}
	}
	// Requests meanwhile wait for the restart, not fail as if the
	// servers were stopped by hand.
	var marked []func()
	for _, s := range servers {
		marked = append(marked, s.markRestarting())
	}
	restarted := func() {
		for _, done := range marked {
			done()
		}
		endTurns()
	}
	// A restart that cannot start (its command gone, its cwd) leaves
	// a running server running, rather than stopped for good.
	if refused, err := precheck(servers, true); err != nil {
		for s := range refused {
			s.byHand() // named: no longer stopped by hand, but unavailable with why
		}
		failChecked(refused)
		restarted()
		ee := *asError(err) // a copy: it may be a status's lastError
		ee.Hint = slices.Clone(ee.Hint)
		for _, s := range servers {
			if s.running() {
				ee.hint("server %s was left running, as it was", s.cfg().Name)
			}
		}
		return &ee
	}
	if err := e.Stop(names...); err != nil {
		restarted()
		return err
	}
	err := outlive(ctx, func(ctx context.Context) error {
		defer restarted()
		return e.Start(ctx, names...)
	}, nil)
	if cerr := ctx.Err(); cerr != nil && err == cerr {
		return deadlineError(ctx.Err(), names[0], "the restart of "+strings.Join(names, ", ")+" (its start goes on)")
	}
	return err
}

// markRestarting marks s as being restarted by hand until the returned
// func is called (restarts take turns: one mark at a time).
// awaitRestart waits, until ctx ends, for the restart under way (by hand,
// or a reload's start of the server), and reports whether there was one.
func (s *server) awaitRestart(ctx context.Context) bool {
	s.mu.Lock()
	ch := s.lc.byHandRestart
	s.mu.Unlock()
	if ch == nil {
		return false
	}
	select {
	case <-ch:
	case <-ctx.Done():
	}
	return true
}

func (s *server) markRestarting() (done func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{})
	s.lc.byHandRestart = ch
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.lc.byHandRestart == ch {
			s.lc.byHandRestart = nil
		}
		close(ch)
	}
}

// renew connects afresh to a remote server that no longer knows the
// session of cs (it restarted, or timed the session out): no failure of
// the server, so no restart is counted, and it happens at once. Requests
// meanwhile wait for it.
func (s *server) renew(cs *mcp.ClientSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cs != cs || s.e.closed.Load() || (s.state != StateReady && s.state != StateDegraded) {
		return // renewed already, or stopping
	}
	s.cs, s.conn = nil, nil
	s.endLife()
	e := errorf(KindUnavailable, s.cfg().Name, "server %s no longer knows mcpctl's session", s.cfg().Name)
	s.setStateNote(StateUnavailable, e, "connecting afresh")
	s.scheduleRestartLocked(0)
	go cs.Close()
}
