package commands

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/engine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The relay's ways to end, with a host whose watches do what a test says
// (TestServeSubscriptions in the main package runs real ones).

// subHost is a host whose hub watch runs until its context ends, and whose
// subscription watches run relayWatch.
type subHost struct {
	host       // nil: only Inspect and Watch are used
	relayWatch func(ctx context.Context, fn func(engine.Event) error) error
	watches    atomic.Int32 // subscription watches started
}

func (h *subHost) Inspect(context.Context, string) ([]*engine.Inspection, error) { return nil, nil }

func (h *subHost) Watch(ctx context.Context, req *engine.WatchRequest, fn func(engine.Event) error) error {
	if len(req.Subscribe) == 0 {
		fn(engine.Event{Type: engine.EventReady})
		<-ctx.Done()
		return nil
	}
	h.watches.Add(1)
	return h.relayWatch(ctx, fn)
}

// subClient connects a client to a hub over h and counts the updates it
// gets.
func subClient(t *testing.T, hb *hub) (*mcp.ClientSession, *atomic.Int32) {
	t.Helper()
	var updates atomic.Int32
	ct, st := mcp.NewInMemoryTransports()
	if _, err := hb.srv.Connect(t.Context(), st, nil); err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "c"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(context.Context, *mcp.ResourceUpdatedNotificationRequest) { updates.Add(1) },
	})
	cs, err := c.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, &updates
}

func startSubHub(t *testing.T, h host) *hub {
	t.Helper()
	hb := newHub(newEnv(nil, io.Discard, io.Discard), h, "test")
	if err := hb.start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hb.stop)
	return hb
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
	}
}

var notes = &mcp.SubscribeParams{URI: "file:///notes.txt"}

// A watch that ends before it holds the subscription (the session's stream
// ended: a nil error) fails the subscribe; the next one tries again.
func TestRelayEndsBeforeReady(t *testing.T) {
	h := &subHost{relayWatch: func(context.Context, func(engine.Event) error) error { return nil }}
	cs, _ := subClient(t, startSubHub(t, h))
	if err := cs.Subscribe(t.Context(), notes); err == nil {
		t.Fatal("subscribe succeeded with no watch holding it")
	}
	cs.Subscribe(t.Context(), notes)
	if n := h.watches.Load(); n != 2 {
		t.Errorf("%d watches for two subscribes after a failure, want 2", n)
	}
}

// A relay whose watch ends after it held the subscription is gone: a later
// subscriber starts a watch of its own instead of joining a dead one.
func TestRelayEndsAfterReady(t *testing.T) {
	h := &subHost{relayWatch: func(ctx context.Context, fn func(engine.Event) error) error {
		fn(engine.Event{Type: engine.EventReady})
		return &engine.Error{Kind: engine.KindUnavailable, Message: "the stream broke"}
	}}
	hb := startSubHub(t, h)
	a, _ := subClient(t, hb)
	b, _ := subClient(t, hb)
	if err := a.Subscribe(t.Context(), notes); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ended relay stays", func() bool {
		hb.subs.mu.Lock()
		defer hb.subs.mu.Unlock()
		return hb.subs.relays[notes.URI] == nil
	})
	if err := b.Subscribe(t.Context(), notes); err != nil {
		t.Fatal(err)
	}
	if n := h.watches.Load(); n != 2 {
		t.Errorf("%d watches, want a new one for the subscriber after the first ended", n)
	}
}

// Events the relay's watch lost may have held an update: the clients get
// one.
func TestRelayDroppedEvents(t *testing.T) {
	subscribed := make(chan struct{})
	h := &subHost{relayWatch: func(ctx context.Context, fn func(engine.Event) error) error {
		fn(engine.Event{Type: engine.EventReady})
		<-subscribed
		fn(engine.Event{Type: engine.EventDropped, Count: 5})
		<-ctx.Done()
		return nil
	}}
	cs, updates := subClient(t, startSubHub(t, h))
	if err := cs.Subscribe(t.Context(), notes); err != nil {
		t.Fatal(err)
	}
	close(subscribed)
	eventually(t, "no update after the relay lost events", func() bool { return updates.Load() > 0 })
}
