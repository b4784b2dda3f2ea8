package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/internal/fakemcp"
)

// A server stopped or restarted by hand while the engine's start (mcpctl
// up) still starts it is the hand's: the start neither fails nor stops the
// others. It failed "server slow was stopped during startup", and up's
// session ended with every server (QA).
func TestStartTakenOverByHand(t *testing.T) {
	for _, act := range []string{"stop", "restart"} {
		t.Run(act, func(t *testing.T) {
			slow := fakeServer(t, "slow", fakemcp.Spec{StartDelay: "1500ms", Tools: []fakemcp.Tool{{Name: "echo"}}})
			// Still starting too when slow is taken over: its start goes on.
			ok := fakeServer(t, "ok", fakemcp.Spec{StartDelay: "1500ms", Tools: []fakemcp.Tool{{Name: "echo"}}})
			e := newEngine(t, slow, ok)
			wait := e.StartAsync(ctx(t))
			waitState(t, e, "slow", StateStarting)
			time.Sleep(200 * time.Millisecond)
			var err error
			if act == "stop" {
				err = e.Stop("slow")
			} else {
				err = e.Restart(ctx(t), "slow")
			}
			if err != nil {
				t.Fatalf("%s: %v", act, err)
			}
			if err := wait(); err != nil {
				t.Fatalf("the start: %v", err)
			}
			waitState(t, e, "ok", StateReady)
			want := StateStopped
			if act == "restart" {
				want = StateReady
			}
			if st := waitState(t, e, "slow", want); act == "stop" && !st.StoppedByHand {
				t.Errorf("slow: %+v", st)
			}
		})
	}
}

// Servers started together by hand (mcpctl start g b) of which one fails
// are all stopped again, as start --help says: the one whose start the
// failure called off is stopped, not unavailable with "start called off"
// (QA: which of the two it was depended on timing).
func TestStartTogetherCalledOffIsStopped(t *testing.T) {
	g := fakeServer(t, "g", fakemcp.Spec{StartDelay: "500ms", Tools: []fakemcp.Tool{{Name: "echo"}}})
	g.Activation = "manual"
	four := 4
	bad := fakeServer(t, "b", fakemcp.Spec{Exit: &four})
	bad.Activation = "manual"
	e := newEngine(t, g, bad)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx(t), "g", "b"); err == nil {
		t.Fatal("start g b: no error")
	}
	if st := waitState(t, e, "g", StateStopped); st.LastError != "" && !strings.Contains(st.LastError, "called off") {
		t.Errorf("g: %+v", st)
	}
}
