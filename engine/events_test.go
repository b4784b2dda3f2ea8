package engine

import (
	"encoding/json"
	"testing"
	"time"
)

// A subscriber that falls behind is told how many events it lost: on the
// next event that finds room, and, when none comes, as the engine closes.
func TestBusToldDropped(t *testing.T) {
	var b bus
	sub := b.subscribe(EventFilter{})
	n := cap(sub.c) + 10
	for i := 0; i < n; i++ {
		b.publish(Event{Type: EventLog, Server: "s"})
	}
	b.close()
	got, lost := 0, 0
	for ev := range sub.C {
		if ev.Type == EventDropped {
			lost += ev.Count
		} else {
			got++
		}
	}
	if got+lost != n || lost == 0 {
		t.Errorf("closed while behind: %d events and %d told lost, want %d in all", got, lost, n)
	}

	sub = (&bus{}).subscribe(EventFilter{})
	b2 := sub.bus
	for i := 0; i < n; i++ {
		b2.publish(Event{Type: EventLog, Server: "s"})
	}
	for i := 0; i < 100; i++ { // caught up in part
		<-sub.C
	}
	b2.publish(Event{Type: EventState, Server: "s"})
	got, lost = 100, 0
	var last Event
	for len(sub.C) > 0 {
		ev := <-sub.C
		if ev.Type == EventDropped {
			lost += ev.Count
		} else {
			got++
		}
		last = ev
	}
	if got+lost != n+1 || last.Type != EventState {
		t.Errorf("after catching up: %d events and %d told lost (last %s), want %d in all, the state event last", got, lost, last.Type, n+1)
	}
	sub.Close()
}

// The count of events lost is told once the subscriber catches up, though
// no other event comes: it came with the next event, which may be long.
func TestBusToldDroppedWithoutAnotherEvent(t *testing.T) {
	var b bus
	sub := b.subscribe(EventFilter{})
	defer sub.Close()
	n := cap(sub.c) + 10
	for i := 0; i < n; i++ {
		b.publish(Event{Type: EventLog, Server: "s"})
	}
	got := 0
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-sub.C:
			if ev.Type != EventDropped {
				got++
				continue
			}
			if got+ev.Count != n {
				t.Errorf("%d events and %d told lost, want %d in all", got, ev.Count, n)
			}
			return
		case <-timeout:
			t.Fatalf("got %d of %d events, and no count of those lost", got, n)
		}
	}
}

// Asking for stderr events by type is asking for stderr lines.
func TestBusStderrByType(t *testing.T) {
	var b bus
	sub := b.subscribe(EventFilter{Types: []string{EventStderr}})
	defer sub.Close()
	if !b.wantsStderr() {
		t.Fatal("a subscription to type stderr does not count as wanting stderr lines")
	}
	b.publish(Event{Type: EventStderr, Server: "s", Message: "hello"})
	if ev := <-sub.C; ev.Type != EventStderr {
		t.Errorf("got %+v", ev)
	}
}

// A progress of 0 is sent as 0 (call --progress prints it), not left out.
func TestProgressZeroKept(t *testing.T) {
	data, _ := json.Marshal(Progress{Total: 3, Message: "v=0"})
	if string(data) != `{"progress":0,"total":3,"message":"v=0"}` {
		t.Errorf("progress 0 as JSON: %s", data)
	}
}
