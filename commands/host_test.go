package commands

import (
	"slices"
	"testing"

	"github.com/mcpctl/mcpctl/engine"
)

// Without a session, the engine's "mcpctl restart" hint does not fit: a
// command says to run it again, serve what its client can expect.
func TestHintsWithoutSession(t *testing.T) {
	hinted := func() *engine.Error {
		return &engine.Error{Kind: engine.KindUnavailable, Message: "server fake exited with code 9",
			Hint: []string{"start it again with: mcpctl restart fake"}}
	}
	var e *engine.Error
	e = localHost{}.hints(hinted()).(*engine.Error)
	if !slices.Equal(e.Hint, []string{"run the command again: without a session (mcpctl up), each command starts the servers it needs afresh"}) {
		t.Errorf("one-shot: %q", e.Hint)
	}
	e = localHost{serving: true}.hints(hinted()).(*engine.Error)
	if !slices.Equal(e.Hint, []string{"it stays down until mcpctl serve starts again (with serve --manage, the mcpctl.restart tool restarts it)"}) {
		t.Errorf("serve: %q", e.Hint)
	}
	if err := (localHost{serving: true}).hints(nil); err != nil {
		t.Errorf("nil: %v", err)
	}
}
