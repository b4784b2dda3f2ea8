package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func loadFile(t *testing.T, name, body string, vars map[string]string) (*Config, error) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(p, Options{LookupEnv: env(vars), WorkDir: dir})
}

func TestLoadShapes(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"vscode", `{"servers": {"b": {"command": "x"}, "a": {"type": "stdio", "command": "y", "args": ["1"]}}}`},
		{"claude", `{"mcpServers": {"b": {"command": "x"}, "a": {"command": "y", "args": ["1"]}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadFile(t, "mcp.json", tc.body, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(cfg.Names(), ","); got != "b,a" {
				t.Errorf("servers in file order: got %s, want b,a", got)
			}
			a := cfg.Server("a")
			if a.Command != "y" || len(a.Args) != 1 || a.Type != "stdio" {
				t.Errorf("server a = %+v", a)
			}
			if a.StartupTimeout != DefaultStartupTimeout {
				t.Errorf("default startup timeout = %v", a.StartupTimeout)
			}
			if a.Cwd != cfg.Dir {
				t.Errorf("default cwd %q, want project dir %q", a.Cwd, cfg.Dir)
			}
			if a.Source != "mcp.json:1:37" && a.Source != "mcp.json:1:40" {
				t.Errorf("source = %s", a.Source)
			}
		})
	}
}

// Cline's and Roo Code's own fields in their mcpServers are theirs, left
// alone; in mcp.json's servers they are unknown, as are the rest.
func TestOtherClientsFields(t *testing.T) {
	cfg, err := loadFile(t, "mcp.json", `{"mcpServers": {"a": {"command": "x", "autoApprove": ["t"], "alwaysAllow": [], "disabled": false}}}`, nil)
	if err != nil || cfg.Server("a") == nil {
		t.Fatalf("cline's config: %v", err)
	}
	if _, err := loadFile(t, "mcp.json", `{"mcpServers": {"a": {"command": "x", "autoAprove": []}}}`, nil); err == nil || !strings.Contains(err.Error(), "autoAprove: unknown field") {
		t.Errorf("a typo: %v", err)
	}
	if _, err := loadFile(t, "mcp.json", `{"servers": {"a": {"command": "x", "autoApprove": []}}}`, nil); err == nil || !strings.Contains(err.Error(), "autoApprove: unknown field") {
		t.Errorf("in servers: %v", err)
	}
}

func TestLoadVSCodeProjectDir(t *testing.T) {
	cfg, err := loadFile(t, ".vscode/mcp.json", `{"servers": {"a": {"command": "x", "cwd": "sub"}}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(cfg.Dir) == ".vscode" {
		t.Errorf("project dir should be the parent of .vscode, got %s", cfg.Dir)
	}
	if want := filepath.Join(cfg.Dir, "sub"); cfg.Server("a").Cwd != want {
		t.Errorf("cwd = %s, want %s", cfg.Server("a").Cwd, want)
	}
}

func TestExpansion(t *testing.T) {
	body := `{"servers": {"a": {
  "command": "${BIN}",
  "args": ["${env:ARG}", "${MISSING:-dflt}", "${EMPTY:-dflt2}", "$$HOME", "$PLAIN", "${workspaceFolder}/x",
    "${MISSING:-${ARG}}", "${MISSING:-${MISSING2:-deep}}", "${MISSING:-{}}", "${MISSING:-a}b}", "${MISSING:-https://${NESTED}@host}"],
  "env": {"TOKEN": "Bearer ${TOKEN}"},
  "cwd": "${DIR:-.}",
  "startupTimeout": "1m30s"
}}}`
	cfg, err := loadFile(t, "mcp.json", body, map[string]string{"BIN": "srv", "ARG": "one", "EMPTY": "", "TOKEN": "s3cret", "NESTED": "n3sted-secret"})
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Server("a")
	// A default may name a variable too; a brace that opens no ${ is text.
	want := []string{"one", "dflt", "dflt2", "$HOME", "$PLAIN", cfg.Dir + "/x", "one", "deep", "{}", "ab}", "https://n3sted-secret@host"}
	if a.Command != "srv" || strings.Join(a.Args, "|") != strings.Join(want, "|") {
		t.Errorf("command %q args %q, want srv %q", a.Command, a.Args, want)
	}
	// What a default took from the environment is a secret like the rest,
	// alone too, as a server's stderr may repeat it.
	if shown := cfg.Resolved(false)["a"].Args; shown[6] != Redacted || shown[7] != "deep" {
		t.Errorf("shown args %q", shown)
	}
	if got := a.Redact("the url https://n3sted-secret@host was refused; token n3sted-secret"); strings.Contains(got, "n3sted") {
		t.Errorf("redacted: %s", got)
	}
	if a.Env["TOKEN"] != "Bearer s3cret" {
		t.Errorf("env = %v", a.Env)
	}
	if a.StartupTimeout != 90*time.Second {
		t.Errorf("startupTimeout = %v", a.StartupTimeout)
	}
	if a.Cwd != cfg.Dir {
		t.Errorf("cwd = %s", a.Cwd)
	}
}

// VS Code's ${workspaceFolderBasename}, ${pathSeparator} and ${/} expand
// as there; they read as environment variables that were not set.
func TestVSCodeVariables(t *testing.T) {
	cfg, err := loadFile(t, "mcp.json", `{"servers": {"a": {"command": "x", "args": ["${workspaceFolderBasename}", "${workspaceFolder}${/}y", "a${pathSeparator}b"]}}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Base(cfg.Dir), filepath.Join(cfg.Dir, "y"), "a/b"}
	if got := cfg.Server("a").Args; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("args %q, want %q", got, want)
	}
}

func TestSecretNotInError(t *testing.T) {
	// A value that was expanded must not come back in an error about a
	// neighbouring field.
	_, err := loadFile(t, "mcp.json", `{"servers": {"a": {"command": "x", "env": {"K": "${TOKEN}", "L": "${NOPE}"}}}}`, map[string]string{"TOKEN": "hunter2"})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %v", err)
	}
	// Nor in an error about the value itself.
	_, err = loadFile(t, "mcp.json", `{"servers": {"a": {"command": "x", "includeTools": ["${GLOB}"]}}}`, map[string]string{"GLOB": "[hunter2"})
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "is not a valid glob") {
		t.Fatalf("err = %v", err)
	}
}

// Every field that takes ${...} hides what came from the environment in
// config show --resolved: file paths, roots and tool globs too.
func TestResolvedHidesSecretsInEveryField(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "hunter2"), 0o755)
	os.WriteFile(filepath.Join(dir, "hunter2.env"), []byte("X=1\n"), 0o644)
	body := `{"servers": {
	  "a": {"command": "x", "cwd": "${TOKEN}", "envFile": "${TOKEN}.env", "roots": ["/srv/${TOKEN}"], "includeTools": ["${TOKEN}*"], "excludeTools": ["${TOKEN}"], "inheritEnv": ["${TOKEN}_*"]},
	  "r": {"url": "https://example.com/mcp", "caFile": "${TOKEN}.pem", "clientCert": "${TOKEN}.crt", "clientKey": "${TOKEN}.key"}}}`
	p := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(p, Options{LookupEnv: env(map[string]string{"TOKEN": "hunter2"}), WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, show := range []bool{false, true} {
		out, _ := json.Marshal(cfg.Resolved(show))
		if n := strings.Count(string(out), "hunter2"); (n > 0) != show || show && n != 9 {
			t.Errorf("showSecrets %v: the secret shown %d times in %s", show, n, out)
		}
	}
}

// A password written in a server's URL, and a password input's default,
// are secrets: config show, resolved or not, and the server's Redact hide
// them unless secrets are asked for.
// A key or token in a URL's query (?api_key=, as hosted servers take
// one) is a secret as a URL's password is, however short where the URL
// is shown; other parameters are shown.
func TestURLQueryKeysHidden(t *testing.T) {
	cfg, err := loadFile(t, "mcp.json", `{"servers": {"r": {"url": "https://mcp.example/sse?api_key=qsecret9&region=eu&Access-Token=tok%2F123&sig=x#frag"}}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	r := cfg.Server("r")
	enc.Encode([]any{cfg.Document(false), cfg.Resolved(false), r.Redact("dial " + r.URL + ": refused"), r.Redact("tok/123 was refused")})
	for _, secret := range []string{"qsecret9", "tok%2F123", "tok/123"} {
		if strings.Contains(out.String(), secret) {
			t.Errorf("%s shown: %s", secret, out.String())
		}
	}
	if !strings.Contains(out.String(), "https://mcp.example/sse?api_key=<redacted>&region=eu&Access-Token=<redacted>&sig=<redacted>#frag") {
		t.Errorf("the URL is not shown with its keys hidden: %s", out.String())
	}
}

func TestURLPasswordAndPasswordDefaultHidden(t *testing.T) {
	cfg, err := loadFile(t, "mcp.json", `{"inputs": [{"id": "k", "type": "promptString", "password": true, "default": "pwdefault"}],
		"servers": {"r": {"url": "http://user:literalpass@127.0.0.1:1/mcp"}, "a": {"command": "x", "env": {"K": "${input:k}"}}}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, secrets := range []bool{false, true} {
		var out strings.Builder
		enc := json.NewEncoder(&out)
		enc.SetEscapeHTML(false)
		if err := enc.Encode([]any{cfg.Document(secrets), cfg.Resolved(secrets)}); err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{"literalpass", "pwdefault"} {
			if strings.Contains(out.String(), secret) != secrets {
				t.Errorf("showSecrets %v: %s shown %v in %s", secrets, secret, !secrets, out.String())
			}
		}
		if !secrets && !strings.Contains(out.String(), "http://user:<redacted>@127.0.0.1:1/mcp") {
			t.Errorf("the URL is not shown with its password hidden: %s", out.String())
		}
	}
	r := cfg.Server("r")
	if got := r.Redact(`Post "` + r.URL + `/x": refused`); got != `Post "http://user:<redacted>@127.0.0.1:1/mcp/x": refused` {
		t.Errorf("Redact = %s", got)
	}
	// Written as Go would not write it back: not parsed, so not re-encoded.
	for _, pass := range []string{"Hunter2!", "%41bc%2fdef", "p@ss(w)'rd*", "p@SS", "pa/ss1234"} {
		for _, u := range []string{"http://user:" + pass + "@h.example/mcp", "http://user:" + pass + "@${QA_HOST}/mcp"} {
			cfg, err := loadFile(t, "mcp.json", `{"servers": {"r": {"url": "`+u+`"}}}`, map[string]string{"QA_HOST": "h.example"})
			if err != nil {
				// One that does not parse (an unencoded /) is an error
				// that does not show it either.
				if strings.Contains(err.Error(), pass) || !strings.Contains(err.Error(), "not a URL with a host") {
					t.Errorf("%s: %v", u, err)
				}
				continue
			}
			var out strings.Builder
			enc := json.NewEncoder(&out)
			enc.SetEscapeHTML(false)
			r := cfg.Server("r")
			enc.Encode([]any{cfg.Document(false), cfg.Resolved(false), r.Redact(r.URL), r.Redact("dial " + r.URL + ": refused")})
			if strings.Contains(out.String(), pass) || !strings.Contains(out.String(), "user:<redacted>@") {
				t.Errorf("%s: the password is shown: %s", u, out.String())
			}
		}
	}
}

// Roots written as the file:// URIs they are sent as, and ~ alone, are
// the directories they name; another scheme is an error.
func TestRootsAsURIsAndHome(t *testing.T) {
	dir := t.TempDir()
	vars := env(nil)
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory:", err)
	}
	cfg, err := Parse("inline", []byte(`{"servers": {"a": {"command": "x", "cwd": "~", "roots": ["file:///srv/data", "file://localhost/var", "~", "~/x", "rel", "file:/etc", "file:rel2"]}}}`), dir, vars)
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Server("a")
	want := []string{"/srv/data", "/var", home, filepath.Join(home, "x"), filepath.Join(dir, "rel"), "/etc", filepath.Join(dir, "rel2")}
	if !slices.Equal(a.Roots, want) || a.Cwd != home {
		t.Errorf("roots %q, cwd %q; want %q, %s", a.Roots, a.Cwd, want, home)
	}
	_, err = Parse("inline", []byte(`{"servers": {"a": {"command": "x", "roots": ["https://h/x"]}}}`), dir, vars)
	if err == nil || !strings.Contains(err.Error(), `servers.a.roots[0]: "https://h/x" is not a directory of this machine`) {
		t.Errorf("err = %v", err)
	}
}

// A user alone in a URL (a token: https://TOKEN@host) is hidden as a
// password is; a URL whose password was not encoded is told so, hidden.
func TestURLUserTokenHidden(t *testing.T) {
	cfg, err := loadFile(t, "mcp.json", `{"servers": {"r": {"url": "http://TOKENONLY1@h.example/mcp"}}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Server("r")
	if doc, _ := json.Marshal(cfg.Document(false)); strings.Contains(string(doc), "TOKENONLY1") || strings.Contains(r.Redact("dial "+r.URL), "TOKENONLY1") {
		t.Errorf("the token is shown: %s", doc)
	}
	_, err = loadFile(t, "mcp.json", `{"servers": {"r": {"url": "http://u:PW#frag@h.example/mcp"}}}`, nil)
	if err == nil || strings.Contains(err.Error(), "PW#frag") || !strings.Contains(err.Error(), `servers.r.url: not a URL with a host`) {
		t.Errorf("err = %v", err)
	}
}

// A cwd that is a file is not said to be missing.
func TestCheckCwdNotADirectory(t *testing.T) {
	cfg, err := loadFile(t, "mcp.json", `{"servers": {"a": {"command": "sh", "cwd": "mcp.json"}, "b": {"command": "sh", "cwd": "nodir"}}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a": "mcp.json is not a directory", "b": "nodir does not exist"} {
		errs := cfg.Server(name).Check()
		if len(errs) != 1 || !strings.HasSuffix(errs[0].Msg, want) {
			t.Errorf("server %s: %v, want one error ending %q", name, errs, want)
		}
	}
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	if _, err := Find("", env(nil), dir); err == nil || !strings.Contains(err.Error(), "./mcp.json, ./.vscode/mcp.json, ./.mcp.json") {
		t.Fatalf("err = %v", err)
	}
	os.MkdirAll(filepath.Join(dir, ".vscode"), 0o755)
	os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(dir, ".vscode", "mcp.json"), []byte("{}"), 0o644)
	if p, _ := Find("", env(nil), dir); p != filepath.Join(dir, ".vscode", "mcp.json") {
		t.Errorf("found %s, want .vscode/mcp.json before .mcp.json", p)
	}
	os.WriteFile(filepath.Join(dir, "other.json"), []byte("{}"), 0o644)
	if p, _ := Find("", env(map[string]string{"MCPCTL_CONFIG": "other.json"}), dir); p != filepath.Join(dir, "other.json") {
		t.Errorf("MCPCTL_CONFIG not honoured: %s", p)
	}
	if _, err := Find("missing.json", env(map[string]string{"MCPCTL_CONFIG": "other.json"}), dir); err == nil || !strings.Contains(err.Error(), "missing.json does not exist") {
		t.Errorf("--config must win over MCPCTL_CONFIG and must exist: %v", err)
	}
}

func TestParse(t *testing.T) {
	dir := t.TempDir()
	cfg, err := Parse("inline", []byte(`{"servers": {"a": {"command": "x", "cwd": "sub", "args": ["${V}"]}}}`), dir, env(map[string]string{"V": "v"}))
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Server("a"); a.Cwd != filepath.Join(dir, "sub") || a.Args[0] != "v" || cfg.Path != "" {
		t.Errorf("%+v %+v", cfg, a)
	}
	if _, err := Parse("inline", []byte(`{"servers": {"a": {}}}`), dir, nil); err == nil || !strings.HasPrefix(err.Error(), "inline:1:19: servers.a.command") {
		t.Errorf("error: %v", err)
	}
}

// A line comment on the last line, with no line break after it (as VS Code
// saves a file), is a comment: hujson wanted the break.
func TestCommentOnLastLineWithoutNewline(t *testing.T) {
	for _, text := range []string{
		`{"servers": {"a": {"command": "x"}}} // tail`,
		"{\"servers\": {\"a\": {\"command\": \"x\"}}}\n// tail",
		`{"servers": {"a": {"command": "x", "args": ["http://h/"]}}}`,
	} {
		if cfg, err := Parse("mcp.json", []byte(text), t.TempDir(), nil); err != nil || cfg.Server("a") == nil {
			t.Errorf("%q: %v", text, err)
		}
	}
	// An error's position is unchanged by it.
	if _, err := Parse("mcp.json", []byte(`{"servers": {"a": {"command": 1}}} // tail`), t.TempDir(), nil); err == nil || !strings.HasPrefix(err.Error(), "mcp.json:1:31: servers.a.command") {
		t.Errorf("error: %v", err)
	}
}

// JSON Schema's integers may be written 5.0 or 2e0; they used to read as 0.
func TestWholeNumbersWrittenAsFloats(t *testing.T) {
	cfg, err := Parse("inline", []byte(`{"servers": {"a": {"command": "x", "maxRestarts": 5.0, "failureThreshold": 2e0,
		"limits": {"openFiles": 1000.0, "processes": 1e2, "memory": 1e9}}}}`), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Server("a")
	if a.MaxRestarts != 5 || a.FailureThreshold != 2 || a.Limits.OpenFiles != 1000 || a.Limits.Processes != 100 || a.Limits.Memory != 1e9 {
		t.Errorf("maxRestarts %d, failureThreshold %d, limits %+v", a.MaxRestarts, a.FailureThreshold, a.Limits)
	}
}

// "0" is a duration, as Go reads it: cacheTTL "0" turns the cache off as
// 0 does; where zero is not allowed it says so, not that "0" is no duration.
func TestZeroDurationString(t *testing.T) {
	cfg, err := Parse("inline", []byte(`{"servers": {"a": {"command": "x", "cacheTTL": "0"}}}`), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if ttl := cfg.Server("a").CacheTTL; ttl != 0 {
		t.Errorf("cacheTTL %v", ttl)
	}
	_, err = Parse("inline", []byte(`{"servers": {"a": {"command": "x", "requestTimeout": "0"}}}`), t.TempDir(), nil)
	if err == nil || !strings.HasSuffix(err.Error(), `servers.a.requestTimeout: expected a duration above zero, got "0"`) {
		t.Errorf("requestTimeout 0: %v", err)
	}
}

// A ws:// or wss:// url without a type is a WebSocket server.
func TestWebSocketTypeFromURL(t *testing.T) {
	cfg, err := Parse("inline", []byte(`{"servers": {"w": {"url": "wss://h/mcp"}, "W": {"url": "WSS://h/mcp"}, "h": {"url": "https://h/mcp"}}}`), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if w, W, h := cfg.Server("w"), cfg.Server("W"), cfg.Server("h"); w.Type != "ws" || W.Type != "ws" || h.Type != "http" || !h.TypeImplied {
		t.Errorf("w: %s, W: %s, h: %s (implied %v)", w.Type, W.Type, h.Type, h.TypeImplied)
	}
}

// Other clients' names for a transport load as mcpctl's own.
func TestTransportAliases(t *testing.T) {
	for alias, want := range map[string]string{"local": "stdio", "streamable-http": "http", "streamable_http": "http", "streamableHttp": "http", "remote": "http", "websocket": "ws"} {
		target := map[string]string{"stdio": `"command": "x"`, "http": `"url": "http://127.0.0.1:1/mcp"`, "ws": `"url": "ws://127.0.0.1:1/mcp"`}[want]
		body := `{"servers": {"s": {"type": "` + alias + `", ` + target + `}}}`
		cfg, err := loadFile(t, "mcp.json", body, nil)
		if err != nil {
			t.Errorf("type %s: %v", alias, err)
			continue
		}
		if got := cfg.Servers[0].Type; got != want {
			t.Errorf("type %s loads as %s, want %s", alias, got, want)
		}
	}
}

// A hook's command may use the variables it is given as it runs
// (MCPCTL_SERVER, MCPCTL_METHOD): they are left to its shell, not read
// from mcpctl's environment, where they are not set.
func TestHookVariablesLeftToTheShell(t *testing.T) {
	cfg, err := loadFile(t, "mcp.json", `{"sampling": {"command": "log ${MCPCTL_SERVER} ${MCPCTL_METHOD} $${MCPCTL_SERVER} ${WHO} ${MCPCTL_SERVER}${MCPCTL_METHOD} $$$${MCPCTL_SERVER} ${MCPCTL_METHOD:-none}"}, "servers": {"a": {"command": "x"}}}`, map[string]string{"WHO": "me"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Server("a").Sampling.Command, "log ${MCPCTL_SERVER} ${MCPCTL_METHOD} ${MCPCTL_SERVER} me ${MCPCTL_SERVER}${MCPCTL_METHOD} $${MCPCTL_SERVER} ${MCPCTL_METHOD:-none}"; got != want {
		t.Errorf("the hook's command: %q, want %q", got, want)
	}
}

// A command the system would refuse to run is said before anything
// starts, as one not found is: exec would say "no such file" of a script
// whose interpreter is missing.
func TestCommandThatCannotRun(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"badshebang": "#!/nonexistent/interp\n",
		"envshebang": "#!/usr/bin/env no-such-interpreter-x\n",
		"garbage":    "not a program\n",
		"fine":       "#!/bin/sh\nexit 0\n",
		"crlf":       "#!/bin/sh\r\nexit 0\r\n",
		"envflags":   "#!/usr/bin/env -u NO_SUCH_VAR -S sh -e\n",
		"envalone":   "#!/usr/bin/env -S\n",
		"envspace":   "#!/usr/bin/env sh -e\n",
		"envsplit":   "#!/usr/bin/env -vS sh -e\n",
		"envsplitx":  "#!/usr/bin/env -S -u X no-such-interpreter-y -e\n",
		"envi":       "#!/usr/bin/env -i\n",
		"envinode":   "#!/usr/bin/env -i sh\n",
		"envassign":  "#!/usr/bin/env A=1 sh\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(dir, "adir"), 0o755)
	for command, want := range map[string]string{
		"./badshebang": "./badshebang needs the interpreter /nonexistent/interp (its #! line), which is not there",
		"./envshebang": "./envshebang needs the interpreter no-such-interpreter-x (its #! line), which is not there",
		"./garbage":    "", // the kernel may know it (binfmt_misc); exec says if not
		"./crlf":       "./crlf's #! line ends in a carriage return",
		// Linux passes all after the interpreter as one word: env is
		// given "-u NO_SUCH_VAR -S sh -e", unsets a variable of a strange
		// name and runs the script again, for ever.
		"./envflags":  `./envflags's #! line gives env "-u NO_SUCH_VAR -S sh -e" as one word`,
		"./envspace":  `./envspace's #! line runs env with "sh -e": Linux passes all after the interpreter as one word`,
		"./envsplit":  "",
		"./envsplitx": "./envsplitx needs the interpreter no-such-interpreter-y (its #! line), which is not there",
		"./envi":      `./envi's #! line gives env "-i" as one word`,
		// GNU env refuses the space: "invalid option -- ' '".
		"./envinode": `./envinode's #! line gives env "-i sh" as one word (Linux passes all after the interpreter so), which env refuses`,
		// One assignment, of "1 sh": no program.
		"./envassign":    `./envassign's #! line gives env "A=1 sh" as one word`,
		"./envalone":     "./envalone's #! line names env but no program for it to run",
		"./adir":         "./adir is a directory",
		"sh y":           `command not found: sh y`,
		"./no such/file": `command not found: ./no such/file`,
		"./fine":         "",
		// A program in the cwd, named without ./, is not looked for there.
		"fine": "command not found: fine",
	} {
		body, _ := json.Marshal(map[string]any{"servers": map[string]any{"a": map[string]any{"command": command}}})
		p := filepath.Join(dir, "mcp.json")
		os.WriteFile(p, body, 0o644)
		cfg, err := Load(p, Options{LookupEnv: env(nil), WorkDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		errs := cfg.Check()
		if want == "" {
			if len(errs) > 0 {
				t.Errorf("%s: %v", command, errs)
			}
			continue
		}
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), want) {
			t.Errorf("%s: %v, want %q", command, errs, want)
		}
		// A command line in "command": its arguments belong in args; a
		// path with a space in it is not one.
		if command == "sh y" && (len(errs) != 1 || !slices.Contains(errs[0].Hints(), `put the arguments in "args": "command": "sh", "args": ["y"]`)) {
			t.Errorf("%s: hints %v", command, errs[0].Hints())
		}
		if command == "fine" && !slices.Contains(errs[0].Hints(), fmt.Sprintf(`fine is in the server's cwd (%s), not on its PATH: write "command": "./fine"`, dir)) {
			t.Errorf("%s: hints %v", command, errs[0].Hints())
		}
		if hint := map[string]string{
			"./envflags":  "begin with -S, which splits the rest into words: #!/usr/bin/env -S -u NO_SUCH_VAR sh -e",
			"./envspace":  "split it with -S: #!/usr/bin/env -S sh -e",
			"./envi":      "name a program after -S, e.g. #!/usr/bin/env -S -i node",
			"./envinode":  "begin with -S, which splits the rest into words: #!/usr/bin/env -S -i sh",
			"./envassign": "begin with -S, which splits the rest into words: #!/usr/bin/env -S A=1 sh",
		}[command]; hint != "" && !slices.Contains(errs[0].Hints(), hint) {
			t.Errorf("%s: hints %v, want %q", command, errs[0].Hints(), hint)
		}
		if command == "./no such/file" && (len(errs) != 1 || slices.ContainsFunc(errs[0].Hints(), func(h string) bool { return strings.Contains(h, "args") })) {
			t.Errorf("%s: hints %v", command, errs[0].Hints())
		}
	}
}

// The hint to move a command line's arguments to args shows them as the
// message shows the command: a secret in them, spaces and all, redacted.
func TestCommandLineHintHidesSecrets(t *testing.T) {
	cfg, err := loadFile(t, "mcp.json", `{"servers": {"a": {"command": "${CMD}"}, "b": {"command": "sh --key=${KEY}"}}}`,
		map[string]string{"CMD": "sh --api-key s3cr3tvalue", "KEY": "abc def ghi"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ce := range cfg.Check() {
		all := ce.Error() + strings.Join(ce.Hints(), " ")
		for _, secret := range []string{"s3cr3tvalue", "api-key", "abc", "ghi"} {
			if strings.Contains(all, secret) {
				t.Errorf("%q shown: %s", secret, all)
			}
		}
	}
}

// An argument or env value longer than Linux passes a program is said
// before anything starts, not met as "argument list too long" at exec.
func TestArgTooLong(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux's limit")
	}
	body, _ := json.Marshal(map[string]any{"servers": map[string]any{"a": map[string]any{
		"command": "sh", "args": []string{"ok", strings.Repeat("z", 200000)}, "env": map[string]string{"BIG": strings.Repeat("y", 131072), "SMALL": "1"}}}})
	cfg, err := loadFile(t, "mcp.json", string(body), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ce := range cfg.Check() {
		got = append(got, ce.Msg)
	}
	want := []string{
		"args[1] is 200000 bytes: Linux passes a program no argument or environment string over 128 KiB",
		"env BIG is 131072 bytes: Linux passes a program no argument or environment string over 128 KiB",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%q\nwant\n%q", got, want)
	}
}

// --header replaces a header of the config of the same name in another
// case: both were sent, one winning at random.
func TestAddHeaderFoldsCase(t *testing.T) {
	s := &Server{Name: "r", Type: "http", Headers: map[string]string{"Authorization": "Bearer file", "X-Other": "o"}}
	s.AddHeader("authorization", "Bearer flag")
	if len(s.Headers) != 2 || s.Headers["authorization"] != "Bearer flag" || s.Headers["X-Other"] != "o" {
		t.Errorf("headers: %v", s.Headers)
	}
}

// A NUL byte in args passed the check, and the start failed with exec's
// "invalid argument", naming no field.
func TestArgWithNUL(t *testing.T) {
	cfg, err := loadFile(t, "mcp.json", `{"servers": {"a": {"command": "sh", "args": ["ok", "a\u0000b"]}}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	errs := cfg.Check()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "args[1] holds a NUL byte, which a program's arguments cannot carry (server a, mcp.json:1:") {
		t.Errorf("check: %v", errs)
	}
	// In the command: said once, not also as a command not found.
	cfg, err = loadFile(t, "mcp.json", `{"servers": {"a": {"command": "s\u0000h"}}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if errs := cfg.Check(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "the command holds a NUL byte") {
		t.Errorf("check: %v", errs)
	}
	// In a path: said so, not "invalid argument" or "does not exist" with
	// the byte invisible.
	cfg, err = loadFile(t, "mcp.json", `{"servers": {"a": {"command": "sh", "cwd": "/tmp\u0000x", "roots": [".", "/tmp\u0000y"]}}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	errs = cfg.Check()
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	if len(errs) != 2 || !strings.Contains(got[0], "the working directory holds a NUL byte, which a path cannot carry (server a, mcp.json:1:") ||
		!strings.Contains(got[1], "roots[1] holds a NUL byte, which a path cannot carry") {
		t.Errorf("check:\n%s", strings.Join(got, "\n"))
	}
}

// A root that is not there is refused: server-filesystem skipped it and
// served the other roots, or the project, unsaid. The error is placed at
// that root, and names it.
func TestRootMissing(t *testing.T) {
	body := `{"servers": {"a": {"command": "sh", "roots": [".", "./typo-dir"]}}}`
	cfg, err := loadFile(t, "mcp.json", body, nil)
	if err != nil {
		t.Fatal(err)
	}
	errs := cfg.Check()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "roots[1] "+filepath.Join(cfg.Dir, "typo-dir")+" does not exist") {
		t.Fatalf("check: %v", errs)
	}
	e := errs[0].AsConfigError()
	if col := strings.Index(body, `"./typo-dir"`) + 1; e.Field != "servers.a.roots[1]" || e.Line != 1 || e.Col != col {
		t.Errorf("placed at %d:%d %s, want 1:%d servers.a.roots[1]", e.Line, e.Col, e.Field, col)
	}
}

// A command not found gets a hint that says where it was looked for: a
// relative path from the server's cwd (and the project directory's, when
// it is there), an absolute path not there at all, a name on the PATH the
// server's own env gives it.
func TestCommandNotFoundHints(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
	os.WriteFile(filepath.Join(dir, "bin", "x"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "bin", "onpath"), []byte("#!/bin/sh\n"), 0o755)
	t.Setenv("PATH", filepath.Join(dir, "bin")+string(filepath.ListSeparator)+os.Getenv("PATH"))
	for _, tc := range []struct {
		name   string
		server map[string]any
		want   string // the hint; $DIR is dir
	}{
		{"relative, in the project directory", map[string]any{"command": "./bin/x", "cwd": "sub"},
			`a relative command is found from the server's cwd, $DIR/sub, which has no ./bin/x; the project directory has it: write "command": "${workspaceFolder}/bin/x"`},
		{"relative, nowhere", map[string]any{"command": "bin/nope", "cwd": "sub"},
			`a relative command is found from the server's cwd, $DIR/sub, which has no bin/nope`},
		{"absolute", map[string]any{"command": filepath.Join(dir, "nope.sh")},
			"there is no such file: fix the command of server a"},
		{"hidden by the server's own PATH", map[string]any{"command": "onpath", "env": map[string]any{"PATH": "/nonexistent"}},
			`onpath is not on the PATH the server's env gives it, but is in $DIR/bin: add that directory to env.PATH, or write "command": "$DIR/bin/onpath"`},
		{"on no PATH", map[string]any{"command": "mcpctl-no-such-program", "env": map[string]any{"PATH": "/nonexistent"}},
			"mcpctl-no-such-program is not on the PATH the server's env gives it: install it there, or fix env.PATH"},
		{"a name", map[string]any{"command": "mcpctl-no-such-program"},
			"install mcpctl-no-such-program, or fix the command of server a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"servers": map[string]any{"a": tc.server}})
			p := filepath.Join(dir, "mcp.json")
			os.WriteFile(p, body, 0o644)
			cfg, err := Load(p, Options{LookupEnv: env(nil), WorkDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			errs := cfg.Check()
			want := strings.ReplaceAll(tc.want, "$DIR", dir)
			if len(errs) != 1 || !slices.Equal(errs[0].Hints(), []string{want}) {
				t.Errorf("%v\nwant hint %q", errs, want)
				for _, e := range errs {
					t.Logf("hints %q", e.Hints())
				}
			}
		})
	}
}
