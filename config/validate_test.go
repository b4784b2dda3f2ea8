package config

import (
	"errors"
	"strings"
	"testing"
)

// A Config built in Go is checked by the rules a file is: each problem an
// *Error in Errors, with the server's field path.
func TestValidateBuiltInGo(t *testing.T) {
	stdio := func(name string, deps ...string) *Server {
		return &Server{Name: name, Command: "true", DependsOn: deps}
	}
	for _, tc := range []struct {
		name    string
		servers []*Server
		want    []string // in the error's text, in order
	}{
		{"cycle", []*Server{stdio("a", "b"), stdio("b", "a")},
			[]string{"mcp.json: servers.a.dependsOn[0]: dependency cycle: a → b → a"}},
		{"self", []*Server{stdio("a", "a")}, []string{"dependency cycle: a → a"}},
		{"unknown dependency", []*Server{stdio("a", "db"), stdio("dc")},
			[]string{`servers.a.dependsOn[0]: unknown server "db"`}},
		{"dotted name", []*Server{stdio("my.q")},
			[]string{"servers[0]: invalid server name", `(no dots), got "my.q"`}},
		{"empty name", []*Server{stdio("")}, []string{`invalid server name`, `got ""`}},
		{"duplicate", []*Server{stdio("a"), stdio("b"), stdio("a")},
			[]string{`servers[2]: duplicate server name "a" (also defined at servers[0])`}},
		{"activation", []*Server{{Name: "a", Command: "true", Activation: "sometimes"}},
			[]string{`servers.a.activation: expected one of "eager", "lazy", "manual", "transient", got "sometimes"`}},
		{"activation typo", []*Server{{Name: "a", Command: "true", Activation: "layz"}}, []string{`got "layz"`}},
		{"restart", []*Server{{Name: "a", Command: "true", Restart: "always"}}, []string{`servers.a.restart: expected one of`}},
		{"type", []*Server{{Name: "a", URL: "http://x", Type: "grpc"}},
			[]string{`servers.a.type: expected one of "stdio", "http", "sse", "ws", got "grpc"`}},
		{"no command", []*Server{{Name: "a"}}, []string{`servers.a.command: required, but missing`}},
		{"url but no type", []*Server{{Name: "a", URL: "http://x"}}, []string{`servers.a.command: required, but missing`}},
		{"no url", []*Server{{Name: "a", Type: "http"}}, []string{`servers.a.url: required, but missing`}},
		{"nil", []*Server{stdio("a"), nil}, []string{"servers[1]: is a nil *config.Server"}},
		{"all at once", []*Server{nil, stdio("a", "b"), stdio("b", "a"), stdio("a")},
			[]string{"servers[0]: is a nil", `servers[3]: duplicate server name "a"`, "dependency cycle: a → b → a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := (&Config{File: "mcp.json", Servers: tc.servers}).Validate()
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("err = %v (%T), want Errors", err, err)
			}
			text, at := err.Error(), 0
			for _, w := range tc.want {
				i := strings.Index(text[at:], w)
				if i < 0 {
					t.Fatalf("error %q: want %q (in order)", text, w)
				}
				at += i + len(w)
			}
			if tc.name == "activation typo" && !strings.Contains(strings.Join(es.Hints(), "\n"), `did you mean "lazy"?`) {
				t.Errorf("hints %q", es.Hints())
			}
		})
	}
}

// Without a File, a problem is placed at "config"; with none, Validate
// says so rather than panic.
func TestValidateNoFile(t *testing.T) {
	err := (&Config{Servers: []*Server{{Name: "a", Command: "true", DependsOn: []string{"a"}}}}).Validate()
	if err == nil || !strings.HasPrefix(err.Error(), "config: servers.a.dependsOn[0]: dependency cycle") {
		t.Errorf("err = %v", err)
	}
	var nilConfig *Config
	if err := nilConfig.Validate(); err == nil {
		t.Error("a nil *Config is valid")
	}
}

// What Go leaves zero (type, activation, restart, cwd, timeouts) is a
// file's default: valid, as is a config with no servers.
func TestValidateGoDefaults(t *testing.T) {
	for _, cfg := range []*Config{
		{},
		{Servers: []*Server{
			{Name: "lit", Command: "true"},
			{Name: "dep_1", Command: "true", DependsOn: []string{"lit"}, Activation: "lazy", Restart: "on-failure"},
			{Name: "web", Type: "http", URL: "http://127.0.0.1:1/mcp", DependsOn: []string{"lit", "dep_1"}},
			{Name: "w", Type: "ws", URL: "ws://127.0.0.1:1"},
			{Name: "off", Command: "true", Disabled: true},
		}},
	} {
		if err := cfg.Validate(); err != nil {
			t.Errorf("%v", err)
		}
	}
}

// Every config Parse reads is valid: the rules are the same, and a file's
// other clients' names (local, remote, streamable-http) are read as ours.
// A url that expands to nothing loads (its start says), and so passes: the
// engine refused the whole config for it.
func TestValidateParsed(t *testing.T) {
	cfg, err := Parse("mcp.json", []byte(`{"servers": {
		"a": {"command": "true", "type": "local"},
		"b": {"url": "http://127.0.0.1:1/mcp", "type": "remote", "dependsOn": ["a"], "activation": "lazy"},
		"c": {"url": "http://127.0.0.1:1/mcp", "type": "streamable-http", "restart": "on-failure"},
		"d": {"url": "wss://127.0.0.1:1"},
		"e": {"url": "http://127.0.0.1:1/sse", "type": "sse", "dependsOn": ["b", "c"]},
		"f": {"command": "true", "disabled": true},
		"my-server_2": {"command": "true", "activation": "manual"},
		"g": {"type": "http", "url": "${G_URL:-}"},
		"h": {"type": "http", "url": "${G_URL:-}", "disabled": true}
	}}`), t.TempDir(), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("a parsed config: %v", err)
	}
	// And a file Parse refuses for these rules is refused as Validate
	// refuses a config built in Go.
	_, err = Parse("mcp.json", []byte(`{"servers": {"a": {"command": "true", "dependsOn": ["b"]}, "b": {"command": "true", "dependsOn": ["a"]}}}`), t.TempDir(), env(nil))
	if err == nil || !strings.Contains(err.Error(), "dependency cycle: a → b → a") {
		t.Errorf("a cycle in a file: %v", err)
	}
}
