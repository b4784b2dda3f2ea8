package engine

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SubscribeResource subscribes to updates of a resource (routed as
// [Engine.ReadResource] routes); updates arrive as [EventResourceUpdated]
// events. Subscriptions to one URI are counted: the server is unsubscribed
// when the last release is called.
func (e *Engine) SubscribeResource(ctx context.Context, uri, server string) (release func(), err error) {
	defer func() { err = deadlineError(err, server, "subscribing to "+uri) }()
	s, err := e.route(ctx, uri, server)
	if err != nil {
		return nil, err
	}
	server = s.cfg().Name
	// A subscription uses the server until it is released: an idle or
	// transient server is not stopped under it.
	h, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	s = h.s // the server a reload put in its place, perhaps
	if c := h.capabilities().Resources; c == nil || !c.Subscribe {
		h.release()
		return nil, errorf(KindUsage, s.cfg().Name, "server %s does not support resource subscriptions", s.cfg().Name)
	}
	// The map is held only to find the URI's entry; the round trips are
	// made under the entry's own lock, which keeps one URI's subscribe and
	// unsubscribe in order without making other URIs wait on a slow server.
	s.subs.mu.Lock()
	sub := s.subs.m[uri]
	if sub == nil {
		sub = &subscription{}
		s.subs.m[uri] = sub
	}
	sub.n++
	s.subs.mu.Unlock()
	sub.mu.Lock()
	if sub.on != h.cs {
		_, err := h.do(ctx, "resources/subscribe", "subscribing to "+uri, h.s.requestTimeout(0), func(ctx context.Context) (any, error) {
			return nil, h.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
		})
		if err != nil {
			s.leave(sub)
			s.drop(uri, sub)
			sub.mu.Unlock()
			h.release()
			return nil, err
		}
		sub.on = h.cs
	}
	sub.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			defer h.release()
			sub.mu.Lock()
			defer sub.mu.Unlock()
			if s.leave(sub) && sub.on != nil {
				if !newProtocol(sub.on) {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					t0 := time.Now()
					err := sub.on.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
					// Counted in metrics as every request is; not toward
					// failureThreshold: the caller is gone and waits on
					// no answer.
					s.e.metrics.record(s.cfg().Name, "resources/unsubscribe", time.Since(t0), err)
				}
				// A 2026-07-28 subscription is a subscriptions/listen
				// request held open. It stays open for the connection's
				// life: a go-sdk v1.8 server, when any listen of a session
				// ends, drops that session's list_changed subscription
				// too, and the session would follow no more list changes.
				// The SDK subscribes a URI once, so a later subscribe
				// to it costs nothing.
				sub.on = nil
			}
			s.drop(uri, sub)
			s.e.idleAgain(s)
		})
	}, nil
}

// idleAgain arms the idle stop of the server a reload put in s's place,
// which shares s's subscriptions: their holds kept it from its idle stop,
// and the last one let go on s.
func (e *Engine) idleAgain(s *server) {
	cur, err := e.lookup(s.cfg().Name)
	if err != nil || cur == s || cur.subs != s.subs {
		return
	}
	cur.mu.Lock()
	defer cur.mu.Unlock()
	cur.armIdleLocked()
}

// The subscriptions of a server, by resource URI. A reload that restarts
// the server (its command changed, say) hands them to the server that
// replaces it, which makes them again on its connection (restore), and to
// which the callers' releases then go.
type subscriptions struct {
	mu sync.Mutex
	m  map[string]*subscription
}

// A subscription is a resource URI some callers follow, and the connection
// it was made on.
type subscription struct {
	// mu is held across the URI's round trips (subscribe, unsubscribe,
	// subscribe again on a new connection), so they reach the server in
	// the order they were decided.
	mu sync.Mutex
	on *mcp.ClientSession // under mu; nil when the server was not told
	n  int                // callers subscribed or subscribing, under subscriptions.mu
}

// leave counts a caller out of sub (whose mu the caller holds) and
// reports whether none is left: then the server is to be unsubscribed. The
// URI's entry stays in the map until the caller drops it, after the
// unsubscribe: a caller that comes meanwhile finds it, counts itself in
// and waits on mu, then subscribes again. Were the entry gone, it would
// make one of its own and its subscribe could reach the server before
// the unsubscribe, which would undo it.
func (s *server) leave(sub *subscription) (last bool) {
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	sub.n--
	return sub.n == 0
}

// drop removes uri's entry sub from the map unless a caller counted
// itself in since it was left (the caller holds sub.mu).
func (s *server) drop(uri string, sub *subscription) {
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	if sub.n == 0 && s.subs.m[uri] == sub {
		delete(s.subs.m, uri)
	}
}

// restore makes the subscriptions of an earlier connection, and sets the
// log level set on it (or held by watches), on cs (over conn), a new one:
// after a restart or a reconnect the server knows nothing of them. A failure is logged: the
// server runs without them, as a watch could not tell it apart from a
// server that says nothing.
func (s *server) restore(ctx context.Context, cs *mcp.ClientSession, conn *captureConn) {
	ir := cs.InitializeResult()
	if ir == nil || ir.Capabilities == nil {
		return
	}
	s.subs.mu.Lock()
	subs := maps.Clone(s.subs.m)
	s.subs.mu.Unlock()
	for uri, sub := range subs {
		sub.mu.Lock()
		if sub.on != nil && sub.on != cs {
			ctx, cancel := context.WithTimeout(ctx, s.requestTimeout(0))
			err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
			cancel()
			if err != nil {
				s.log.Warn("could not subscribe again on a new connection", "uri", uri, "error", err.Error())
			} else {
				sub.on = cs
			}
		}
		sub.mu.Unlock()
	}
	s.levelMu.Lock()
	defer s.levelMu.Unlock()
	// The level last set on it, or, on its first start, the one the
	// watches hold: a watch that began before it ran could not set it.
	level := cmp.Or(s.logLevel, s.levels.effective())
	if level == "" || ir.Capabilities.Logging == nil {
		return
	}
	err := setLevelOn(cs, conn, level, func() error {
		ctx, cancel := context.WithTimeout(ctx, s.requestTimeout(0))
		defer cancel()
		return cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(level)})
	})
	if err != nil {
		s.log.Warn("could not set the log level on a new connection", "level", level, "error", err.Error())
		return
	}
	s.logLevel = level
}

// newProtocol says whether cs speaks 2026-07-28 or later: stateless
// requests, notifications over subscriptions/listen.
func newProtocol(cs *mcp.ClientSession) bool {
	ir := cs.InitializeResult()
	return ir != nil && ir.ProtocolVersion >= "2026-07-28"
}

// setLevelOn sets the log level of a connection: a server of 2026-07-28 or
// later takes it with each request (conn adds it), an older one is told
// with logging/setLevel, which send makes.
func setLevelOn(cs *mcp.ClientSession, conn *captureConn, level string, send func() error) error {
	if newProtocol(cs) {
		conn.logLevel.Store(level)
		return nil
	}
	return send()
}

// LogLevels are the levels of MCP logging, from most to least verbose.
var LogLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// SetLogLevel asks the ready servers that support logging (all, or those
// named) to send log messages at level and above. It returns the servers
// it was set on. A name that is not a server is an error.
func (e *Engine) SetLogLevel(ctx context.Context, level string, servers ...string) ([]string, error) {
	if err := e.checkLevelRequest(level, servers); err != nil {
		return nil, err
	}
	var set []string
	for _, s := range e.all() {
		if len(servers) > 0 && !slices.Contains(servers, s.cfg().Name) {
			continue
		}
		ok, err := s.setLevel(ctx, func() string { return level })
		if err != nil {
			return set, err
		}
		if ok {
			set = append(set, s.cfg().Name)
		}
	}
	return set, nil
}

// setLevel sets the log level level() says (read under levelMu) on the
// server, if it is ready and logs; ok says it was.
func (s *server) setLevel(ctx context.Context, level func() string) (ok bool, err error) {
	h, err := s.ready(ctx)
	if ctx.Err() != nil {
		return false, deadlineError(ctx.Err(), s.cfg().Name, "setting the log level of server "+s.cfg().Name)
	}
	if err != nil || h.capabilities().Logging == nil {
		return false, nil
	}
	s.levelMu.Lock()
	defer s.levelMu.Unlock()
	lv := level()
	if lv == "" {
		return false, nil
	}
	err = setLevelOn(h.cs, h.conn, lv, func() error {
		_, err := h.do(ctx, "logging/setLevel", "setting the log level", h.s.requestTimeout(0), func(ctx context.Context) (any, error) {
			return nil, h.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(lv)})
		})
		return err
	})
	if err != nil {
		return false, deadlineError(err, s.cfg().Name, "setting the log level of server "+s.cfg().Name)
	}
	s.logLevel = lv
	return true, nil
}

// levelHolds counts the log levels the live watches of a server asked for:
// the server is set to the most verbose of them, so that one watch's
// level does not silence another's (each watch drops what is below its
// own). Shared, as subscriptions are, with the server a reload replaces
// it by.
type levelHolds struct {
	mu sync.Mutex
	n  map[string]int
}

// add counts level in (d 1) or out (d -1), and returns the most verbose
// level held, "" when none is.
func (l *levelHolds) add(level string, d int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[level] += d; l.n[level] <= 0 {
		delete(l.n, level)
	}
	return l.mostVerbose()
}

func (l *levelHolds) mostVerbose() string {
	for _, lv := range LogLevels {
		if l.n[lv] > 0 {
			return lv
		}
	}
	return ""
}

// checkLevelRequest refuses an unknown level, a closed engine, or a name
// that is not a server.
func (e *Engine) checkLevelRequest(level string, servers []string) error {
	if !slices.Contains(LogLevels, level) {
		return errorf(KindUsage, "", "unknown log level %q", level).hint("use one of: %s", strings.Join(LogLevels, ", "))
	}
	if err := e.open(); err != nil {
		return err
	}
	return e.checkServers(servers)
}

// holdLogLevel is SetLogLevel for a watch: level is held on the servers
// (all, or those named) until release, and each is set to the most verbose
// level held on it. Once the last watch lets go, the level stays as it
// was: MCP has no way to unset it.
func (e *Engine) holdLogLevel(ctx context.Context, level string, servers ...string) (release func(), err error) {
	if err := e.checkLevelRequest(level, servers); err != nil {
		return nil, err
	}
	h := &levelHold{level: level, servers: servers}
	// Counted on every server it names, under holdMu: a reload adds
	// servers with the holds there are then (addHolds), and only those.
	e.holdMu.Lock()
	if e.holds == nil {
		e.holds = map[*levelHold]bool{}
	}
	e.holds[h] = true
	var held []*server
	for _, s := range e.all() {
		if h.names(s.cfg().Name) {
			s.levels.add(level, 1)
			held = append(held, s)
		}
	}
	e.holdMu.Unlock()
	var once sync.Once
	release = func() {
		once.Do(func() {
			e.holdMu.Lock()
			delete(e.holds, h)
			var now []*server
			for _, s := range e.all() {
				// Servers a reload replaced share their holds with the
				// new ones; those it added were given this one.
				if h.names(s.cfg().Name) && s.levels.add(level, -1) != "" {
					now = append(now, s)
				}
			}
			e.holdMu.Unlock()
			for _, s := range now {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				s.setLevel(ctx, s.levels.effective)
				cancel()
			}
		})
	}
	for _, s := range held {
		if _, err := s.setLevel(ctx, s.levels.effective); err != nil {
			release()
			return nil, err
		}
	}
	return release, nil
}

// A levelHold is a watch's log level on the servers it names (none: all).
type levelHold struct {
	level   string
	servers []string
}

func (h *levelHold) names(server string) bool {
	return len(h.servers) == 0 || slices.Contains(h.servers, server)
}

// addHolds gives s, a server a reload adds, the watches' log levels that
// name it, and the subscriptions of a server of its name the reload
// before removed (e.holdMu held).
func (e *Engine) addHolds(s *server) {
	for h := range e.holds {
		if h.names(s.cfg().Name) {
			s.levels.add(h.level, 1)
		}
	}
	if subs := e.gone[s.cfg().Name]; subs != nil {
		delete(e.gone, s.cfg().Name)
		if subs.held() {
			s.subs = subs
		}
	}
}

// held reports whether any caller follows a resource.
func (s *subscriptions) held() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sub := range s.m {
		if sub.n > 0 {
			return true
		}
	}
	return false
}

// effective is the level to set: the most verbose held.
func (l *levelHolds) effective() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mostVerbose()
}

// below reports whether a log message of level is less severe than
// floor (both MCP levels; an unknown one is never below).
func below(level, floor string) bool {
	i, j := slices.Index(LogLevels, level), slices.Index(LogLevels, floor)
	return i >= 0 && j >= 0 && i < j
}
