//go:build integration

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestIntegration runs testdata/integration against the real reference
// servers (@modelcontextprotocol/server-everything and server-filesystem),
// started through npx as examples/mcp.json says. scripts/test installs them
// with npm ci, pinned by package-lock.json.
func TestIntegration(t *testing.T) {
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{"server-everything", "server-filesystem"} {
		if _, err := os.Stat(filepath.Join(root, "node_modules", "@modelcontextprotocol", pkg, "package.json")); err != nil {
			t.Fatalf("@modelcontextprotocol/%s is not installed; run scripts/setup first", pkg)
		}
	}
	p := scriptParams("testdata/integration")
	setup := p.Setup
	p.Setup = func(env *testscript.Env) error {
		if err := setup(env); err != nil {
			return err
		}
		env.Setenv("REPO", root)
		return nil
	}
	testscript.Run(t, p)
}
