package config

import (
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"
)

// Redacted replaces a secret in `config show`.
const Redacted = "<redacted>"

// A ResolvedServer is a server as mcpctl will run it: defaults applied,
// names normalised, ${...} expanded, paths absolute. It is the same for
// equivalent JSON, TOML and Codex files.
type ResolvedServer struct {
	Type    string            `json:"type"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	EnvFile string            `json:"envFile,omitempty"`
	// InheritEnv is false, or a list of globs, when not the whole
	// environment.
	InheritEnv       any               `json:"inheritEnv,omitempty"`
	Cwd              string            `json:"cwd,omitempty"`
	URL              string            `json:"url,omitempty"`
	Headers          map[string]string `json:"headers,omitempty"`
	CAFile           string            `json:"caFile,omitempty"`
	ClientCert       string            `json:"clientCert,omitempty"`
	ClientKey        string            `json:"clientKey,omitempty"`
	StartupTimeout   string            `json:"startupTimeout"`
	RequestTimeout   string            `json:"requestTimeout"`
	ShutdownTimeout  string            `json:"shutdownTimeout"`
	IdleTimeout      string            `json:"idleTimeout,omitempty"`
	CacheTTL         string            `json:"cacheTTL"`
	DependsOn        []string          `json:"dependsOn,omitempty"`
	Disabled         bool              `json:"disabled,omitempty"`
	Activation       string            `json:"activation"`
	Restart          string            `json:"restart"`
	MaxRestarts      int               `json:"maxRestarts"`
	FailureThreshold int               `json:"failureThreshold"`
	HealthCheck      string            `json:"healthCheck,omitempty"`
	Limits           *ResolvedLimits   `json:"limits,omitempty"`
	IncludeTools     []string          `json:"includeTools,omitempty"`
	ExcludeTools     []string          `json:"excludeTools,omitempty"`
	Roots            []string          `json:"roots,omitempty"`
	ProtocolVersion  string            `json:"protocolVersion,omitempty"`
	Sampling         *ResolvedHook     `json:"sampling,omitempty"`
	Elicitation      *ResolvedHook     `json:"elicitation,omitempty"`
}

// A ResolvedHook is a hook as mcpctl will run it.
type ResolvedHook struct {
	Command string `json:"command"`
	Timeout string `json:"timeout"`
}

// ResolvedLimits are limits in the units the config uses.
type ResolvedLimits struct {
	Memory    int64  `json:"memory,omitempty"`
	CPUTime   string `json:"cpuTime,omitempty"`
	OpenFiles int    `json:"openFiles,omitempty"`
	Processes int    `json:"processes,omitempty"`
}

// Resolved returns the servers as mcpctl will run them, by name. Env and
// header values, and any other value that came from the environment or an
// input, are replaced by "<redacted>" unless showSecrets.
func (c *Config) Resolved(showSecrets bool) map[string]*ResolvedServer {
	out := map[string]*ResolvedServer{}
	for _, s := range c.Servers {
		out[s.Name] = s.resolved(showSecrets)
	}
	return out
}

// Same reports whether o runs exactly as s does: what a reload keeps
// running. Where the server is written does not count, nor a change of
// roots that keeps some, nor of its hooks (asked when a request comes),
// nor of what is read when it is needed rather than when the server
// starts: its startup, request and shutdown timeouts, cacheTTL,
// failureThreshold, restart and maxRestarts (a new requestTimeout must not
// kill the calls in flight).
func (s *Server) Same(o *Server) bool {
	return s.Name == o.Name && reflect.DeepEqual(s.kept(), o.kept())
}

// Equal reports whether o has every setting of s: only where it is written
// may differ.
func (s *Server) Equal(o *Server) bool {
	return s.Name == o.Name && reflect.DeepEqual(s.resolved(true), o.resolved(true))
}

// kept is the server's settings without those Same lets change.
func (s *Server) kept() *ResolvedServer {
	// Roots change without a restart (the server is told), unless they
	// come or go: offering roots at all is settled at the handshake. So
	// only whether there are any is kept.
	r := s.resolved(true)
	if len(r.Roots) > 0 {
		r.Roots = []string{"…"}
	}
	r.Sampling, r.Elicitation = nil, nil
	r.StartupTimeout, r.RequestTimeout, r.ShutdownTimeout, r.CacheTTL = "", "", "", ""
	r.FailureThreshold, r.Restart, r.MaxRestarts = 0, "", 0
	return r
}

func (s *Server) resolved(showSecrets bool) *ResolvedServer {
	hide := func(v string) string {
		if showSecrets {
			return v
		}
		return s.Redact(v)
	}
	hideAll := func(vs []string) []string {
		if vs == nil {
			return nil
		}
		out := make([]string, len(vs))
		for i, v := range vs {
			out[i] = hide(v)
		}
		return out
	}
	// Every field that takes ${...} may hold a secret.
	r := &ResolvedServer{
		Type: s.Type, Command: hide(s.Command), EnvFile: hide(s.EnvFile), URL: hide(s.URL),
		CAFile: hide(s.CAFile), ClientCert: hide(s.ClientCert), ClientKey: hide(s.ClientKey),
		StartupTimeout: dur(s.StartupTimeout), RequestTimeout: dur(s.RequestTimeout),
		ShutdownTimeout: dur(s.ShutdownTimeout), CacheTTL: dur(s.CacheTTL),
		DependsOn: s.DependsOn, Disabled: s.Disabled, Activation: s.Activation,
		Restart: s.Restart, MaxRestarts: s.MaxRestarts, FailureThreshold: s.FailureThreshold, IncludeTools: hideAll(s.IncludeTools),
		ExcludeTools: hideAll(s.ExcludeTools), Roots: hideAll(s.Roots), ProtocolVersion: s.ProtocolVersion,
	}
	if s.IsStdio() {
		r.Cwd = hide(s.Cwd)
	}
	for _, h := range []struct {
		hook *Hook
		dst  **ResolvedHook
	}{{s.Sampling, &r.Sampling}, {s.Elicitation, &r.Elicitation}} {
		if h.hook != nil {
			*h.dst = &ResolvedHook{Command: hide(h.hook.Command), Timeout: dur(h.hook.Timeout)}
		}
	}
	if s.IdleTimeout > 0 {
		r.IdleTimeout = dur(s.IdleTimeout)
	}
	if s.HealthInterval > 0 {
		r.HealthCheck = "every " + dur(s.HealthInterval)
	}
	for _, a := range s.Args {
		r.Args = append(r.Args, hide(a))
	}
	r.Env = redactAll(s.Env, showSecrets)
	switch {
	case s.InheritEnv == nil:
	case len(s.InheritEnv) == 0:
		r.InheritEnv = false
	default:
		r.InheritEnv = hideAll(s.InheritEnv)
	}
	r.Headers = redactAll(s.Headers, showSecrets)
	if s.Limits.Any() {
		r.Limits = &ResolvedLimits{Memory: s.Limits.Memory, OpenFiles: s.Limits.OpenFiles, Processes: s.Limits.Processes}
		if s.Limits.CPUTime > 0 {
			r.Limits.CPUTime = dur(s.Limits.CPUTime)
		}
	}
	return r
}

func dur(d time.Duration) string { return d.String() }

// redactAll hides every value of an env or headers map: they hold tokens
// whether they were typed in or expanded.
func redactAll(m map[string]string, show bool) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if show {
			out[k] = v
		} else {
			out[k] = Redacted
		}
	}
	return out
}

// Document returns the config as written, merged into one "servers" object
// (files in order), with env and header values redacted unless
// showSecrets: what `config show` prints without --resolved.
func (c *Config) Document(showSecrets bool) map[string]any {
	servers := map[string]any{}
	for _, s := range c.Servers {
		servers[s.Name] = s.written(showSecrets)
	}
	doc := map[string]any{"servers": servers}
	if len(c.Inputs) > 0 {
		inputs := slices.Clone(c.Inputs)
		for i, in := range inputs {
			if in.Password && in.Default != "" && !showSecrets {
				inputs[i].Default = Redacted
			}
		}
		doc["inputs"] = inputs
	}
	if c.LogLevel != "" {
		doc["logLevel"] = c.LogLevel
	}
	return doc
}

// urlPassword finds the password of a URL's userinfo (scheme://user:PASS@host),
// or a user alone (scheme://TOKEN@host), as written: it is not decoded,
// as a parsed URL re-encodes what it gives back. A URL that parses is
// taken as it parses; one that does not (a ${...} in it, a character that
// should have been encoded) is searched to its last @ before a ? or #.
func urlPassword(text string) (start, end int, ok bool) {
	i := strings.Index(text, "://")
	if i < 0 {
		return 0, 0, false
	}
	auth := i + 3
	stop := len(text)
	if u, err := url.Parse(text); err == nil && u.Host != "" {
		if u.User == nil {
			return 0, 0, false
		}
		if j := strings.IndexByte(text[auth:], '/'); j >= 0 {
			stop = auth + j
		}
	} else if j := strings.IndexAny(text[auth:], "?#"); j >= 0 {
		stop = auth + j
	}
	at := strings.LastIndexByte(text[auth:stop], '@')
	if at <= 0 {
		return 0, 0, false
	}
	colon := strings.IndexByte(text[auth:auth+at], ':')
	switch {
	case colon < 0 && !strings.Contains(text[auth:auth+at], "/"):
		// A user alone is a token, unless too short to be one.
		return auth, auth + at, at >= 8
	case colon < 0 || colon+1 == at || strings.Contains(text[auth:auth+colon], "/"):
		return 0, 0, false
	}
	return auth + colon + 1, auth + at, true
}

// hideURLSecrets is text with the secrets of its URL (urlSecrets) shown
// as Redacted.
func hideURLSecrets(text string) string {
	spans := urlSecrets(text)
	for i := len(spans) - 1; i >= 0; i-- {
		text = text[:spans[i][0]] + Redacted + text[spans[i][1]:]
	}
	return text
}

// urlSecrets are the spans of a URL's secrets as written, in order: its
// password (urlPassword), and the values of query parameters named as
// keys are (?api_key=, ?token=, ?access_token=), which hosted MCP
// servers take in place of a header. A short one is hidden where the URL
// is shown; Redact leaves it in free text, as it does any short secret.
func urlSecrets(text string) [][2]int {
	var spans [][2]int
	if start, end, ok := urlPassword(text); ok {
		spans = append(spans, [2]int{start, end})
	}
	q := strings.IndexByte(text, '?')
	if q < 0 {
		return spans
	}
	end := len(text)
	if h := strings.IndexByte(text[q:], '#'); h >= 0 {
		end = q + h
	}
	for at := q + 1; at < end; {
		param := text[at:end]
		if amp := strings.IndexByte(param, '&'); amp >= 0 {
			param = param[:amp]
		}
		if name, value, ok := strings.Cut(param, "="); ok && value != "" && secretParam(name) {
			start := at + len(name) + 1
			spans = append(spans, [2]int{start, start + len(value)})
		}
		at += len(param) + 1
	}
	return spans
}

// secretParam says whether a query parameter's name is one a key or
// token goes in.
func secretParam(name string) bool {
	n := strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(name))
	if n == "key" || n == "sig" || n == "pwd" {
		return true
	}
	for _, part := range []string{"apikey", "token", "secret", "passw", "auth", "credential", "signature", "accesskey"} {
		if strings.Contains(n, part) {
			return true
		}
	}
	return false
}

// written is the server's object as its file has it.
func (s *Server) written(showSecrets bool) map[string]any {
	out := map[string]any{}
	for k, v := range s.raw {
		out[k] = v
	}
	if u, ok := out["url"].(string); ok && !showSecrets {
		out["url"] = hideURLSecrets(u)
	}
	for _, field := range []string{"env", "headers"} {
		m, ok := out[field].(map[string]any)
		if !ok || showSecrets {
			continue
		}
		hidden := map[string]any{}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			hidden[k] = Redacted
		}
		out[field] = hidden
	}
	return out
}
