package engine

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpctl/mcpctl/config"
)

// A ReloadResult says what a reload did, by server name.
type ReloadResult struct {
	Added     []string `json:"added"`
	Removed   []string `json:"removed"`
	Restarted []string `json:"restarted"`
	// Updated kept running with new settings that apply without a
	// restart: startupTimeout, requestTimeout, shutdownTimeout,
	// cacheTTL, failureThreshold, restart, maxRestarts, roots (the server
	// is told), hooks; and servers stopped by hand, not running (manual or
	// lazy, not started), or disabled now, whose settings changed in any
	// way, which take them and stay stopped.
	Updated   []string `json:"updated"`
	Unchanged []string `json:"unchanged"`
	// Started are unchanged or updated servers that were not running
	// (they had failed, or exited) and were started again; one whose
	// start failed is in Failed instead.
	Started []string `json:"started"`
	// Failed are the added or restarted servers that did not start; they
	// stay unavailable, with their error in the status, until a later
	// reload changes them.
	Failed []*Error `json:"failed,omitempty"`
}

// Reload makes the engine run cfg instead of its current config: servers
// cfg adds are started, servers it removes are stopped, servers whose
// settings it changes are restarted, and the others keep running
// untouched, process and all; those of them that are down are started,
// unless their start failed while this reload waited for the one before. A
// server that fails to start does not undo the reload; it is reported in
// the result and in its status. Reloads run one at a time.
func (e *Engine) Reload(ctx context.Context, cfg *config.Config) (*ReloadResult, error) {
	if cfg == nil {
		return nil, errorf(KindUsage, "", "Reload was called with a nil *config.Config").
			hint("load one with config.Load or config.Parse")
	}
	if err := cfg.Validate(); err != nil {
		// Built in Go, and not as a file may be: refused as a file that
		// does not load is, the running config staying.
		return nil, e.ReloadFailed(err)
	}
	asked := time.Now()
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	if e.closed.Load() {
		return nil, errorf(KindUnavailable, "", "cannot reload: the engine is closed").wrap(errReloadClosed)
	}
	res := &ReloadResult{Added: []string{}, Removed: []string{}, Restarted: []string{}, Updated: []string{}, Unchanged: []string{}, Started: []string{}}
	var stop, start []*server
	var rootsChanged []func()
	wasRunning := map[*server]bool{}  // restarted, whatever their activation
	replaced := map[*server]*server{} // a server replaced → the one before it

	e.holdMu.Lock() // new servers get the holds there are; none comes meanwhile
	e.mu.Lock()
	old := e.servers
	servers := make(map[string]*server, len(cfg.Servers))
	order := make([]*server, 0, len(cfg.Servers))
	for _, sc := range cfg.Servers {
		prev := old[sc.Name]
		s := prev
		switch {
		case prev == nil:
			s = newServer(e, sc)
			e.addHolds(s)
			res.Added = append(res.Added, sc.Name)
			start = append(start, s)
		case prev.cfg().Same(sc):
			// Only where it is written, or its roots, may differ: keep it
			// running, with its new place for messages and its new roots.
			old := prev.cfg()
			prev.conf.Store(sc)
			prev.setEditError("") // an edit it could not take is undone
			if !slices.Equal(old.Roots, sc.Roots) {
				rootsChanged = append(rootsChanged, func() { prev.setRoots(old, sc) })
			}
			if old.Equal(sc) {
				res.Unchanged = append(res.Unchanged, sc.Name)
			} else {
				res.Updated = append(res.Updated, sc.Name)
			}
			if st := prev.currentState(); prev.autoStarts() && !prev.isHeld() && (st == StateUnavailable || st == StateStopped) {
				if failed := prev.failedSince(asked); failed != nil {
					// Its start failed while this reload waited for the
					// one before (the one its edit made): not tried again.
					res.Failed = append(res.Failed, failed)
					break
				}
				res.Started = append(res.Started, sc.Name)
				start = append(start, prev)
				// Started again as by hand: a restart policy that gave
				// up on it has its restarts back.
				prev.byHand()
			}
		case prev.isHeld():
			// Stopped by hand: it takes the new settings and stays stopped
			// until Start or Restart names it.
			s = newServer(e, sc)
			s.lc.held = true
			s.inherit(prev)
			replaced[s] = prev
			s.predecessor.Store(prev)
			res.Updated = append(res.Updated, sc.Name)
			stop = append(stop, prev)
		default:
			running := prev.running() && !sc.Disabled
			// The edit names a command that is not there, a cwd that is
			// not: a running server runs on as it was, rather than be
			// stopped for a start that cannot be. A later reload that
			// mends it restarts it.
			if running {
				if ces := sc.Check(); len(ces) > 0 {
					ee := checkError(ces[0]).(*Error)
					ee.hint("server %s runs on with its settings from before the edit", sc.Name)
					res.Failed = append(res.Failed, ee)
					prev.setEditError(ee.Message)
					break
				}
			}
			s = newServer(e, sc)
			s.inherit(prev)
			replaced[s] = prev
			s.predecessor.Store(prev)
			stop = append(stop, prev)
			// One started by hand or on use runs again, as the restart
			// said; one that was not running (manual, lazy), or is
			// disabled now, takes the settings and stays stopped.
			running = running && sc.Activation != "transient"
			if !s.autoStarts() && !running {
				res.Updated = append(res.Updated, sc.Name)
				break
			}
			wasRunning[s] = running
			res.Restarted = append(res.Restarted, sc.Name)
			start = append(start, s)
		}
		servers[sc.Name] = s
		order = append(order, s)
	}
	for _, prev := range e.order {
		if servers[prev.cfg().Name] == nil {
			res.Removed = append(res.Removed, prev.cfg().Name)
			stop = append(stop, prev)
			if prev.subs.held() {
				// The watches that follow its resources go on: a server
				// of its name added back is subscribed again.
				if e.gone == nil {
					e.gone = map[string]*subscriptions{}
				}
				e.gone[prev.cfg().Name] = prev.subs
			}
		}
	}
	// A request for a server this reload starts waits for that start, as
	// for a restart by hand; a new one would find it stopped.
	var marks []func()
	for _, s := range start {
		if old[s.cfg().Name] != s { // new: no one else holds it yet
			marks = append(marks, s.markRestarting())
		}
	}
	defer func() {
		for _, done := range marks {
			done()
		}
	}()
	e.cfg, e.servers, e.order = cfg, servers, order
	e.noConfig.Store(false)
	e.configErr = nil
	e.mu.Unlock()
	e.holdMu.Unlock()
	for _, s := range stop {
		// Retired before stopped, so no restart or retry starts it again.
		s.mu.Lock()
		s.lc.retired = true
		s.mu.Unlock()
	}

	successor := map[*server]*server{}
	for s, prev := range replaced {
		successor[prev] = s
	}
	e.stopEach(stop, func(prev *server) {
		// Each shown as itself once the one it replaces has stopped, not
		// once the slowest stop is over.
		if s := successor[prev]; s != nil {
			s.predecessor.Store(nil)
			s.tellDisabled(prev.status().State)
		}
	})
	for _, s := range stop {
		name := s.cfg().Name
		e.cache.drop(func(ce *cacheEntry) bool { return ce.server == name })
	}
	for _, name := range res.Added {
		// A server of a name removed before is a new one: its figures
		// start from nothing, not from the removed one's.
		e.metrics.forget(name)
	}
	for _, change := range rootsChanged {
		change()
	}
	res.Failed = append(res.Failed, e.startEach(ctx, start, wasRunning)...)
	// Started are those that did; the others are in Failed.
	res.Started = slices.DeleteFunc(res.Started, func(name string) bool {
		return slices.ContainsFunc(res.Failed, func(f *Error) bool { return f.Server == name })
	})
	e.log.Info("config reloaded", "added", res.Added, "removed", res.Removed, "restarted", res.Restarted, "updated", res.Updated, "failed", len(res.Failed))
	var failed []string
	for _, f := range res.Failed {
		failed = append(failed, f.Server+": "+f.Message) // "NAME: why", always, for a script to split
	}
	e.bus.publish(Event{Type: EventConfig, Added: res.Added, Removed: res.Removed, Restarted: res.Restarted, Updated: res.Updated, Started: res.Started, Failed: failed})
	return res, nil
}

// startEach starts the servers that start with the engine, and those of
// also, each on its own: one that cannot start is left unavailable with
// its error, and the others start regardless.
func (e *Engine) startEach(ctx context.Context, servers []*server, also map[*server]bool) []*Error {
	var failed []*Error
	var targets []*server
	for _, s := range servers {
		if !s.autoStarts() && !also[s] {
			continue
		}
		if _, err := precheck([]*server{s}, false); err != nil {
			ee := serverError(s, err)
			s.fail(ee)
			failed = append(failed, ee)
			continue
		}
		targets = append(targets, s)
	}
	errs := e.startTogether(ctx, targets, false, nil)
	for _, s := range targets {
		if err := errs[s]; err != nil {
			failed = append(failed, serverError(s, err)) // its state says so: see notStarted
		}
	}
	return failed
}

// ReloadFailed records that the config could not be loaded again: the
// engine keeps running the config it has, and [Engine.ConfigError] and a
// config event report why until a reload succeeds. It returns err as the
// engine's error (kind config), hints kept, err its cause; a nil err is
// no failure, and changes nothing.
func (e *Engine) ReloadFailed(err error) *Error {
	if given, ok := err.(*Error); err == nil || ok && given == nil {
		return nil
	}
	var ee *Error
	if given, ok := err.(*Error); ok && given != nil {
		c := *given
		ee = &c
		ee.Kind = KindConfig
	} else {
		ee = invalidConfig(err)
	}
	ee.err = err
	e.mu.Lock()
	e.configErr = ee
	e.mu.Unlock()
	e.log.Warn("config not reloaded: the running config stays", "error", ee.Message)
	e.bus.publish(Event{Type: EventConfig, Error: ee.Message})
	return ee
}

// ConfigError is why the last reload could not load the config, or why
// New could not use the one it was given, or nil when it could (or none
// was tried).
func (e *Engine) ConfigError() *Error {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.configErr
}

// A ReloadRequest is what a reload may bring the session besides its
// files. Stable.
type ReloadRequest struct {
	// Inputs are values for the config's ${input:ID}, as the environment
	// variables that give them (MCPCTL_INPUT_API_KEY for api-key): a
	// session cannot ask for an input a changed config added, so the
	// command that asks for the reload gives it. The session keeps them
	// for its later reloads, in memory only; they win over its own
	// environment's.
	Inputs map[string]string `json:"inputs,omitempty"`
}

// sessionInputs are the input values reloads gave a session.
type sessionInputs struct {
	mu     sync.Mutex
	values map[string]string
}

func (s *sessionInputs) add(vars map[string]string) error {
	for name := range vars {
		if !strings.HasPrefix(name, config.InputEnvPrefix) || name == config.InputEnvPrefix {
			return errorf(KindUsage, "", "a reload's inputs are MCPCTL_INPUT_<ID> variables, not %q", name)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.values == nil {
		s.values = map[string]string{}
	}
	maps.Copy(s.values, vars)
	return nil
}

// LookupInput gives the value a reload gave the variable name
// (MCPCTL_INPUT_<ID>), for the config loader ([Daemon.SetConfigLoader])
// to read before the session's environment.
func (d *Daemon) LookupInput(name string) (string, bool) {
	d.inputs.mu.Lock()
	defer d.inputs.mu.Unlock()
	v, ok := d.inputs.values[name]
	return v, ok
}

// errReloadClosed is under the error of a reload of a closed engine.
var errReloadClosed = errors.New("the engine is closed")

// failedSince is the error of a server whose start failed after t, and
// that is unavailable for it, or nil; one that crashed meanwhile is not.
func (s *server) failedSince(t time.Time) *Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == StateUnavailable && s.startFailedAt.After(t) && !s.since.After(s.startFailedAt) && s.lastErr != nil {
		return s.lastErr
	}
	return nil
}

// inherit gives s, a server that replaces prev (new settings), what callers
// asked of prev's connection: the resource subscriptions of the watches
// that follow it, and the log level they set. s makes them again on its
// first connection, as after a restart (they were lost: the watches went
// on, and heard nothing more).
func (s *server) inherit(prev *server) {
	s.subs, s.levels = prev.subs, prev.levels
	prev.mu.Lock()
	s.before = cmp.Or(prev.snap, prev.offered) // for publishChanges
	prev.mu.Unlock()
	prev.levelMu.Lock()
	s.logLevel = prev.logLevel
	prev.levelMu.Unlock()
}
