package engine

import (
	"strings"
	"testing"
)

// A reload gives a session input values only: a variable that is not an
// MCPCTL_INPUT_<ID> (PATH, say, which would reach every server's config)
// is refused, and nothing of the request is kept.
func TestReloadInputsOnly(t *testing.T) {
	var d Daemon
	err := d.inputs.add(map[string]string{"MCPCTL_INPUT_KEY": "k", "PATH": "/tmp/evil"})
	if err == nil || !strings.Contains(err.Error(), `not "PATH"`) {
		t.Fatalf("PATH given as an input: %v", err)
	}
	if _, ok := d.LookupInput("MCPCTL_INPUT_KEY"); ok {
		t.Error("a refused request's input was kept")
	}
	if err := d.inputs.add(map[string]string{"MCPCTL_INPUT_KEY": "k"}); err != nil {
		t.Fatal(err)
	}
	if v, ok := d.LookupInput("MCPCTL_INPUT_KEY"); !ok || v != "k" {
		t.Errorf("LookupInput: %q %v", v, ok)
	}
	if _, ok := d.LookupInput("PATH"); ok {
		t.Error("LookupInput answers for a variable no reload gave")
	}
}
