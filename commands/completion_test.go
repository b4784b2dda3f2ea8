package commands

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCompletionHungSession: a session that accepts and never answers
// costs a completion completionTimeout, then the config's server names
// come back, and nothing is written to stderr.
func TestCompletionHungSession(t *testing.T) {
	dir := t.TempDir()
	rt, err := os.MkdirTemp("", "mcc")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(rt)
	if err := os.WriteFile(filepath.Join(dir, "mcp.json"), []byte(`{"servers": {"one": {"command": "true"}, "two": {"command": "true"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(rt, "hung.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	vars := map[string]string{"MCPCTL_RUNTIME_DIR": rt, "MCPCTL_STATE_DIR": filepath.Join(dir, "state")}
	var out, errOut bytes.Buffer
	env := newEnv(strings.NewReader(""), &out, &errOut)
	env.WorkDir = dir
	env.LookupEnv = func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	start := time.Now()
	err = newRootCmd(env).Run(context.Background(), []string{"mcpctl", "--session", "hung", "call", "--generate-shell-completion"})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "one.\ntwo.\n" {
		t.Errorf("candidates: %q, want the config's servers", got)
	}
	if errOut.Len() > 0 {
		t.Errorf("stderr: %q", errOut.String())
	}
	if took < completionTimeout {
		t.Errorf("took %s: the hung session was not asked", took)
	}
	if took > completionTimeout+5*time.Second {
		t.Errorf("took %s; a hung session must cost about %s", took, completionTimeout)
	}
}
