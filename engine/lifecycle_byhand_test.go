package engine

import (
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
			ok := fakeServer(t, "ok", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
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
