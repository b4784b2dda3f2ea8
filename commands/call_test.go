package commands

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/engine"
)

// While the user answers a question on the terminal, the live progress line
// is wiped and not drawn again until the answer is given.
func TestQuietWhileAsking(t *testing.T) {
	var shown []float64
	cleared := 0
	req := &engine.CallRequest{OnProgress: func(p engine.Progress) { shown = append(shown, p.Progress) }}
	req.Elicitation = func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		req.OnProgress(engine.Progress{Progress: 2}) // arrives while the user types
		return json.RawMessage(`{"action":"cancel"}`), nil
	}
	quietWhileAsking(req, func() { cleared++ })
	req.OnProgress(engine.Progress{Progress: 1})
	if _, err := req.Elicitation(context.Background(), "srv", nil); err != nil {
		t.Fatal(err)
	}
	req.OnProgress(engine.Progress{Progress: 3})
	if len(shown) != 2 || shown[0] != 1 || shown[1] != 3 || cleared != 1 {
		t.Errorf("shown %v, cleared %d times", shown, cleared)
	}
}

// A progress line being drawn when a question comes is finished before the
// line is wiped: it is never drawn over the question.
func TestQuietWhileAskingWaitsForTheLineBeingDrawn(t *testing.T) {
	var mu sync.Mutex
	var events []string
	note := func(e string) { mu.Lock(); events = append(events, e); mu.Unlock() }
	drawing, release := make(chan struct{}), make(chan struct{})
	req := &engine.CallRequest{OnProgress: func(engine.Progress) {
		close(drawing)
		<-release
		note("drawn")
	}}
	req.Elicitation = func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"action":"cancel"}`), nil
	}
	quietWhileAsking(req, func() { note("cleared") })
	go req.OnProgress(engine.Progress{Progress: 1})
	<-drawing
	asked := make(chan struct{})
	go func() {
		req.Elicitation(context.Background(), "srv", nil)
		close(asked)
	}()
	time.Sleep(50 * time.Millisecond) // time for a wipe that does not wait
	close(release)
	<-asked
	if want := []string{"drawn", "cleared"}; !slices.Equal(events, want) {
		t.Errorf("events %v, want %v", events, want)
	}
}
