package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The same servers written as JSON with comments, mcp.toml and Codex's
// config.toml resolve to the same thing (a Codex server gets only the basic
// variables unless env_vars says more: inheritEnv false elsewhere).
func TestFormatsResolveAlike(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"mcp.json": `{
  // VS Code allows comments
  "servers": {
    "fs": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
      "env": {"TOKEN": "${TOKEN}"},
      "inheritEnv": false,
      "startupTimeout": 20,
      "requestTimeout": "90s",
      "includeTools": ["read_*"],
      "excludeTools": ["write_*"],
    },
    "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}, "disabled": true},
  },
}`,
		"mcp.toml": `[servers.fs]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
env = { TOKEN = "${TOKEN}" }
inheritEnv = false
startupTimeout = 20
requestTimeout = "90s"
includeTools = ["read_*"]
excludeTools = ["write_*"]

[servers.remote]
url = "https://mcp.example.com/mcp"
headers = { Authorization = "Bearer ${TOKEN}" }
disabled = true
`,
		"config.toml": `[mcp_servers.fs]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
startup_timeout_ms = 20000
tool_timeout_sec = 90
enabled_tools = ["read_*"]
disabled_tools = ["write_*"]

[mcp_servers.fs.env]
TOKEN = "${TOKEN}"

[mcp_servers.remote]
url = "https://mcp.example.com/mcp"
bearer_token_env_var = "TOKEN"
enabled = false
`,
	}
	var want []byte
	for _, name := range []string{"mcp.json", "mcp.toml", "config.toml"} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(files[name]), 0o644)
		cfg, err := Load(p, Options{LookupEnv: env(map[string]string{"TOKEN": "s3cr3t"}), WorkDir: dir})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, _ := json.MarshalIndent(cfg.Resolved(true), "", "  ")
		if want == nil {
			want = got
			if !strings.Contains(string(got), `"requestTimeout": "1m30s"`) || !strings.Contains(string(got), `"Authorization": "Bearer s3cr3t"`) {
				t.Fatalf("resolved: %s", got)
			}
			continue
		}
		if string(got) != string(want) {
			t.Errorf("%s resolves differently:\n%s\nwant\n%s", name, got, want)
		}
		if hidden, _ := json.Marshal(cfg.Resolved(false)); strings.Contains(string(hidden), "s3cr3t") {
			t.Errorf("%s: a secret is shown: %s", name, hidden)
		}
	}
}

func TestDefaultsAndAliases(t *testing.T) {
	cfg, err := loadFile(t, "mcp.json", `{
  "defaults": {"startupTimeout": "45s", "restart": "on-failure", "limits": {"memory": "512MiB", "cpuTime": 30}},
  "servers": {
    "a": {"command": "x"},
    "b": {"command": "x", "timeout": 5, "dependencies": ["a"], "restart": "never", "limits": {"openFiles": 64}}
  }}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Server("a"), cfg.Server("b")
	if a.StartupTimeout != 45*time.Second || a.Restart != "on-failure" || a.Limits.Memory != 512<<20 || a.Limits.CPUTime != 30*time.Second {
		t.Errorf("defaults not applied: %+v", a)
	}
	if b.StartupTimeout != 5*time.Second || b.DependsOn[0] != "a" || b.Restart != "never" || b.Limits.OpenFiles != 64 || b.Limits.Memory != 0 {
		t.Errorf("own fields and aliases: %+v", b)
	}
	if !strings.HasPrefix(b.Where("startupTimeout"), "mcp.json:5:27") {
		t.Errorf("alias placed at %s", b.Where("startupTimeout"))
	}
}

// Defaults give each server the fields of its kind: a remote server does
// not get a default command or env, nor a stdio one a default url or
// headers; a default dependency is not the server's own.
func TestDefaultsByKind(t *testing.T) {
	cfg, err := loadFile(t, "mcp.json", `{
  "defaults": {"command": "x", "env": {"A": "1"}, "args": ["-v"], "url": "http://127.0.0.1:1/", "headers": {"H": "v"}, "dependsOn": ["a"]},
  "servers": {
    "a": {"args": ["z"]},
    "s": {"command": "y"},
    "r": {"url": "http://example.com/mcp"},
    "h": {"type": "http"}
  }}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, st, r, h := cfg.Server("a"), cfg.Server("s"), cfg.Server("r"), cfg.Server("h")
	if a.Type != "stdio" || a.Command != "x" || len(a.DependsOn) != 0 {
		t.Errorf("a, all from defaults: %+v", a)
	}
	if st.Command != "y" || st.URL != "" || len(st.Headers) != 0 || st.Env["A"] != "1" || !slices.Equal(st.DependsOn, []string{"a"}) {
		t.Errorf("a stdio server: %+v", st)
	}
	if r.Command != "" || len(r.Args) != 0 || len(r.Env) != 0 || r.Headers["H"] != "v" {
		t.Errorf("a remote server: %+v", r)
	}
	if h.URL != "http://127.0.0.1:1/" || h.Command != "" {
		t.Errorf("a remote server whose url is the default: %+v", h)
	}
}

func TestEnvFileAndSizes(t *testing.T) {
	dir := t.TempDir()
	// A line over 64 KiB, and the lines after it, are read too.
	// A BOM (a Windows editor's) is not the first key's.
	os.WriteFile(filepath.Join(dir, ".env"), []byte("\xef\xbb\xbfBOM=1\r\n# secrets\nexport A=1\nB='two words'\nMID="+strings.Repeat("m", 70<<10)+"\r\nC=\"line\\nnext\"\nD=x # comment\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "mcp.json"), []byte(`{"servers": {"s": {"command": "x", "envFile": ".env", "env": {"A": "override"}}}}`), 0o644)
	cfg, err := Load(filepath.Join(dir, "mcp.json"), Options{LookupEnv: env(nil), WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	e := cfg.Server("s").Env
	if e["BOM"] != "1" || e["A"] != "override" || e["B"] != "two words" || e["C"] != "line\nnext" || e["D"] != "x" || len(e["MID"]) != 70<<10 {
		t.Errorf("env: A %q, B %q, C %q, D %q, MID %d bytes", e["A"], e["B"], e["C"], e["D"], len(e["MID"]))
	}
	for in, want := range map[string]int64{"512MiB": 512 << 20, "1G": 1 << 30, "800k": 800 << 10, "1.5g": 3 << 29, "2048": 2048} {
		var v any = in
		if in == "2048" {
			v = json.Number(in)
		}
		if got, err := parseSize(v); err != nil || got != want {
			t.Errorf("parseSize(%s) = %d, %v", in, got, err)
		}
	}
}

func TestInputs(t *testing.T) {
	body := `{"inputs": [{"id": "api-key", "type": "promptString", "password": true, "description": "API key"}],
	  "servers": {"a": {"command": "x", "env": {"K": "${input:api-key}"}, "args": ["--key=${input:api-key}"]}}}`
	cfg, err := loadFile(t, "mcp.json", body, map[string]string{"MCPCTL_INPUT_API_KEY": "from-env"})
	if err != nil || cfg.Server("a").Env["K"] != "from-env" {
		t.Fatalf("from env: %v %+v", err, cfg)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "mcp.json")
	os.WriteFile(p, []byte(body), 0o644)
	asked := 0
	cfg, err = Load(p, Options{LookupEnv: env(nil), Ask: func(in Input) (string, error) {
		asked++
		if !in.Password || in.Description != "API key" {
			t.Errorf("asked for %+v", in)
		}
		return "typed", nil
	}})
	if err != nil || cfg.Server("a").Env["K"] != "typed" || cfg.Server("a").Args[0] != "--key=typed" || asked != 1 {
		t.Fatalf("asked %d times: %v", asked, err)
	}
	if r := cfg.Resolved(false)["a"]; r.Args[0] != "--key=<redacted>" || r.Env["K"] != Redacted {
		t.Errorf("input value shown: %+v", r)
	}
}

func TestMergedFiles(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.json"), []byte(`{"servers": {"one": {"command": "x"}}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "b.toml"), []byte("[servers.two]\ncommand = \"y\"\ndependsOn = [\"one\"]\n"), 0o644)
	cfg, err := LoadFiles([]string{filepath.Join(dir, "a.json"), filepath.Join(dir, "b.toml")}, Options{LookupEnv: env(nil), WorkDir: dir})
	if err != nil || strings.Join(cfg.Names(), ",") != "one,two" || len(cfg.Paths) != 2 {
		t.Fatalf("%v %+v", err, cfg)
	}
}

// Values asked for are handed on as MCPCTL_INPUT_<ID>, so the background
// session, which cannot ask, gets them.
func TestInputEnviron(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "mcp.json")
	os.WriteFile(p, []byte(`{"inputs": [{"id": "api-key", "type": "promptString", "password": true}],
"servers": {"a": {"command": "x", "env": {"K": "${input:api-key}"}}}}`), 0o644)
	asked := 0
	cfg, err := Load(p, Options{LookupEnv: env(nil), WorkDir: dir, Ask: func(in Input) (string, error) {
		asked++
		return "typed", nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.InputEnviron(), " "); got != "MCPCTL_INPUT_API_KEY=typed" || asked != 1 {
		t.Errorf("InputEnviron = %q after %d questions", got, asked)
	}
	// Given by the environment: not asked.
	cfg, err = Load(p, Options{LookupEnv: env(map[string]string{"MCPCTL_INPUT_API_KEY": "from-env"}), WorkDir: dir,
		Ask: func(Input) (string, error) { t.Error("asked although the environment gives it"); return "", nil }})
	if err != nil || cfg.Servers[0].Env["K"] != "from-env" {
		t.Errorf("env K = %q, %v", cfg.Servers[0].Env["K"], err)
	}
}

// Redaction hides exactly what came from the environment, however short,
// and leaves the rest of the value readable.
func TestRedactExactly(t *testing.T) {
	cfg, err := Parse("mcp.json", []byte(`{"servers": {"r": {"type": "http", "url": "https://${HOST}/mcp?t=${T}", "headers": {"A": "x"}},
  "l": {"command": "tool", "args": ["--token=${TOKEN}", "--level=${LEVEL:-3}", "https"]}}}`), t.TempDir(),
		env(map[string]string{"HOST": "h.example", "T": "t", "TOKEN": "s3cr3t-t0ken"}))
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Resolved(false)
	if got := r["r"].URL; got != "https://<redacted>/mcp?t=<redacted>" {
		t.Errorf("url shown as %q", got)
	}
	if got := strings.Join(r["l"].Args, " "); got != "--token=<redacted> --level=3 https" {
		t.Errorf("args shown as %q", got)
	}
	// In other text, secrets of some length are scrubbed wherever they are.
	if got := cfg.Server("l").Redact("failed: bad token s3cr3t-t0ken (tool)"); got != "failed: bad token <redacted> (tool)" {
		t.Errorf("Redact = %q", got)
	}
}

// A secret is redacted as a JSON string writes it too: a server logging
// JSON escapes its quote and backslash (and some encoders its slash); Go's
// encoding/json its & < >, Python's every rune past ASCII.
func TestRedactJSONEscapedSecret(t *testing.T) {
	for secret, forms := range map[string][]string{
		"tok&en=SECRETabc": {`tok\u0026en=SECRETabc`},
		"pa<ss>SECRET":     {`pa\u003css\u003eSECRET`},
		"SECRETé-pass𝄞":    {`SECRET\u00e9-pass\ud834\udd1e`},
	} {
		cfg, err := Parse("mcp.json", []byte(`{"servers": {"l": {"command": "tool", "env": {"API_KEY": "${API_KEY}"}}}}`), t.TempDir(),
			env(map[string]string{"API_KEY": secret}))
		if err != nil {
			t.Fatal(err)
		}
		logged, _ := json.Marshal(map[string]string{"key": secret})
		for _, text := range append(forms, string(logged)) {
			if got := cfg.Server("l").Redact("stderr: " + text); strings.Contains(got, "SECRET") {
				t.Errorf("Redact(%s) = %s", text, got)
			}
		}
	}
	secret := `sk-te"st/SECRET\123`
	cfg, err := Parse("mcp.json", []byte(`{"servers": {"l": {"command": "tool", "env": {"API_KEY": "${API_KEY}"}}}}`), t.TempDir(),
		env(map[string]string{"API_KEY": secret}))
	if err != nil {
		t.Fatal(err)
	}
	logged, _ := json.Marshal(map[string]string{"key": secret})
	for _, text := range []string{secret, string(logged), `{"key":"sk-te\"st\/SECRET\\123"}`} {
		if got := cfg.Server("l").Redact("stderr: " + text); strings.Contains(got, "SECRET") || !strings.Contains(got, "<redacted>") {
			t.Errorf("Redact(%s) = %s", text, got)
		}
	}
}

// Redact runs on every stderr line and log message a server writes: a
// loaded config's server makes what it replaces once, so a line costs no
// allocation (it built and sorted every JSON form of every secret at each
// call). A header given after the load (up --header), to the server or to
// a copy of it, is redacted too.
func TestRedactPrepared(t *testing.T) {
	cfg, err := Parse("mcp.json", []byte(`{"servers": {"l": {"command": "tool", "env": {"A": "${A}", "B": "${B}"}}}}`), t.TempDir(),
		env(map[string]string{"A": "sk-te/st&SECRET", "B": "pässwörd-SECRET"}))
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Server("l")
	line := "a stderr line of a server that says nothing secret, as most lines do"
	if n := testing.AllocsPerRun(100, func() { s.Redact(line) }); n != 0 {
		t.Errorf("Redact of a line without secrets: %v allocations, want 0", n)
	}
	if got := s.Redact(`key "sk-te\/st\u0026SECRET", pass pässwörd-SECRET`); strings.Contains(got, "SECRET") {
		t.Errorf("Redact = %s", got)
	}
	c := *s
	c.AddHeader("Authorization", "Bearer header-SECRET")
	if got := c.Redact("sent Bearer header-SECRET and sk-te/st&SECRET"); strings.Contains(got, "SECRET") {
		t.Errorf("the copy's Redact = %s", got)
	}
	if got := s.Redact("sk-te/st&SECRET"); got != Redacted {
		t.Errorf("the original's Redact = %s", got)
	}
}

func BenchmarkRedact(b *testing.B) {
	cfg, err := Parse("mcp.json", []byte(`{"servers": {"l": {"command": "tool", "env": {"A": "${A}", "B": "${B}", "C": "${C}"}}}}`), b.TempDir(),
		env(map[string]string{"A": "sk-abc/def&ghi<jk>", "B": "token-1234567890", "C": "pässwörd-xyz"}))
	if err != nil {
		b.Fatal(err)
	}
	s := cfg.Server("l")
	line := "2026-11-27T12:00:00Z INFO listening on stdio; a typical stderr line of a server, about a hundred bytes"
	b.ReportAllocs()
	for b.Loop() {
		s.Redact(line)
	}
}

// The files of the clients whose shapes mcpctl reads load as they are
// written: VS Code's dev field of a server, and the other top-level keys
// of Claude Desktop's claude_desktop_config.json (its app settings). A key
// close to one of mcpctl's is still taken for a typo.
func TestClientFilesAsWritten(t *testing.T) {
	for name, body := range map[string]string{
		"vscode": `{"servers": {"app": {"type": "stdio", "command": "node", "args": ["build/index.js"],
			"dev": {"watch": "build/**/*.js", "debug": {"type": "node"}}}}}`,
		"claude desktop": `{"globalShortcut": "Ctrl+Space", "preferences": {"menuBarEnabled": false},
			"mcpServers": {"app": {"command": "node", "args": ["build/index.js"]}}}`,
	} {
		cfg, err := loadFile(t, "mcp.json", body, nil)
		if err != nil || len(cfg.Servers) != 1 || cfg.Servers[0].Command != "node" {
			t.Errorf("%s: %v, %+v", name, err, cfg)
		}
	}
	_, err := loadFile(t, "mcp.json", `{"default": {}, "mcpServers": {"app": {"command": "node"}}}`, nil)
	if err == nil || !strings.Contains(err.Error(), "default: unknown field") {
		t.Errorf("a typo of defaults beside mcpServers: %v", err)
	}
}

// Codex's own config.toml is Codex's, MCP servers or not: a file of its
// settings alone has no server, and its keys are not mcpctl's to refuse.
func TestCodexFileWithoutServers(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ".codex", "config.toml")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte("model = \"o3\"\napproval_policy = \"never\"\n[profiles.x]\nmodel = \"y\"\n"), 0o644)
	_, err := LoadFiles([]string{p}, Options{LookupEnv: env(nil), WorkDir: dir})
	var ce *Error
	if !errors.As(err, &ce) || ce.Msg != "no servers defined" || !strings.Contains(ce.Hint, "[mcp_servers.fs]") {
		t.Errorf("err = %v", err)
	}
	// As every problem of the files, it comes as Errors (the package
	// says so); it came as a lone *Error.
	if _, ok := err.(Errors); !ok {
		t.Errorf("err is a %T, want Errors", err)
	}
}
