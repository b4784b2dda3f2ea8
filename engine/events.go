package engine

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpctl/mcpctl/schemas"
)

// Event types. Each is one JSON object on a line of `mcpctl watch`.
const (
	// EventState: a server changed state (From, To, Error).
	EventState = "state"
	// EventListChanged: a server's tools, prompts or resources changed
	// (List, Added, Removed), after the engine refreshed its lists.
	EventListChanged = "list_changed"
	// EventResourceUpdated: a subscribed resource changed (URI).
	EventResourceUpdated = "resource_updated"
	// EventLog: a log message from a server (Level, Logger, Data).
	EventLog = "log"
	// EventProgress: progress of a request (Token, Progress, Total,
	// Message), or the status of a task (Message is the status).
	EventProgress = "progress"
	// EventStderr: a line a server wrote to stderr (Line). Only sent to
	// subscribers that ask for it.
	EventStderr = "stderr"
	// EventConfig: the session's config was reloaded (Added, Removed, Failed,
	// Restarted, Updated), or could not be and the running config stays
	// (Error).
	EventConfig = "config"
	// EventDropped: the subscriber fell behind and Count events were lost.
	EventDropped = "dropped"
	// EventReady: a watch is set up (its subscriptions held, its log level
	// set); it is always the first line of `mcpctl watch`.
	EventReady = "ready"
)

// EventTypes lists every event type, for validation and help texts.
var EventTypes = []string{EventState, EventListChanged, EventResourceUpdated, EventLog, EventProgress, EventStderr, EventConfig, EventDropped, EventReady}

// CheckEventTypes refuses a type that is not one of [EventTypes]: a watch
// of it would wait in silence. The error's Candidates hold the type it may
// have meant.
func CheckEventTypes(types []string) error {
	for _, t := range types {
		if slices.Contains(EventTypes, t) {
			continue
		}
		e := errorf(KindUsage, "", "unknown event type %q", t)
		if e.Candidates = schemas.Closest(t, EventTypes); len(e.Candidates) > 0 {
			return e.hint("did you mean %s?", e.Candidates[0])
		}
		return e.hint("event types: %s", strings.Join(EventTypes, ", "))
	}
	return nil
}

// An Event is something that happened to a server.
type Event struct {
	Time   time.Time `json:"time"`
	Type   string    `json:"type"`
	Server string    `json:"server,omitempty"`

	From  State  `json:"from,omitempty"`
	To    State  `json:"to,omitempty"`
	Error string `json:"error,omitempty"`

	List      string   `json:"list,omitempty"`
	Added     []string `json:"added,omitempty"`
	Removed   []string `json:"removed,omitempty"`
	Restarted []string `json:"restarted,omitempty"`
	Updated   []string `json:"updated,omitempty"`
	// Started: a config event's servers that were not running and that
	// the reload started again (a crashed one its edit mended).
	Started []string `json:"started,omitempty"`
	// Failed: a config event's servers that did not start, or whose edit
	// could not be applied (each as "NAME: why").
	Failed []string `json:"failed,omitempty"`

	URI string `json:"uri,omitempty"`

	Level  string          `json:"level,omitempty"`
	Logger string          `json:"logger,omitempty"`
	Data   json.RawMessage `json:"data,omitempty"`

	Token    any     `json:"token,omitempty"`
	Progress float64 `json:"progress,omitempty"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`

	Line string `json:"line,omitempty"`

	Count int `json:"count,omitempty"`
}

// An EventFilter chooses events. Empty lists mean all.
type EventFilter struct {
	Servers []string `json:"servers,omitempty"`
	Types   []string `json:"types,omitempty"`
	// Stderr asks for the servers' stderr lines, which are not sent
	// otherwise; naming EventStderr in Types does too. With Types, it
	// needs EventStderr among them: Types says which events are sent.
	Stderr bool `json:"stderr,omitempty"`
}

func (f *EventFilter) match(ev *Event) bool {
	if ev.Type == EventDropped {
		return true
	}
	if ev.Type == EventStderr && !f.Stderr {
		return false
	}
	if len(f.Types) > 0 && !slices.Contains(f.Types, ev.Type) {
		return false
	}
	return len(f.Servers) == 0 || ev.Server == "" || slices.Contains(f.Servers, ev.Server)
}

// A Subscription receives the events that match its filter on C until
// Close, or until the engine closes (after the events of its servers'
// stop): C is closed then, so a range over it ends. A subscriber that falls
// behind loses events; it is then told how many with an [EventDropped]
// event, as soon as it has caught up enough to take it.
type Subscription struct {
	C <-chan Event

	c       chan Event
	filter  EventFilter
	bus     *bus
	since   time.Time // when it began: every event it gets is later
	mu      sync.Mutex
	dropped int
	flush   *time.Timer // while dropped > 0: tells the count once there is room
}

// flushEvery is how often a subscription that lost events looks for room
// to tell it, when no event comes that would.
const flushEvery = 100 * time.Millisecond

// Close ends the subscription. Close is idempotent.
func (s *Subscription) Close() { s.bus.remove(s) }

type bus struct {
	mu     sync.Mutex
	subs   map[*Subscription]struct{}
	stderr int  // subscriptions that want stderr lines
	closed bool // the engine closed: no event will come
}

func (b *bus) subscribe(f EventFilter) *Subscription {
	if slices.Contains(f.Types, EventStderr) {
		f.Stderr = true
	}
	c := make(chan Event, 1024)
	s := &Subscription{C: c, c: c, filter: f, bus: b, since: time.Now()}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		close(c)
		return s
	}
	if b.subs == nil {
		b.subs = map[*Subscription]struct{}{}
	}
	b.subs[s] = struct{}{}
	if f.Stderr {
		b.stderr++
	}
	b.mu.Unlock()
	return s
}

func (b *bus) remove(s *Subscription) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[s]; !ok {
		return
	}
	delete(b.subs, s)
	if s.filter.Stderr {
		b.stderr--
	}
	s.stopFlush()
	close(s.c)
}

func (s *Subscription) stopFlush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.flush != nil {
		s.flush.Stop()
		s.flush = nil
	}
}

// flushDropped tells s how many events it lost as soon as it has caught up
// enough to take it: the next event would, but it may come much later.
func (b *bus) flushDropped(s *Subscription) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[s]; !ok {
		return // closed: close told it
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.dropped == 0:
		s.flush = nil // publish told it
	case cap(s.c)-len(s.c) > 1: // a slot stays free, as publish keeps it
		s.c <- Event{Time: time.Now(), Type: EventDropped, Count: s.dropped}
		s.dropped, s.flush = 0, nil
	default:
		s.flush.Reset(flushEvery)
	}
}

// close ends every subscription, now and to come.
func (b *bus) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for s := range b.subs {
		delete(b.subs, s)
		s.mu.Lock()
		if s.dropped > 0 {
			select {
			case s.c <- Event{Time: time.Now(), Type: EventDropped, Count: s.dropped}: // the slot publish keeps free
			default:
			}
		}
		if s.flush != nil {
			s.flush.Stop()
			s.flush = nil
		}
		s.mu.Unlock()
		close(s.c)
	}
	b.stderr = 0
}

// wantsStderr reports whether anyone listens to stderr lines, so they are
// not turned into events for nobody.
func (b *bus) wantsStderr() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stderr > 0
}

// publish never blocks: it runs on servers' read loops. It leaves one slot
// of a subscription free, for the count of the events it lost to be told
// even when the engine closes before the subscriber catches up. Only
// publish, flushDropped and close add to a subscription (under b.mu), so
// the slots free can only grow while it looks.
func (b *bus) publish(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		if !s.filter.match(&ev) {
			continue
		}
		s.mu.Lock()
		free := cap(s.c) - len(s.c)
		if s.dropped > 0 && free > 2 {
			s.c <- Event{Time: ev.Time, Type: EventDropped, Count: s.dropped}
			s.dropped = 0
			free--
		}
		if s.dropped == 0 && free > 1 {
			s.c <- ev
		} else {
			s.dropped++
			if s.flush == nil {
				s.flush = time.AfterFunc(flushEvery, func() { b.flushDropped(s) })
			}
		}
		s.mu.Unlock()
	}
}
