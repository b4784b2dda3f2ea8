package engine

import (
	"slices"
	"testing"

	"github.com/mcpctl/mcpctl/internal/fakemcp"
)

// Requests made as soon as StartAsync returns, before any server is
// starting, wait for the servers it brings up, a dependent one behind its
// dependency included: a call succeeds, and a listing has every server's
// tools (QA: a session's listing left out the servers still starting, and
// a call in the first moment was told Engine.Start was never called).
func TestStartAsyncRequestsWait(t *testing.T) {
	slow := fakeServer(t, "slow", fakemcp.Spec{StartDelay: "400ms", Tools: []fakemcp.Tool{{Name: "echo"}}})
	dep := fakeServer(t, "dep", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	dep.DependsOn = []string{"slow"}
	fast := fakeServer(t, "fast", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	e := newEngine(t, slow, dep, fast)
	wait := e.StartAsync(ctx(t))
	tools, err := e.Tools("")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name())
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"dep.echo", "fast.echo", "slow.echo"}) {
		t.Errorf("tools listed while the servers start: %v", names)
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}

	e2 := newEngine(t, fakeServer(t, "slow", fakemcp.Spec{StartDelay: "300ms", Tools: []fakemcp.Tool{{Name: "echo"}}}))
	wait = e2.StartAsync(ctx(t))
	if _, err := e2.CallTool(ctx(t), &CallRequest{Name: "slow.echo"}); err != nil {
		t.Errorf("a call as the start begins: %v", err)
	}
	if tools, err := e2.Tools("slow"); err != nil || len(tools) != 1 {
		t.Errorf("tools of one server: %v %v", tools, err)
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
}
