// Package config finds and reads the files that list a project's MCP servers:
// mcp.json in the VS Code shape ("servers") or the Claude and Cursor shape
// ("mcpServers"), with comments and trailing commas as VS Code allows;
// mcp.toml; and Codex's config.toml ([mcp_servers.NAME]). It checks them
// against the schema in [schemas.ConfigJSON], applies "defaults", expands
// ${VAR} and ${input:ID}, and checks the dependency graph.
//
// Every problem is an [*Error] placed at file:line:column with the field's
// path; all problems of the files are reported together as [Errors].
package config

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/mcpctl/mcpctl/internal/ctxio"
)

// Defaults for fields a server does not set.
const (
	DefaultStartupTimeout   = 30 * time.Second
	DefaultRequestTimeout   = 60 * time.Second
	DefaultShutdownTimeout  = 5 * time.Second
	DefaultCacheTTL         = 5 * time.Minute
	DefaultMaxRestarts      = 3
	DefaultFailureThreshold = 3
)

// A Config is a loaded config: one file, or several merged.
type Config struct {
	// File is the (first) file as shown in messages: relative to the
	// working directory when below it, else absolute.
	File string
	// Path is the absolute, symlink-free path of the (first) file; it
	// identifies the session. It is empty for a config from [Parse].
	Path string
	// Paths are the absolute paths of every file, in order.
	Paths []string
	// Dir is the project directory: the first file's directory, or the
	// parent of a .vscode directory. Relative paths in a file are relative
	// to its own project directory.
	Dir string
	// Servers in file order, files in order.
	Servers []*Server
	// Inputs are the VS Code input variables the files declare.
	Inputs []Input
	// LogLevel is the session log's level (top-level "logLevel": debug,
	// info, warn or error; "" means info). A later file's wins.
	LogLevel string

	inputValues map[string]string // by input id: what ${input:ID} gave
	faulted     []*Server         // read without their faulted fields (Options.checkFaulted), to check
}

// InputEnviron returns the values the inputs were given as
// MCPCTL_INPUT_<ID>=value entries: how mcpctl hands them to the session it
// starts in the background, which cannot ask. They are secrets.
func (c *Config) InputEnviron() []string {
	var out []string
	for id, v := range c.inputValues {
		out = append(out, InputEnv(id)+"="+v)
	}
	sort.Strings(out)
	return out
}

// An Input is a VS Code input variable, used as ${input:ID}.
type Input struct {
	ID          string   `json:"id"`
	Type        string   `json:"type,omitempty"`
	Description string   `json:"description,omitempty"`
	Default     string   `json:"default,omitempty"`
	Password    bool     `json:"password,omitempty"`
	Options     []string `json:"options,omitempty"`
}

// A Server is one configured MCP server, with defaults applied and every
// ${...} expanded.
type Server struct {
	Name string
	// Type is stdio, http, sse or ws.
	Type string
	// TypeImplied: no type was written; a url makes it http, which falls
	// back to sse when the server refuses streamable HTTP.
	TypeImplied bool
	Command     string
	Args        []string
	// Env is added to mcpctl's own environment when the server starts:
	// envFile's values first, then env's.
	Env     map[string]string
	EnvFile string // absolute; "" when not set
	// InheritEnv says which of mcpctl's own environment variables the
	// server gets besides Env: nil, all of them (inheritEnv true, the
	// default); otherwise those of BasicEnv and those matching these globs
	// (inheritEnv false is an empty list).
	InheritEnv []string
	// Cwd is absolute.
	Cwd     string
	URL     string
	Headers map[string]string
	// CAFile, ClientCert and ClientKey (absolute paths, or "") are TLS
	// settings of a remote server: roots trusted besides the system's, and
	// a client certificate.
	CAFile, ClientCert, ClientKey string

	StartupTimeout  time.Duration
	RequestTimeout  time.Duration
	ShutdownTimeout time.Duration
	IdleTimeout     time.Duration // 0: never idle out
	// CacheTTL is how long prompts and resource reads stay cached in the
	// session; 0 turns caching off.
	CacheTTL time.Duration

	DependsOn   []string
	Disabled    bool
	Activation  string // eager, lazy, manual or transient
	Restart     string // never or on-failure
	MaxRestarts int
	// FailureThreshold is how many consecutive failed requests make the
	// server unavailable.
	FailureThreshold int
	// HealthInterval is the time between pings; 0: no pings.
	HealthInterval time.Duration
	Limits         Limits

	IncludeTools []string
	ExcludeTools []string
	// Roots are absolute paths offered as roots; by default the project
	// directory, none when the config says "roots": [].
	Roots []string
	// Sampling and Elicitation answer what the server asks of its client
	// (the server's own, else the file's top-level one); nil when unset.
	Sampling, Elicitation *Hook
	// ProtocolVersion, when set, is the MCP version asked for.
	ProtocolVersion string

	// Source is where the server is defined, e.g. "mcp.json:9:5".
	Source string

	where   map[string]string // field → file:line:col
	root    string            // the server as its file names it: servers.NAME, mcp_servers.NAME
	dir     string            // the project directory of its file; "" when built in Go
	secrets []string          // values that came from the environment or inputs
	forms   []string          // what Redact replaces, made from the first formsOf secrets
	formsOf int
	shown   map[string]string // an expanded value → it with those parts redacted
	raw     map[string]any    // the server's object as written (JSON shape)
}

// A Hook is a command that answers a request from a server: the request's
// params as JSON on stdin, the result as JSON on stdout.
type Hook struct {
	// Command is a shell command line, run with /bin/sh -c in Dir.
	Command string
	Dir     string
	// Timeout bounds one run; then the command's process group is killed.
	Timeout time.Duration
	// Source is where the hook is written, e.g. "mcp.json:4:17".
	Source string
}

// DefaultHookTimeout bounds a hook without a timeout: long enough for a
// language model to answer a sampling request.
const DefaultHookTimeout = 2 * time.Minute

// Limits are resource limits of a server's process.
type Limits struct {
	Memory    int64         // bytes of data segment and private writable mappings (RLIMIT_DATA); 0: none
	CPUTime   time.Duration // 0: none
	OpenFiles int           // 0: none
	Processes int           // 0: none
}

// Any reports whether a limit is set.
func (l Limits) Any() bool {
	return l.Memory > 0 || l.CPUTime > 0 || l.OpenFiles > 0 || l.Processes > 0
}

// BasicEnv are the variables a server started with inheritEnv false (or a
// list) still gets from mcpctl's environment: those the MCP SDKs pass by
// default, and the locale, time zone, temporary and runtime directories.
var BasicEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_*", "TZ", "TMPDIR", "XDG_RUNTIME_DIR"}

// ServeTokenEnv holds the bearer token of mcpctl serve --http: mcpctl's
// own secret, which no server inherits (a server's env may still name it).
const ServeTokenEnv = "MCPCTL_SERVE_TOKEN"

// ServeSessionEnv names, in the environment of the servers mcpctl serve
// starts, the session serve offers: a serve among them refuses to run.
// Every server gets it, whatever its inheritEnv.
const ServeSessionEnv = "MCPCTL_SERVE_SESSION"

// Inherits reports whether the server gets mcpctl's environment variable
// name (see InheritEnv).
func (s *Server) Inherits(name string) bool {
	if s.InheritEnv == nil || name == ServeSessionEnv {
		return true
	}
	match := func(globs []string) bool {
		return slices.ContainsFunc(globs, func(g string) bool { ok, _ := filepath.Match(g, name); return ok })
	}
	return match(BasicEnv) || match(s.InheritEnv)
}

// IsStdio reports whether the server is a local process (type stdio, or no
// type in a Server built in Go).
func (s *Server) IsStdio() bool { return s.Type == "" || s.Type == "stdio" }

// FieldName is field as the server's file names it: Codex's config.toml
// has names of its own (enabled_tools for includeTools).
func (s *Server) FieldName(field string) string {
	if !strings.HasPrefix(s.root, "mcp_servers.") {
		return field
	}
	if field == "disabled" {
		return "enabled" // its opposite: enabled = false
	}
	theirs := ""
	for name, ours := range codexFields {
		// startup_timeout_ms is the other spelling of startup_timeout_sec.
		if ours == field && !strings.HasSuffix(name, "_ms") {
			theirs = name
		}
	}
	if theirs == "" {
		return field
	}
	return theirs
}

// Where returns the place of a field of the server (e.g. "mcp.json:9:7"),
// or of the server itself when the field is not written. A part of a
// field (roots[1], limits.memory) not placed itself is placed at the
// field.
func (s *Server) Where(field string) string {
	for {
		if w, ok := s.where[field]; ok {
			return w
		}
		i := strings.LastIndexAny(field, ".[")
		if i <= 0 {
			return s.Source
		}
		field = field[:i]
	}
}

// Redact replaces the server's secret values (from the environment and
// inputs) in text with "<redacted>". A value the config expanded is
// redacted exactly where its secrets went; in other text each secret is
// replaced wherever it appears, longest first, except values shorter than
// four bytes, which are not credentials and would garble the text. A
// secret is also found as a JSON string writes it (a server logging JSON
// escapes its " and \, and some encoders its /).
func (s *Server) Redact(text string) string {
	if shown, ok := s.shown[text]; ok {
		return shown
	}
	forms := s.forms
	if s.formsOf != len(s.secrets) {
		forms = redactedForms(s.secrets) // not prepared: a copy given secrets since
	}
	for _, v := range forms {
		text = strings.ReplaceAll(text, v, Redacted)
	}
	return text
}

// prepareRedaction makes once what Redact replaces, which it would make
// again at every call (every stderr line, every log message). It is called
// where secrets are given, never while Redact may run.
func (s *Server) prepareRedaction() {
	s.forms, s.formsOf = redactedForms(s.secrets), len(s.secrets)
}

// redactedForms are the secrets and their JSON forms that Redact replaces,
// longest first.
func redactedForms(secrets []string) []string {
	var forms []string
	for _, v := range secrets {
		for _, f := range append([]string{v}, jsonForms(v)...) {
			if len(f) >= 4 && !slices.Contains(forms, f) {
				forms = append(forms, f)
			}
		}
	}
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	return forms
}

// jsonForms are the other ways a JSON string may write v: as JavaScript
// writes it, as Go's encoding/json does (HTML escaped: & as \u0026), as an
// ASCII-only encoder does (Python's json.dumps: é as \u00e9), and each
// with its slashes escaped too.
func jsonForms(v string) []string {
	if !strings.ContainsFunc(v, func(r rune) bool {
		return r == '"' || r == '\\' || r == '/' || r == '&' || r == '<' || r == '>' || r < 0x20 || r >= 0x7f
	}) {
		return nil
	}
	encode := func(html bool) string {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		enc.Encode(v)
		esc := strings.TrimSuffix(b.String(), "\n")
		return esc[1 : len(esc)-1]
	}
	plain, html := encode(false), encode(true)
	var ascii strings.Builder
	for _, r := range html {
		switch {
		case r < 0x7f:
			ascii.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&ascii, "\\u%04x\\u%04x", r1, r2)
		default:
			fmt.Fprintf(&ascii, "\\u%04x", r)
		}
	}
	var out []string
	for _, f := range []string{plain, html, ascii.String()} {
		for _, g := range []string{f, strings.ReplaceAll(f, "/", `\/`)} {
			if g != v && !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	return out
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

// Names returns the server names in order.
func (c *Config) Names() []string {
	out := make([]string, 0, len(c.Servers))
	for _, s := range c.Servers {
		if s != nil { // built in Go, and refused by Validate
			out = append(out, s.Name)
		}
	}
	return out
}

// Candidates are the files looked for, in order, in the working directory
// when neither --config nor $MCPCTL_CONFIG names one.
var Candidates = []string{
	"mcp.json",
	filepath.Join(".vscode", "mcp.json"),
	".mcp.json",
	"mcp.toml",
	filepath.Join(".codex", "config.toml"),
}

// A NotFoundError says no config file was found.
type NotFoundError struct {
	Path   string   // the file that was named but is missing, if one was
	Looked []string // the candidates tried otherwise
	// Why is what is wrong with Path: "" for "does not exist", else "is a
	// directory" or why it cannot be reached.
	Why string

	inside string // the config discovery finds in the directory Path

	// More are other files named that do not exist either.
	More []string

	// Candidate is the file discovery found there but could not read
	// (Why says why), when no other was found.
	Candidate string
}

func (e *NotFoundError) Error() string {
	switch {
	case e.Candidate != "":
		return fmt.Sprintf("no MCP config found: %s %s", e.Candidate, e.Why)
	case e.Path != "" && e.Why != "":
		return fmt.Sprintf("config file %s %s", e.Path, e.Why)
	case e.Path != "" && len(e.More) > 0:
		return fmt.Sprintf("config files %s do not exist", strings.Join(append([]string{e.Path}, e.More...), ", "))
	case e.Path != "":
		return fmt.Sprintf("config file %s does not exist", e.Path)
	case len(e.Looked) == 0:
		return "--config is given an empty path"
	}
	return fmt.Sprintf("no MCP config found: looked for %s", strings.Join(e.Looked, ", "))
}

// Hints implements the hint convention of mcpctl's error printer.
func (e *NotFoundError) Hints() []string {
	switch {
	case e.Candidate != "" && e.Why == "is a directory":
		return []string{"mcpctl reads a file of that name; remove the directory, or name a config file with --config FILE"}
	case e.Candidate != "" && strings.HasPrefix(e.Why, "is a symbolic link"):
		return []string{fmt.Sprintf("point the link at the config file, or remove it: rm %s", e.Candidate)}
	case e.Candidate != "":
		return []string{"let mcpctl read it, or name a config file with --config FILE"}
	case e.Why == "is a directory" && e.inside != "":
		return []string{fmt.Sprintf("name the file in it: %s", filepath.Join(e.Path, e.inside))}
	case e.Why == "is a directory":
		return []string{fmt.Sprintf("name the file in it, e.g. %s", filepath.Join(e.Path, "mcp.json"))}
	case e.Path == "-" && e.Why == "":
		// Many tools read - as stdin; here it is a file's name.
		return []string{"for a config on stdin, write -c /dev/stdin"}
	case e.Path != "":
		return []string{"check the path given by --config or $MCPCTL_CONFIG"}
	case len(e.Looked) == 0:
		return []string{"name a config file, or leave --config out to look for one"}
	}
	return []string{"create mcp.json, or pass --config FILE, or set MCPCTL_CONFIG"}
}

// notFound is the error for a named config file path (abs, as given)
// that cannot be read as a file: err is from os.Stat, or nil when it is a
// directory.
func notFound(path, abs string, err error) *NotFoundError {
	var pe *fs.PathError
	switch {
	case err == nil:
		e := &NotFoundError{Path: path, Why: "is a directory"}
		for _, c := range Candidates {
			if st, err := os.Stat(filepath.Join(abs, c)); err == nil && !st.IsDir() {
				e.inside = c
				break
			}
		}
		return e
	case errors.Is(err, fs.ErrNotExist):
		return &NotFoundError{Path: path}
	case errors.As(err, &pe):
		return &NotFoundError{Path: path, Why: "cannot be read: " + pe.Err.Error()}
	}
	return &NotFoundError{Path: path, Why: "cannot be read: " + err.Error()}
}

// A Discovery says which config files are used and why.
type Discovery struct {
	// Files are the files to load, absolute.
	Files []string `json:"files"`
	// From is how they were chosen: "--config", "$MCPCTL_CONFIG" or
	// "discovery" (the first candidate that exists).
	From string `json:"from"`
	// Candidates are the discovery order, in the working directory.
	Candidates []Candidate `json:"candidates"`
	// Missing are the files named (--config, $MCPCTL_CONFIG) that are
	// not there, or not files; Discover's error says why.
	Missing []string `json:"missing,omitempty"`
}

// A Candidate is one place discovery looks.
type Candidate struct {
	Path   string `json:"path"`
	Exists bool   `json:"exists"`
	// Why says why a candidate that is there is not read: "is a
	// directory", "is a symbolic link to x, which does not exist".
	Why string `json:"why,omitempty"`
}

// Discover finds the config files: explicit ones (from --config, which may
// be repeated), else $MCPCTL_CONFIG (paths separated as in $PATH), else the
// first of [Candidates] that exists in dir. Several files are merged.
func Discover(explicit []string, lookupEnv func(string) (string, bool), dir string) (*Discovery, error) {
	d := &Discovery{}
	for _, c := range Candidates {
		p := filepath.Join(dir, c)
		st, err := os.Stat(p)
		d.Candidates = append(d.Candidates, Candidate{Path: p, Exists: err == nil && !st.IsDir(), Why: unusable(p, st, err)})
	}
	named := explicit
	d.From = "--config"
	if len(named) == 0 && lookupEnv != nil {
		if v, _ := lookupEnv("MCPCTL_CONFIG"); v != "" {
			// An empty entry (a:, a::b) is a slip, not a file.
			named = slices.DeleteFunc(filepath.SplitList(v), func(p string) bool { return p == "" })
			d.From = "$MCPCTL_CONFIG"
		}
	}
	if len(named) > 0 {
		var missing *NotFoundError // the first, and the others gone too
		for _, n := range named {
			if n == "" {
				return d, &NotFoundError{}
			}
			p := n
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			if st, err := os.Stat(p); err != nil || st.IsDir() {
				d.Missing = append(d.Missing, p)
				switch nf := notFound(n, p, err); {
				case missing == nil:
					missing = nf
				case nf.Why == "" && missing.Why == "":
					missing.More = append(missing.More, n)
				}
				continue
			}
			if slices.ContainsFunc(d.Files, func(f string) bool { return sameFile(f, p) }) {
				continue // named twice: read once
			}
			d.Files = append(d.Files, p)
		}
		if missing != nil {
			return d, missing
		}
		return d, nil
	}
	d.From = "discovery"
	var looked []string
	for i, c := range Candidates {
		if d.Candidates[i].Exists {
			d.Files = []string{d.Candidates[i].Path}
			return d, nil
		}
		looked = append(looked, "./"+filepath.ToSlash(c))
	}
	for i, c := range Candidates {
		if why := d.Candidates[i].Why; why != "" {
			// There, but not a file mcpctl can read: said, not passed
			// over as if it were not there.
			return d, &NotFoundError{Looked: looked, Candidate: "./" + filepath.ToSlash(c), Why: why}
		}
	}
	return d, &NotFoundError{Looked: looked}
}

// unusable says why a discovery candidate at p that is there cannot be
// read as a config file (st and err from os.Stat): a directory, a link
// to nothing, no permission; "" when it is a file, or is not there.
func unusable(p string, st fs.FileInfo, err error) string {
	switch {
	case err == nil && st.IsDir():
		return "is a directory"
	case err == nil:
		return ""
	case errors.Is(err, fs.ErrNotExist):
		if target, lerr := os.Readlink(p); lerr == nil {
			return fmt.Sprintf("is a symbolic link to %s, which does not exist", target)
		}
		return ""
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return "cannot be read: " + err.Error()
}

// sameFile reports whether paths a and b, which exist, are one file.
func sameFile(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// Find returns the first config file [Discover] chooses.
func Find(explicit string, lookupEnv func(string) (string, bool), dir string) (string, error) {
	var ex []string
	if explicit != "" {
		ex = []string{explicit}
	}
	d, err := Discover(ex, lookupEnv, dir)
	if err != nil {
		return "", err
	}
	return d.Files[0], nil
}

// Options tune [Load].
type Options struct {
	// LookupEnv reads environment variables for ${VAR} and
	// $MCPCTL_INPUT_<ID>; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// WorkDir is the directory file names are shown relative to; empty
	// means the process's working directory.
	WorkDir string
	// Ask asks the user for the value of an input that no
	// $MCPCTL_INPUT_<ID> gives; nil means inputs come from the
	// environment, else their declared default. The value is used, never
	// written anywhere.
	Ask func(in Input) (string, error)
	// Unresolved loads the files as written: a ${...} without a value is
	// left empty instead of an error, and what it leaves empty is not
	// checked. Such a config serves to list names and show the file; its
	// servers cannot run.
	Unresolved bool
	// Placeholder, when set, is the value of an input that nothing gives
	// one (no $MCPCTL_INPUT_<ID>, no default, nobody asked), instead of an
	// error: for showing a config whose input values are hidden anyway.
	Placeholder string
	// UnsetHint, when set, is the hint for a ${VAR} that is not set (given
	// its name, and the reference as written with a default, such as
	// ${env:VAR:-value}), where exporting it would not reach the reader: a
	// session reads its config again with the environment it started with.
	UnsetHint func(name, withDefault string) string
	// NoAskHint, when set, is the hint for an input without a value
	// (given its $MCPCTL_INPUT_<ID>), where nobody can be asked: a
	// background session says how a reload gives it one.
	NoAskHint func(envName string) string
	// Context, when set, ends the reading of a file that is not a regular
	// one (a FIFO, a pipe whose writer has not closed it), which would
	// otherwise block until it is written: its error is the context's.
	Context context.Context

	// checkFaulted has the servers the schema found fault with read
	// without their faulted fields, so that [Validate] can check the rest
	// of them (a missing cwd, a command not found) in the same run.
	checkFaulted bool
}

// Load reads, checks and expands the config file at path.
func Load(path string, opts Options) (*Config, error) { return LoadFiles([]string{path}, opts) }

// LoadFiles reads several config files and merges their servers; a server
// name in two files is an error that shows both places.
func LoadFiles(paths []string, opts Options) (*Config, error) {
	files, err := readFiles(paths, &opts)
	if err != nil {
		return nil, err
	}
	return load(files, opts)
}

// maxFileSize bounds a config file: a bigger one is not a config.
const maxFileSize = 16 << 20

// readFiles reads the files at paths and fills in opts' defaults.
func readFiles(paths []string, opts *Options) ([]file, error) {
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	if opts.WorkDir == "" {
		opts.WorkDir, _ = os.Getwd()
	}
	var files []file
	var missing *NotFoundError // files that do not exist, said together
	for _, path := range paths {
		if path == "" {
			// filepath.Abs would make it the working directory.
			return nil, &NotFoundError{}
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, err
		}
		// /dev/stdin and a shell's <(...) resolve to "pipe:[N]", which is
		// no path: those are read where they are.
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			if _, err := os.Stat(real); err == nil {
				abs = real
			}
		}
		shown := displayPath(abs, opts.WorkDir)
		tooBig := &Error{File: shown, Msg: fmt.Sprintf("is more than %d bytes; a config file is at most %d", maxFileSize, maxFileSize),
			Hint: "check that --config names the config file"}
		st, err := os.Stat(abs)
		if err == nil && st.Size() > maxFileSize {
			return nil, &Error{File: shown, Msg: fmt.Sprintf("is %d bytes; a config file is at most %d", st.Size(), maxFileSize),
				Hint: "check that --config names the config file"}
		}
		var data []byte
		if opts.Context != nil && (st == nil || !st.Mode().IsRegular()) {
			data, err = ctxio.Until(opts.Context, func() ([]byte, error) { return readAtMost(abs, maxFileSize) })
			if cerr := opts.Context.Err(); cerr != nil {
				return nil, cerr
			}
		} else {
			data, err = readAtMost(abs, maxFileSize)
		}
		if err != nil {
			if errors.Is(err, errTooBig) {
				return nil, tooBig
			}
			if st, serr := os.Stat(abs); errors.Is(err, os.ErrNotExist) || serr != nil || st.IsDir() {
				nf := notFound(shown, abs, serr)
				switch {
				case nf.Why != "":
					return nil, nf
				case missing == nil:
					missing = nf
				default:
					missing.More = append(missing.More, shown)
				}
				continue
			}
			return nil, &Error{File: shown, Msg: err.Error()}
		}
		dir := filepath.Dir(abs)
		if b := filepath.Base(dir); b == ".vscode" || b == ".codex" {
			dir = filepath.Dir(dir)
		}
		if st != nil && !st.Mode().IsRegular() {
			// A pipe's directory (/dev, /proc/self/fd) is no project's.
			dir = opts.WorkDir
		}
		files = append(files, file{shown: shown, path: abs, dir: dir, data: data})
	}
	if missing != nil {
		return nil, missing
	}
	return files, nil
}

var errTooBig = errors.New("too big")

// readAtMost reads the file at path, a pipe too, refusing more than max
// bytes.
func readAtMost(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(data)) > max {
		return nil, errTooBig
	}
	return data, err
}

// Rereadable returns an error naming the first of paths (config files,
// shown relative to wd) that cannot be read again, a pipe (/dev/stdin, a
// shell's <(...), a FIFO): a session reads its files again at its start
// and at each reload. It reads none of them: reading a FIFO would wait for
// its writer first.
func Rereadable(paths []string, wd string) error {
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && !st.Mode().IsRegular() {
			return &Error{File: displayPath(p, wd), Msg: "is not a file but a pipe, which a session cannot read again (it reads its config at its start and at each reload)",
				Hint: "write the config to a file and give that with -c; a pipe serves a command run without up"}
		}
	}
	return nil
}

// Parse reads a config from data, as Load reads a file: for programs that
// hold their config in memory. name is used in messages (its extension
// chooses TOML or JSON); dir is the project directory relative paths are
// relative to (empty: the working directory); lookupEnv reads ${VAR} (nil:
// os.LookupEnv).
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
	return load([]file{{shown: name, dir: abs, data: data}}, Options{LookupEnv: lookupEnv, WorkDir: abs})
}

type file struct {
	shown, path, dir string
	data             []byte
}

func displayPath(abs, wd string) string {
	// Relative to the working directory when that is shorter, as the
	// user most likely typed it.
	if rel, err := filepath.Rel(wd, abs); err == nil && len(rel) < len(abs) {
		return rel
	}
	return abs
}

// SendsAuthorization reports whether the server is sent an Authorization
// header of its own (headers, or a --header flag): a fixed token, which
// OAuth must not replace. from says where it is set ("mcp.json:4:7", or
// "--header").
func (s *Server) SendsAuthorization() (from string, ok bool) {
	for name := range s.Headers {
		if strings.EqualFold(name, "Authorization") {
			if w, ok := s.where["--header "+strings.ToLower(name)]; ok {
				return w, true
			}
			return s.Where("headers"), true
		}
	}
	return "", false
}

// AddHeader sets a header of a remote server from outside the config (a
// --header flag); its value is a secret, as header values are.
func (s *Server) AddHeader(name, value string) {
	if s.Headers == nil {
		s.Headers = map[string]string{}
	}
	// Header names are the same whatever their case: the config's
	// "Authorization" and the flag's "authorization" would both be sent,
	// one of them winning at random.
	for k := range s.Headers {
		if strings.EqualFold(k, name) {
			delete(s.Headers, k)
		}
	}
	s.Headers[name] = value
	s.secrets = append(s.secrets, value)
	s.prepareRedaction()
	if s.where == nil {
		s.where = map[string]string{}
	}
	s.where["--header "+strings.ToLower(name)] = "--header"
}
