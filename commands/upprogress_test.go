package commands

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/engine"
)

// The last frame of up's live display gives each server the start time the
// table after it gives (the session's), not the time between the two
// messages the display was sent.
func TestStartBoardSettlesOnTheSessionsTimes(t *testing.T) {
	var out bytes.Buffer
	b := newStartBoard(&out, false, 0, 0, []string{"srv"})
	b.update(upProgress{Server: "srv", State: engine.StateStarting})
	time.Sleep(30 * time.Millisecond)
	b.update(upProgress{Server: "srv", State: engine.StateReady})
	b.settle(&engine.Status{Servers: []engine.ServerStatus{{Name: "srv", State: engine.StateReady, StartupSeconds: 0.876}}})
	b.done()
	frames := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if last := frames[len(frames)-1]; !strings.HasSuffix(last, "✓ srv  ready  0.88s") {
		t.Errorf("last frame %q, want the session's 0.88s", last)
	}
}
