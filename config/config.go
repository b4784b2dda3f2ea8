// Package config finds and reads the file that lists a project's MCP servers
// (mcp.json in the VS Code shape with "servers", or the Claude and Cursor
// shape with "mcpServers"), checks it against the schema in
// [schemas.ConfigJSON], and expands ${VAR} references.
//
// Every problem is an [*Error] placed at file:line:column with the field's
// path; all problems of a file are reported together as [Errors].
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mcpctl/mcpctl/schemas"
)

// DefaultStartupTimeout bounds a server's start and initialize handshake
// when its config says nothing.
const DefaultStartupTimeout = 30 * time.Second

// DefaultCacheTTL is how long a server's prompts and resource reads stay
// cached in the session when its config says nothing.
const DefaultCacheTTL = 5 * time.Minute

// A Config is a loaded config file.
type Config struct {
	// File is the path as shown in messages: relative to the working
	// directory when below it, else absolute.
	File string
	// Path is the absolute, symlink-free path; it identifies the session.
	// It is empty for a config from [Parse].
	Path string
	// Dir is the project directory: the file's directory, or the parent of
	// a .vscode directory. Relative paths in the file are relative to it.
	Dir string
	// Servers in file order.
	Servers []*Server
}

// A Server is one configured MCP server, with every ${...} expanded.
type Server struct {
	Name    string
	Type    string // "stdio"
	Command string
	Args    []string
	// Env is added to mcpctl's own environment when the server starts.
	Env map[string]string
	// Cwd is absolute.
	Cwd            string
	StartupTimeout time.Duration
	// CacheTTL is how long prompts and resource reads stay cached in the
	// session; 0 turns caching off.
	CacheTTL time.Duration
	// Source is where the server is defined, e.g. "mcp.json:9:5".
	Source string
}

// Server returns the named server, or nil.
func (c *Config) Server(name string) *Server {
	for _, s := range c.Servers {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Names returns the server names in file order.
func (c *Config) Names() []string {
	out := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		out[i] = s.Name
	}
	return out
}

// Candidates are the files looked for, in order, in the working directory
// when neither --config nor $MCPCTL_CONFIG names one.
var Candidates = []string{"mcp.json", filepath.Join(".vscode", "mcp.json"), ".mcp.json"}

// A NotFoundError says no config file was found.
type NotFoundError struct {
	Path   string   // the file that was named but is missing, if one was
	Looked []string // the candidates tried otherwise
}

func (e *NotFoundError) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("config file %s does not exist", e.Path)
	}
	return fmt.Sprintf("no MCP config found: looked for %s", strings.Join(e.Looked, ", "))
}

// Hints implements the hint convention of mcpctl's error printer.
func (e *NotFoundError) Hints() []string {
	if e.Path != "" {
		return []string{"check the path given by --config or $MCPCTL_CONFIG"}
	}
	return []string{"create mcp.json, or pass --config FILE, or set MCPCTL_CONFIG"}
}

// Find returns the config file to use: explicit (from --config) if set, then
// $MCPCTL_CONFIG, then the first of [Candidates] that exists in dir.
func Find(explicit string, lookupEnv func(string) (string, bool), dir string) (string, error) {
	if explicit == "" && lookupEnv != nil {
		explicit, _ = lookupEnv("MCPCTL_CONFIG")
	}
	if explicit != "" {
		p := explicit
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if _, err := os.Stat(p); err != nil {
			return "", &NotFoundError{Path: explicit}
		}
		return p, nil
	}
	var looked []string
	for _, c := range Candidates {
		p := filepath.Join(dir, c)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
		looked = append(looked, "./"+c)
	}
	return "", &NotFoundError{Looked: looked}
}

// Options tune [Load].
type Options struct {
	// LookupEnv reads environment variables for ${VAR}; nil means
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// WorkDir is the directory file names are shown relative to; empty
	// means the process's working directory.
	WorkDir string
}

// configSchema compiles on first use: a warm `mcpctl call` never loads a
// config, and compiling costs milliseconds.
var configSchema = sync.OnceValue(func() *schemas.Schema { return schemas.MustCompile(schemas.ConfigJSON) })

// Load reads, checks and expands the config file at path.
func Load(path string, opts Options) (*Config, error) {
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	if opts.WorkDir == "" {
		opts.WorkDir, _ = os.Getwd()
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	shown := displayPath(path, abs, opts.WorkDir)
	data, err := os.ReadFile(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, &NotFoundError{Path: shown}
		}
		return nil, &Error{File: shown, Msg: err.Error()}
	}
	dir := filepath.Dir(abs)
	if filepath.Base(dir) == ".vscode" {
		dir = filepath.Dir(dir)
	}
	return parse(shown, abs, dir, data, opts.LookupEnv)
}

// Parse reads a config from data, as Load reads a file: for programs that
// hold their config in memory. name is used in messages; dir is the
// project directory relative paths are relative to (empty: the working
// directory); lookupEnv reads ${VAR} (nil: os.LookupEnv).
func Parse(name string, data []byte, dir string, lookupEnv func(string) (string, bool)) (*Config, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	if dir == "" {
		dir, _ = os.Getwd()
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return parse(name, "", abs, data, lookupEnv)
}

func parse(shown, path, dir string, data []byte, lookupEnv func(string) (string, bool)) (*Config, error) {
	home, _ := os.UserHomeDir()
	p := &parser{file: shown, data: data, vars: Vars{LookupEnv: lookupEnv, WorkspaceFolder: dir, UserHome: home}}
	cfg := &Config{File: shown, Path: path, Dir: dir}
	if err := p.parse(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

func displayPath(given, abs, wd string) string {
	if rel, err := filepath.Rel(wd, abs); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	if !filepath.IsAbs(given) {
		return abs
	}
	return given
}

type parser struct {
	file string
	data []byte
	ix   *index
	vars Vars
	errs Errors
}

func (p *parser) errorAt(path []string, key bool, msg, hint string) {
	line, col := lineCol(p.data, p.ix.at(path, key))
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Col: col, Field: schemas.FieldPath(path), Msg: msg, Hint: hint})
}

func (p *parser) parse(cfg *Config) error {
	ix, err := indexJSON(p.data)
	if err != nil {
		var se *syntaxError
		if errors.As(err, &se) {
			line, col := lineCol(p.data, se.offset)
			return &Error{File: p.file, Line: line, Col: col, Msg: "invalid JSON: " + se.msg}
		}
		return &Error{File: p.file, Msg: "invalid JSON: " + err.Error()}
	}
	p.ix = ix
	for _, d := range ix.dups {
		line, col := lineCol(p.data, d.first)
		what := "field"
		if len(d.path) == 2 && (d.path[0] == "servers" || d.path[0] == "mcpServers") {
			what = "server name"
		}
		l2, c2 := lineCol(p.data, d.second)
		p.errs = append(p.errs, &Error{File: p.file, Line: l2, Col: c2, Field: schemas.FieldPath(d.path),
			Msg: fmt.Sprintf("duplicate %s %q (first defined at %d:%d)", what, d.path[len(d.path)-1], line, col)})
	}
	doc, err := schemas.Decode(p.data)
	if err != nil {
		return &Error{File: p.file, Msg: "invalid JSON: " + err.Error()}
	}
	for _, v := range configSchema().Validate(doc) {
		hint := ""
		if len(v.Suggest) > 0 {
			hint = fmt.Sprintf("did you mean %q?", v.Suggest[0])
		}
		msg := v.Message
		if v.Keyword == "propertyNames" {
			msg = "invalid server name: use letters, digits, '_' and '-' (no dots)"
		}
		p.errorAt(v.Path, v.Unknown || v.Keyword == "propertyNames", msg, hint)
	}
	if len(p.errs) > 0 {
		return p.errs
	}
	root, _ := doc.(map[string]any)
	key := "servers"
	if _, ok := root["mcpServers"]; ok {
		if _, both := root["servers"]; both {
			p.errorAt([]string{"mcpServers"}, true, `both "servers" and "mcpServers" are present`,
				`keep one: "servers" (VS Code) or "mcpServers" (Claude, Cursor)`)
			return p.errs
		}
		key = "mcpServers"
	}
	servers, _ := root[key].(map[string]any)
	if len(servers) == 0 {
		return &Error{File: p.file, Msg: "no servers defined",
			Hint: `add a server under "servers", e.g. {"servers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]}}}`}
	}
	for _, name := range ix.keys[pathKey([]string{key})] {
		obj, _ := servers[name].(map[string]any)
		if s := p.server([]string{key, name}, name, obj); s != nil {
			cfg.Servers = append(cfg.Servers, s)
		}
	}
	if len(p.errs) > 0 {
		return p.errs
	}
	return nil
}

func (p *parser) server(path []string, name string, obj map[string]any) *Server {
	line, col := lineCol(p.data, p.ix.at(path, true))
	s := &Server{
		Name:           name,
		Type:           "stdio",
		Env:            map[string]string{},
		StartupTimeout: DefaultStartupTimeout,
		CacheTTL:       DefaultCacheTTL,
		Source:         fmt.Sprintf("%s:%d:%d", p.file, line, col),
	}
	field := func(f ...string) []string { return append(append([]string(nil), path...), f...) }
	if t, ok := obj["type"].(string); ok {
		s.Type = t
	}
	s.Command = p.expand(field("command"), obj["command"].(string))
	if args, ok := obj["args"].([]any); ok {
		for i, a := range args {
			s.Args = append(s.Args, p.expand(field("args", fmt.Sprint(i)), a.(string)))
		}
	}
	if env, ok := obj["env"].(map[string]any); ok {
		for _, k := range p.ix.keys[pathKey(field("env"))] {
			s.Env[k] = p.expand(field("env", k), env[k].(string))
		}
	}
	s.Cwd = p.vars.WorkspaceFolder
	if cwd, ok := obj["cwd"].(string); ok {
		c := p.expand(field("cwd"), cwd)
		if strings.HasPrefix(c, "~/") && p.vars.UserHome != "" {
			c = filepath.Join(p.vars.UserHome, c[2:])
		}
		if !filepath.IsAbs(c) {
			c = filepath.Join(p.vars.WorkspaceFolder, c)
		}
		s.Cwd = filepath.Clean(c)
	}
	if d, ok := obj["startupTimeout"]; ok {
		s.StartupTimeout = p.duration(field("startupTimeout"), d, false)
	}
	if d, ok := obj["cacheTTL"]; ok {
		s.CacheTTL = p.duration(field("cacheTTL"), d, true)
	}
	return s
}

func (p *parser) expand(path []string, s string) string {
	out, err := expand(s, p.vars)
	if err != nil {
		var ee *expandError
		if errors.As(err, &ee) {
			p.errorAt(path, false, ee.Error(), ee.hint)
		} else {
			p.errorAt(path, false, err.Error(), "")
		}
		return ""
	}
	return out
}

// maxDuration bounds every duration in the config: beyond it a value is a
// mistake, and sums of durations must not overflow.
const maxDuration = 24 * time.Hour

// duration reads "30s"-style strings or numbers of seconds; the schema has
// already checked the shape. Zero is accepted only where it means "off".
func (p *parser) duration(path []string, v any, zeroOK bool) time.Duration {
	var d time.Duration
	ok := false
	switch v := v.(type) {
	case json.Number:
		if f, err := v.Float64(); err == nil && f <= maxDuration.Seconds() {
			d, ok = time.Duration(f*float64(time.Second)), true
		}
	case string:
		pd, err := time.ParseDuration(v)
		d, ok = pd, err == nil
	}
	switch {
	case !ok || d > maxDuration:
		p.errorAt(path, false, fmt.Sprintf("expected a duration such as \"30s\" or a number of seconds, at most %s", maxDuration), "")
	case d == 0 && zeroOK:
		return 0
	case d <= 0:
		p.errorAt(path, false, "expected a duration above zero", "")
	default:
		return d
	}
	return 0
}
