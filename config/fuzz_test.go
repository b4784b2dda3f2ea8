package config

import (
	"testing"
)

// FuzzLoad feeds the loader arbitrary files, as JSON or as TOML: whatever
// the bytes, it returns a config or errors, never panics or hangs. The seed
// corpus is in testdata/fuzz/FuzzLoad; .ci/run fuzzes briefly.
func FuzzLoad(f *testing.F) {
	for _, seed := range []struct {
		data string
		toml bool
	}{
		{`{"servers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]}}}`, false},
		{`{"mcpServers": {"a": {"command": "x", "env": {"K": "${HOME}"}, "dependsOn": ["b"]}, "b": {"url": "https://x.example/mcp"}}}`, false},
		{"{\n  // comment\n  \"servers\": {\"a\": {\"command\": \"x\", \"limits\": {\"memory\": \"1G\", \"cpuTime\": 30},},},\n}", false},
		{`{"inputs": [{"id": "k", "type": "promptString", "default": "d"}], "servers": {"a": {"command": "${input:k}", "timeout": 5}}}`, false},
		{`{"defaults": {"startupTimeout": "1m30s", "restart": "on-failure"}, "servers": {"a": {"command": "x", "includeTools": ["read_*"]}}}`, false},
		{"[servers.a]\ncommand = \"x\"\nargs = [\"$$\", \"${VAR:-d}\"]\n[servers.a.limits]\nopenFiles = 64\n", true},
		{"model = \"o3\"\n[mcp_servers.fs]\ncommand = \"npx\"\nstartup_timeout_ms = 20000\nenabled = false\n[mcp_servers.fs.env]\nK = \"v\"\n", true},
		{`{"servers": {"a": {"command": "x"}, "a": {"command": "y"}}}`, false},
		{`{"servers": {"a": {"command": "x", "dependsOn": ["a"]}}}`, false},
	} {
		f.Add([]byte(seed.data), seed.toml)
	}
	lookup := func(k string) (string, bool) {
		if k == "HOME" || k == "VAR" {
			return "/home/u", true
		}
		return "", false
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, toml bool) {
		name := "mcp.json"
		if toml {
			name = "mcp.toml"
		}
		cfg, err := Parse(name, data, dir, lookup)
		if err != nil {
			if err.Error() == "" {
				t.Error("an error without a message")
			}
			return
		}
		// Whatever loaded can be shown and checked.
		cfg.Resolved(false)
		cfg.Document(false)
		for _, s := range cfg.Servers {
			s.Same(s)
		}
	})
}
