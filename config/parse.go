package config

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpctl/mcpctl/schemas"
)

// configSchema compiles on first use: a warm `mcpctl call` never loads a
// config, and compiling costs milliseconds.
var configSchema = sync.OnceValue(func() *schemas.Schema { return schemas.MustCompile(schemas.ConfigJSON) })

// explain says a schema violation of the document to a person: its
// message and a hint.
func (d *document) explain(v schemas.Violation) (msg, hint string) {
	if len(v.Suggest) > 0 {
		hint = fmt.Sprintf("did you mean %q?", v.Suggest[0])
	}
	if v.Unknown && len(v.Path) == 3 && otherClientsNames[v.Path[2]] != "" {
		hint = otherClientsNames[v.Path[2]]
	}
	msg = v.Message
	switch {
	case v.Keyword == "propertyNames":
		msg = serverNameRule
		if hint == "" {
			hint = `e.g. "github" or "my-server"`
		}
	case v.Keyword == "enum" && hint == "":
		hint = enumHint(msg)
	case v.Keyword == "type" && hint == "" && len(v.Path) > 0:
		hint = typeHint(v.Path[len(v.Path)-1], v.Want, v.Got, valueAt(d.root, v.Path))
	case v.Def == "duration" || v.Def == "durationOrZero" || v.Def == "size":
		// The schema's patterns and bounds say it to a machine; say it
		// to a person.
		msg = valueWords(v.Def, valueAt(d.root, v.Path))
		if hint == "" && v.Def != "size" {
			hint = durationHint(valueAt(d.root, v.Path))
		}
	}
	return msg, hint
}

// looksLikeServers says whether v, a top-level value, is what "servers"
// holds: objects with a command or a url.
func looksLikeServers(v any) bool {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return false
	}
	for _, s := range m {
		obj, ok := s.(map[string]any)
		if !ok || (obj["command"] == nil && obj["url"] == nil) {
			return false
		}
	}
	return true
}

// valueAt is the value at path in a JSON-shaped document, or nil.
func valueAt(v any, path []string) any {
	for _, p := range path {
		switch c := v.(type) {
		case map[string]any:
			v = c[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

// durationFields are the fields that take a duration: a value of
// another type is told how one is written.
var durationFields = map[string]bool{"startupTimeout": true, "requestTimeout": true, "shutdownTimeout": true,
	"idleTimeout": true, "cacheTTL": true, "interval": true, "timeout": true, "cpuTime": true}

// listExamples are lists as each field that takes one holds them.
var listExamples = map[string]string{
	"args": `["-y", "@scope/server"]`, "dependsOn": `["db"]`, "dependencies": `["db"]`,
	"includeTools": `["read_*"]`, "excludeTools": `["write_*"]`, "roots": `["./docs"]`,
	"inheritEnv": `["AWS_*", "HTTPS_PROXY"]`, "options": `["small", "large"]`,
}

// typeHint says how to write a value of a type in want for field, the
// value (v) being of type got. It repeats no value that may be a secret:
// only true or false.
func typeHint(field string, want []string, got string, v any) string {
	wants := func(t string) bool { return slices.Contains(want, t) }
	list := cmp.Or(listExamples[field], `["a", "b"]`)
	switch {
	case field == "memory":
		return `write a size such as "512MiB", or a whole number of bytes`
	case durationFields[field]:
		return `write a duration such as "30s", or a number of seconds`
	case field == "url" || field == "serverUrl":
		return `write the server's address in double quotes: "http://localhost:8080/mcp"`
	case wants("integer") && wants("string") && got == "number":
		// A size: whole bytes, or a string with a unit.
		return `write a whole number of bytes, or a size such as "512MiB"`
	case wants("string") && got == "boolean":
		return fmt.Sprintf(`write it in double quotes, as a string: "%v"`, v)
	case wants("string") && (got == "number" || got == "integer"):
		return `write it in double quotes, as a string: "8080"`
	case wants("boolean") && wants("array"):
		return "write true or false, without quotes, or a list: " + list
	case wants("array"):
		return "write a list, one item each: " + list
	case wants("boolean"):
		return "write true or false, without quotes"
	case wants("integer") && got == "number":
		// Not quoted: JSON Schema's number that is not an integer.
		return "write a whole number, without a fraction"
	case wants("number") || wants("integer"):
		return "write the number without quotes"
	case wants("object"):
		return `write an object of names and values: { "NAME": "value" } (in TOML: { NAME = "value" })`
	}
	return ""
}

// valueWords says what a value of the schema's $defs duration,
// durationOrZero or size (def) must be, given v, which is not one.
func valueWords(def string, v any) string {
	got := ", got " + schemas.JSONText(v)
	switch def {
	case "duration", "durationOrZero":
		d, ok := durationOf(v)
		switch {
		case ok && d < 0 && def == "durationOrZero":
			return "expected a duration of 0 or more" + got
		case ok && d == 0 && !isZero(v):
			return "expected a duration of at least 1ns (0.000000001 seconds)" + got
		case ok && d <= 0:
			return "expected a duration above zero" + got
		case ok && d > maxDuration:
			return "expected a duration of at most 24h" + got
		}
		return `expected a duration such as "30s" or "1m30s", or a number of seconds` + got
	case "size":
		n, err := sizeOf(v)
		switch {
		case err == nil && n <= 0:
			return "expected a size above zero" + got
		case err == nil && n > 1<<60:
			return "expected a size of at most 1 EiB" + got
		}
	}
	return `expected a size such as "512MiB" or "1G", or a number of bytes` + got
}

// durationHint says how to write a duration given as v, a string that is
// none: a number in quotes, or in days; "" for others.
func durationHint(v any) string {
	str, ok := v.(string)
	if !ok {
		return ""
	}
	str = strings.TrimSpace(str)
	if _, err := strconv.ParseFloat(str, 64); err == nil {
		return fmt.Sprintf(`write %s without quotes (seconds), or with a unit: "%ss"`, str, str)
	}
	if n, ok := strings.CutSuffix(str, "d"); ok {
		if _, err := strconv.ParseFloat(n, 64); err == nil {
			return `days are not a unit: write hours, e.g. "24h" (at most 24h)`
		}
	}
	return ""
}

// durationOf reads a duration as the config writes one, a string or a
// number of seconds.
func durationOf(v any) (time.Duration, bool) {
	switch v := v.(type) {
	case json.Number:
		f, err := v.Float64()
		if err != nil {
			return 0, false
		}
		if f > maxDuration.Seconds() {
			return maxDuration + 1, true
		}
		return time.Duration(f * float64(time.Second)), true
	case string:
		d, err := time.ParseDuration(v)
		return d, err == nil
	}
	return 0, false
}

// isZero says whether v, a duration as the config writes one, is zero
// itself rather than too short to be counted in nanoseconds.
func isZero(v any) bool {
	switch v := v.(type) {
	case json.Number:
		f, err := v.Float64()
		return err == nil && f == 0
	case string:
		return !strings.ContainsAny(v, "123456789")
	}
	return false
}

// maxDuration bounds every duration in the config: beyond it a value is a
// mistake, and sums of durations must not overflow.
const maxDuration = 24 * time.Hour

func load(files []file, opts Options) (*Config, error) {
	cfg, errs, err := loadAll(files, opts)
	switch {
	case err != nil:
		return nil, err
	case len(errs) > 0:
		return nil, errs
	case len(cfg.Servers) == 0:
		return nil, Errors{noServers(cfg.File)} // every problem of the files comes as Errors
	}
	for _, s := range cfg.Servers {
		s.prepareRedaction()
	}
	return cfg, nil
}

// noServers is the error of a config without a server, with an example
// in the file's own format.
func noServers(file string) *Error {
	hint := `add a server under "servers", e.g. {"servers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]}}}`
	if strings.HasSuffix(file, ".toml") {
		table := "servers"
		if isCodexFile(file) {
			table = "mcp_servers"
		}
		hint = fmt.Sprintf(`add a server as a table, e.g. [%s.fs] with command = "npx" and args = ["-y", "@modelcontextprotocol/server-filesystem", "."]`, table)
	}
	return &Error{File: file, Msg: "no servers defined", Hint: hint}
}

// Compiled on first use: only a config with mistakes, or with hooks,
// needs them.
var (
	enumMessage = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^expected one of (.*), got "(.*)"$`) })
	quoted      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"([^"]*)"`) })
)

// loadAll reads the files and returns every problem at once: a file that
// is not valid JSON or TOML is skipped, a server the schema finds fault
// with is not decoded further, and every other server is decoded and its
// dependencies checked. The config holds the servers that could be read.
func loadAll(files []file, opts Options) (*Config, Errors, error) {
	cfg := &Config{}
	var docs []*document
	var errs Errors
	for i, f := range files {
		if i == 0 {
			cfg.File, cfg.Path, cfg.Dir = f.shown, f.path, f.dir
		}
		if f.path != "" {
			cfg.Paths = append(cfg.Paths, f.path)
		}
		d, err := readDocument(f.shown, f.data)
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				errs = append(errs, e)
				continue
			}
			return nil, nil, err
		}
		d.dir = f.dir
		_, claudeShape := d.root["mcpServers"]
		for _, v := range configSchema().Validate(d.root) {
			if !claudeShape && v.Unknown && len(v.Path) == 1 && len(v.Suggest) == 0 && looksLikeServers(d.root[v.Path[0]]) {
				// "sever": too far from "servers" in letters, but it holds
				// servers. Not in Claude's shape, whose other keys are the
				// app's (servers parked under another key, say).
				v.Suggest = []string{"servers"}
			}
			// A file in Claude's shape may be an app's whole config
			// (claude_desktop_config.json: globalShortcut, ...): its other
			// top-level keys are the app's, unless one is close to a key of
			// mcpctl's, a likely typo.
			if claudeShape && v.Unknown && len(v.Path) == 1 && len(v.Suggest) == 0 {
				continue
			}
			if claudeShape && v.Unknown && len(v.Path) == 3 && v.Path[0] == "mcpServers" && otherClientsFields[v.Path[2]] {
				continue
			}
			msg, hint := d.explain(v)
			d.errorAt(v.Path, v.Unknown || v.Keyword == "propertyNames", msg, hint)
			// Decoding trusts the schema: what it faults is not decoded.
			switch {
			case len(v.Path) >= 2 && (v.Path[0] == "servers" || v.Path[0] == "mcpServers"):
				field := ""
				if len(v.Path) >= 3 {
					field = v.Path[2]
				}
				d.fault(v.Path[1], field)
			case len(v.Path) >= 1 && v.Path[0] != "inputs":
				d.unusable = true
			}
		}
		d.checkInputs()
		docs = append(docs, d)
	}
	checkInputsAcross(docs)
	for _, d := range docs {
		errs = append(errs, d.errs...)
		d.errs = nil
	}
	home, _ := os.UserHomeDir()
	in := newInputs(docs, opts)
	cfg.Inputs = in.declared
	defined := map[string]string{} // server → where it is defined
	known := map[string]bool{}     // every server name, read or not
	for _, d := range docs {
		if d.unusable {
			continue
		}
		vars := Vars{LookupEnv: opts.LookupEnv, WorkspaceFolder: d.dir, UserHome: home, Input: in.value, unresolved: opts.Unresolved, unsetHint: opts.UnsetHint}
		if lvl, ok := d.root["logLevel"].(string); ok {
			cfg.LogLevel = lvl
		}
		servers, faulted := d.servers(defined, vars, opts.checkFaulted)
		cfg.Servers = append(cfg.Servers, servers...)
		cfg.faulted = append(cfg.faulted, faulted...)
		errs = append(errs, d.errs...)
		for n := range defined {
			known[n] = true
		}
	}
	if in.interrupted != nil {
		return nil, nil, in.interrupted
	}
	cfg.inputValues = in.values
	errs = append(errs, checkDependencies(cfg.Servers, known)...)
	sortByPlace(errs, files)
	return cfg, errs, nil
}

// sortByPlace puts errors in file order, then line and column order.
func sortByPlace(errs Errors, files []file) {
	order := map[string]int{}
	for i, f := range files {
		order[f.shown] = i
	}
	slices.SortStableFunc(errs, func(a, b *Error) int {
		if c := cmp.Compare(order[a.File], order[b.File]); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Line, b.Line); c != 0 {
			return c
		}
		return cmp.Compare(a.Col, b.Col)
	})
}

// servers decodes the servers of one document; defined holds the servers
// of earlier files, for duplicates across files. With checkFaulted, a
// server the schema found fault with is read without the faulted fields,
// as faulted, unless what is faulted decides what kind of server it is or
// how its command is found.
func (d *document) servers(defined map[string]string, vars Vars, checkFaulted bool) (out, faulted []*Server) {
	key := "servers"
	if _, ok := d.root["mcpServers"]; ok {
		if _, both := d.root["servers"]; both {
			d.errorAt([]string{"mcpServers"}, true, `both "servers" and "mcpServers" are present`,
				`keep one: "servers" (VS Code) or "mcpServers" (Claude, Cursor)`)
			return nil, nil
		}
		key = "mcpServers"
	}
	objs, _ := d.root[key].(map[string]any)
	defaults, _ := d.root["defaults"].(map[string]any)
	for _, name := range d.ix.keys[pathKey(d.writtenPath([]string{key}))] {
		obj, ok := objs[name].(map[string]any)
		if !ok {
			continue
		}
		here := d.where([]string{key, name})
		if there, dup := defined[name]; dup {
			d.errorAt([]string{key, name}, true, fmt.Sprintf("duplicate server name %q (also defined at %s)", name, there), "remove one, or give it another name")
			continue
		}
		defined[name] = here
		if d.faulted[name] != nil {
			// Not when what is faulted decides the kind of server, or
			// where and how its command is found (its PATH in env, its
			// cwd): the checks would be of another server. A disabled
			// one is never checked.
			decisive := []string{"", "type", "command", "url", "disabled", "env", "envFile", "cwd"}
			if disabled, _ := obj["disabled"].(bool); checkFaulted && !disabled && !slices.ContainsFunc(decisive, func(f string) bool { return d.faulted[name][f] }) {
				rest := maps.Clone(obj)
				for f := range d.faulted[name] {
					delete(rest, f)
				}
				faulted = append(faulted, d.server(key, name, rest, defaults, vars))
			}
			continue
		}
		sv := vars
		if disabled, _ := obj["disabled"].(bool); disabled {
			// Never started: the variables and inputs it names are not
			// needed, nor asked for; unset, they read as empty.
			lookup := vars.LookupEnv
			sv.LookupEnv = func(n string) (string, bool) {
				if lookup != nil {
					if v, ok := lookup(n); ok {
						return v, true
					}
				}
				return "", true
			}
			sv.Input = func(string) (string, error) { return "", nil }
		}
		out = append(out, d.server(key, name, obj, defaults, sv))
	}
	return out, faulted
}

// A fieldReader reads one server's fields, each from the server or else
// from the file's defaults, and knows where each came from.
type fieldReader struct {
	d        *document
	server   []string // path of the server
	obj      map[string]any
	defaults map[string]any
	s        *Server
	vars     Vars
	// unexpanded holds the fields whose ${...} failed (and was reported):
	// empty, but not missing.
	unexpanded map[string]bool
	// kind is "stdio" or "remote" when the server's own fields say
	// (type, command or url): defaults of the other kind pass it by.
	kind string
}

// ownKind is the kind of server obj's own fields make it (its type, or a
// field only that kind has), or "" when they leave it to the defaults.
// Fields of both kinds are checkTransport's to refuse.
func ownKind(obj map[string]any) string {
	if t, ok := obj["type"].(string); ok {
		if t == "stdio" {
			return "stdio"
		}
		return "remote"
	}
	has := func(fields ...string) bool {
		return slices.ContainsFunc(fields, func(f string) bool { _, ok := obj[f]; return ok })
	}
	switch {
	case has("command"):
		return "stdio"
	case has("url"):
		return "remote"
	case has(stdioOnly...):
		return "stdio"
	case has(remoteOnly...):
		return "remote"
	}
	return ""
}

// otherKind says whether field is one that only the other kind of server
// than kind has.
func otherKind(field, kind string) bool {
	switch kind {
	case "stdio":
		return field == "url" || slices.Contains(remoteOnly, field)
	case "remote":
		return field == "command" || slices.Contains(stdioOnly, field)
	}
	return false
}

// get returns a field's value and its path, from the server or defaults.
func (r *fieldReader) get(name string) (any, []string, bool) {
	if v, ok := r.obj[name]; ok {
		return v, append(append([]string(nil), r.server...), name), true
	}
	if v, ok := r.defaults[name]; ok && !otherKind(name, r.kind) {
		return v, []string{"defaults", name}, true
	}
	return nil, nil, false
}

// alias reads a field that may also be written under another name. The
// server's own fields win over defaults; one object giving both names is
// an error.
func (r *fieldReader) alias(name, other string) (any, []string, bool) {
	for _, obj := range []struct {
		m    map[string]any
		path []string
	}{{r.obj, r.server}, {r.defaults, []string{"defaults"}}} {
		v, ok := obj.m[name]
		v2, ok2 := obj.m[other]
		at := func(k string) []string { return append(append([]string(nil), obj.path...), k) }
		switch {
		case ok && ok2:
			r.d.errorAt(at(other), true, fmt.Sprintf("%s is another name for %s; give one of them", other, name), "")
			return v, at(name), true
		case ok:
			return v, at(name), true
		case ok2:
			return v2, at(other), true
		}
	}
	return nil, nil, false
}

func (r *fieldReader) note(field string, path []string) {
	r.s.where[field] = r.d.where(path)
}

// markUnexpanded notes that field is empty for a ${...} without a value,
// not missing.
func (r *fieldReader) markUnexpanded(field string) {
	if r.unexpanded == nil {
		r.unexpanded = map[string]bool{}
	}
	r.unexpanded[field] = true
}

func (r *fieldReader) str(field string, path []string, v any) string {
	out, shown, secrets, err := expand(v.(string), r.vars)
	if err != nil && (r.vars.unresolved || errors.Is(err, errValueUnknown)) {
		var ee *expandError
		if errors.As(err, &ee) {
			// Left empty, and not checked: the file as written is wanted.
			r.markUnexpanded(field)
			return ""
		}
	}
	if err != nil {
		var ee *expandError
		if errors.As(err, &ee) {
			r.d.errorAt(path, false, ee.Error(), ee.hint)
		} else {
			r.d.errorAt(path, false, err.Error(), "")
		}
		r.markUnexpanded(field)
		return ""
	}
	r.s.secrets = append(r.s.secrets, secrets...)
	if shown != out {
		r.s.shown[out] = shown
	}
	return out
}

func (r *fieldReader) duration(field string, zeroOK bool) (time.Duration, bool) {
	v, path, ok := r.get(field)
	if !ok {
		return 0, false
	}
	r.note(field, path)
	var d time.Duration
	parsed := false
	switch v := v.(type) {
	case json.Number:
		if f, err := v.Float64(); err == nil && f <= maxDuration.Seconds() {
			d, parsed = time.Duration(f*float64(time.Second)), true
		}
	case string:
		pd, err := time.ParseDuration(v)
		d, parsed = pd, err == nil
	}
	switch {
	case parsed && d == 0 && zeroOK:
		return 0, true
	case !parsed || d <= 0 || d > maxDuration:
		r.d.errorAt(path, false, valueWords("duration", v), "")
	default:
		return d, true
	}
	return 0, false
}

func (r *fieldReader) strings(field string) []string {
	v, path, ok := r.get(field)
	if !ok {
		return nil
	}
	r.note(field, path)
	var out []string
	for i, e := range v.([]any) {
		at := append(append([]string(nil), path...), strconv.Itoa(i))
		// Each placed: a check of the server names the one at fault.
		r.s.where[fmt.Sprintf("%s[%d]", field, i)] = r.d.whereValue(at)
		out = append(out, r.str(field, at, e))
	}
	return out
}

func (r *fieldReader) stringMap(field string) map[string]string {
	v, path, ok := r.get(field)
	out := map[string]string{}
	if !ok {
		return out
	}
	r.note(field, path)
	m := v.(map[string]any)
	keys := append([]string(nil), r.d.ix.keys[pathKey(r.d.writtenPath(path))]...)
	var rest []string
	for k := range m {
		if !slices.Contains(keys, k) {
			rest = append(rest, k) // made up from other fields (Codex)
		}
	}
	slices.Sort(rest)
	folded := map[string]string{} // headers: each name as first written, by its lower case
	for _, k := range append(keys, rest...) {
		if e, ok := m[k]; ok {
			at := append(append([]string(nil), path...), k)
			if field == "headers" {
				if first, dup := folded[strings.ToLower(k)]; dup {
					r.d.errorAt(at, true, fmt.Sprintf("header %s is given twice, as %s too: header names are the same whatever their case", k, first), "keep one of them")
					continue
				}
				folded[strings.ToLower(k)] = k
			}
			val := r.str(field, at, e)
			out[k] = val
			r.s.secrets = append(r.s.secrets, val)
			if msg, hint, key := unpassable(field, k, val); msg != "" {
				r.d.errorAt(at, key, msg, hint)
			}
		}
	}
	return out
}

// unpassable says what of an env or headers entry a process environment
// or HTTP cannot carry: its name (key true) or its value, never shown.
func unpassable(field, name, value string) (msg, hint string, key bool) {
	switch field {
	case "env":
		switch {
		case name == "" || strings.ContainsAny(name, "=\x00"):
			return fmt.Sprintf("%q cannot name an environment variable", name), "a variable's name is not empty and has no '='", true
		case strings.ContainsRune(value, 0):
			return "the value holds a NUL byte, which an environment cannot carry", "", false
		}
	case "headers":
		switch {
		case name == "" || strings.IndexFunc(name, func(c rune) bool { return !isTokenChar(c) }) >= 0:
			return fmt.Sprintf("%q is not a valid HTTP header name", name), "a header's name is letters, digits and !#$%&'*+-.^_`|~: no space or colon", true
		case strings.IndexFunc(value, func(c rune) bool { return c < ' ' && c != '\t' || c == 0x7f }) >= 0:
			return "the value holds a line break or another control character, which an HTTP header cannot carry", "", false
		case transportHeader(name):
			return fmt.Sprintf("header %s is the transport's own: mcpctl sets it for each request", name), "take it out: another value would break the connection", true
		case slices.Contains([]string{"host", "content-length", "transfer-encoding"}, strings.ToLower(name)):
			// Go's client takes these from the url and the body, and
			// would send the request without the value given.
			return fmt.Sprintf("header %s cannot be given: it is made from the url and the request's body", name), "take it out", true
		}
	}
	return "", "", false
}

// transportHeader reports whether an HTTP header is MCP's transport's own
// (streamable HTTP, SSE, WebSocket), set for each request from what it
// carries: a configured value would make the server refuse, or mix up,
// what it is sent. (Accept, Content-Type and the like, which configs
// copied from curl carry, are the SDK's when it sets them: see the
// engine's roundTrip.)
func transportHeader(name string) bool {
	switch strings.ToLower(name) {
	case "mcp-session-id", "mcp-protocol-version", "mcp-method", "mcp-name", "last-event-id", "upgrade":
		return true
	}
	return hasPrefixFold(name, "Mcp-Param-") || hasPrefixFold(name, "Sec-WebSocket-")
}

// hasPrefixFold is strings.HasPrefix without regard to case, as URL
// schemes are.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// HeaderProblem says why an HTTP header NAME: VALUE cannot be sent, or ""
// when it can; the value is never shown.
func HeaderProblem(name, value string) string {
	msg, _, _ := unpassable("headers", name, value)
	return msg
}

// isTokenChar reports whether c may be in an HTTP token (RFC 9110, 5.6.2).
func isTokenChar(c rune) bool {
	return c < 0x7f && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c))
}

// path resolves a path field against the project directory.
func (r *fieldReader) path(p string) string {
	if (p == "~" || strings.HasPrefix(p, "~/")) && r.vars.UserHome != "" {
		p = filepath.Join(r.vars.UserHome, p[1:])
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(r.vars.WorkspaceFolder, p)
	}
	return filepath.Clean(p)
}

func (d *document) server(key, name string, obj, defaults map[string]any, vars Vars) *Server {
	sp := []string{key, name}
	s := &Server{
		Name: name, Env: map[string]string{}, Headers: map[string]string{},
		StartupTimeout: DefaultStartupTimeout, RequestTimeout: DefaultRequestTimeout,
		ShutdownTimeout: DefaultShutdownTimeout, CacheTTL: DefaultCacheTTL,
		Activation: "eager", Restart: "never", MaxRestarts: DefaultMaxRestarts, FailureThreshold: DefaultFailureThreshold,
		Cwd: vars.WorkspaceFolder, Source: d.where(sp), where: map[string]string{}, raw: obj, shown: map[string]string{},
		root: schemas.FieldPath(d.writtenPath(sp)), dir: vars.WorkspaceFolder,
	}
	r := &fieldReader{d: d, server: sp, obj: obj, defaults: defaults, s: s, vars: vars, kind: ownKind(obj)}

	if v, p, ok := r.get("command"); ok {
		r.note("command", p)
		s.Command = r.str("command", p, v)
	}
	s.Args = r.strings("args")
	if v, p, ok := r.get("url"); ok {
		r.note("url", p)
		s.URL = r.str("url", p, v)
		if spans := urlSecrets(s.URL); len(spans) > 0 {
			// A password or key written in the URL is a secret like a
			// header's, as written and as it reads once percent-decoded.
			for _, sp := range spans {
				pw := s.URL[sp[0]:sp[1]]
				s.secrets = append(s.secrets, pw)
				if dec, err := url.QueryUnescape(pw); err == nil && dec != pw {
					s.secrets = append(s.secrets, dec)
				}
			}
			shown := s.URL
			if sh, ok := s.shown[s.URL]; ok {
				shown = sh
			}
			s.shown[s.URL] = hideURLSecrets(shown)
		}
	}
	if v, p, ok := r.get("type"); ok {
		r.note("type", p)
		// Other clients' names for the same transports.
		s.Type = map[string]string{"local": "stdio", "streamable-http": "http", "streamable_http": "http", "streamableHttp": "http", "remote": "http", "websocket": "ws"}[v.(string)]
		if s.Type == "" {
			s.Type = v.(string)
		}
	}
	r.checkTransport()
	if v, p, ok := r.get("cwd"); ok {
		r.note("cwd", p)
		s.Cwd = r.path(r.str("cwd", p, v))
	}
	if v, p, ok := r.get("envFile"); ok {
		r.note("envFile", p)
		s.EnvFile = r.path(r.str("envFile", p, v))
		vals, err := readEnvFile(s.EnvFile)
		if err != nil && !(r.vars.unresolved && errors.Is(err, fs.ErrNotExist)) {
			// Unresolved, one not there yet is left out, as an unset
			// variable is: the file is named, and can be watched for.
			d.errorAt(p, false, s.Redact(err.Error()), "")
		}
		for _, kv := range vals {
			s.Env[kv[0]] = kv[1]
			s.secrets = append(s.secrets, kv[1])
		}
	}
	for k, v := range r.stringMap("env") {
		s.Env[k] = v
	}
	if v, p, ok := r.get("inheritEnv"); ok && s.IsStdio() { // on a remote one: checkTransport
		switch v := v.(type) {
		case bool:
			r.note("inheritEnv", p)
			if !v {
				s.InheritEnv = []string{}
			}
		case []any:
			s.InheritEnv = append([]string{}, r.globs("inheritEnv")...)
		}
	}
	s.Headers = r.stringMap("headers")
	r.checkBearer()
	for _, f := range []struct {
		name string
		dst  *string
	}{{"caFile", &s.CAFile}, {"clientCert", &s.ClientCert}, {"clientKey", &s.ClientKey}} {
		if v, p, ok := r.get(f.name); ok {
			r.note(f.name, p)
			*f.dst = r.path(r.str(f.name, p, v))
		}
	}
	if (s.ClientCert == "") != (s.ClientKey == "") {
		field := "clientKey"
		if s.ClientCert == "" {
			field = "clientCert"
		}
		d.errorAt(append(append([]string(nil), sp...), field), false, "required with "+map[string]string{"clientKey": "clientCert", "clientCert": "clientKey"}[field]+", but missing", "a client certificate needs both its certificate and its key file")
	}

	if t, ok := r.durationAlias("startupTimeout", "timeout"); ok {
		s.StartupTimeout = t
	}
	if t, ok := r.duration("requestTimeout", false); ok {
		s.RequestTimeout = t
	}
	if t, ok := r.duration("shutdownTimeout", false); ok {
		s.ShutdownTimeout = t
	}
	if t, ok := r.duration("idleTimeout", false); ok {
		s.IdleTimeout = t
	}
	if t, ok := r.duration("cacheTTL", true); ok {
		s.CacheTTL = t
	}
	if v, p, ok := r.alias("dependsOn", "dependencies"); ok {
		r.note("dependsOn", p)
		for i, e := range v.([]any) {
			if p[0] == "defaults" && e == name {
				continue // "every server depends on a": a itself does not
			}
			s.where["dependsOn."+strconv.Itoa(len(s.DependsOn))] = d.where(append(append([]string(nil), p...), strconv.Itoa(i)))
			s.DependsOn = append(s.DependsOn, e.(string))
		}
	}
	if v, p, ok := r.get("disabled"); ok {
		r.note("disabled", p)
		s.Disabled = v.(bool)
	}
	if v, p, ok := r.get("activation"); ok {
		r.note("activation", p)
		s.Activation = v.(string)
	}
	if v, p, ok := r.get("restart"); ok {
		r.note("restart", p)
		s.Restart = v.(string)
	}
	if v, p, ok := r.get("maxRestarts"); ok {
		r.note("maxRestarts", p)
		s.MaxRestarts = r.whole(p, v, 0)
	}
	if v, p, ok := r.get("failureThreshold"); ok {
		r.note("failureThreshold", p)
		s.FailureThreshold = r.whole(p, v, 1)
	}
	if v, p, ok := r.get("healthCheck"); ok {
		r.note("healthCheck", p)
		sub := &fieldReader{d: r.d, obj: v.(map[string]any), s: s, server: p}
		if d, ok := sub.duration("interval", false); ok {
			s.HealthInterval = d
		}
	}
	r.limits()
	s.IncludeTools = r.globs("includeTools")
	s.ExcludeTools = r.globs("excludeTools")
	if _, rp, ok := r.get("roots"); ok {
		s.Roots = []string{}
		for i, root := range r.strings("roots") {
			if strings.Contains(root, "://") || hasPrefixFold(root, "file:") {
				// The URI a root is sent as, written instead of its path
				// (file:///srv, or RFC 8089's file:/srv).
				u, err := url.Parse(root)
				if err != nil || !strings.EqualFold(u.Scheme, "file") || (u.Host != "" && u.Host != "localhost") {
					r.d.errorAt(append(append([]string(nil), rp...), strconv.Itoa(i)), false,
						fmt.Sprintf("%q is not a directory of this machine", root), "write a path, or a file:/// URI")
					continue
				}
				root = cmp.Or(u.Path, u.Opaque)
			}
			s.Roots = append(s.Roots, r.path(root))
		}
	} else if s.IsStdio() {
		// A remote server cannot see this machine's directories.
		s.Roots = []string{vars.WorkspaceFolder}
	}
	s.Sampling = r.hook("sampling")
	s.Elicitation = r.hook("elicitation")
	if v, p, ok := r.get("protocolVersion"); ok {
		r.note("protocolVersion", p)
		s.ProtocolVersion = v.(string)
	}
	return s
}

// checkBearer refuses the variable of Codex's bearer_token_env_var when it
// is set but empty, as Codex does: the server would get "Authorization:
// Bearer " and answer unauthorized.
func (r *fieldReader) checkBearer() {
	name := r.d.bearerVars[r.server[len(r.server)-1]]
	if disabled, _ := r.obj["disabled"].(bool); name == "" || disabled || r.vars.unresolved || r.vars.LookupEnv == nil {
		return
	}
	if v, ok := r.vars.LookupEnv(name); ok && v == "" {
		r.d.errorAt(append(append([]string(nil), r.server...), "headers", "Authorization"), false,
			"${"+name+"} is set, but empty", fmt.Sprintf("set %s to the token (bearer_token_env_var names it)", name))
	}
}

// hookVars matches the variables a hook is given as it runs, written
// ${MCPCTL_SERVER} or ${MCPCTL_SERVER:-default}, and $$ (a $ already left
// to the shell), so that one pass tells them apart.
var hookVars = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\$\$|\$\{MCPCTL_(?:SERVER|METHOD)(?::-[^}]*)?\}`)
})

// hook reads a hook from the server, its defaults, or else the file's top
// level.
func (r *fieldReader) hook(field string) *Hook {
	v, p, ok := r.get(field)
	if !ok {
		if v, ok = r.d.root[field]; !ok {
			return nil
		}
		p = []string{field}
	}
	r.note(field, p)
	obj, _ := v.(map[string]any)
	h := &Hook{Dir: r.vars.WorkspaceFolder, Timeout: DefaultHookTimeout, Source: r.d.where(p)}
	// The hook's fields are not the server's: their places stay apart.
	scratch := &Server{where: map[string]string{}, shown: r.s.shown}
	sub := &fieldReader{d: r.d, obj: obj, s: scratch, server: p, vars: r.vars}
	if c, cp, ok := sub.get("command"); ok {
		if cs, ok := c.(string); ok {
			// Set for the hook when it runs: its shell expands them.
			c = hookVars().ReplaceAllStringFunc(cs, func(m string) string {
				if m == "$$" {
					return m
				}
				return "$" + m // $${...}: a literal ${...}
			})
		}
		h.Command = sub.str("command", cp, c)
	}
	if t, ok := sub.duration("timeout", false); ok {
		h.Timeout = t
	}
	r.s.secrets = append(r.s.secrets, scratch.secrets...)
	return h
}

func (r *fieldReader) durationAlias(name, other string) (time.Duration, bool) {
	_, p, ok := r.alias(name, other)
	if !ok {
		return 0, false
	}
	field := p[len(p)-1]
	t, ok := r.duration(field, false)
	r.s.where[name] = r.s.where[field]
	return t, ok
}

// checkTransport settles the type and checks that the fields fit it.
// The fields of one kind of server only, when written on a server of the
// other kind (defaults give them to every server, and are not checked).
var (
	remoteOnly = []string{"headers", "caFile", "clientCert", "clientKey"}
	stdioOnly  = []string{"args", "env", "envFile", "cwd", "limits", "inheritEnv"}
)

// otherClientsFields are the fields other clients keep in a server of
// their mcpServers (Cline's and Roo Code's tools approved without asking):
// theirs to read, left alone, so that their file serves mcpctl as it is.
var otherClientsFields = map[string]bool{"autoApprove": true, "alwaysAllow": true}

// otherClientsNames are other clients' names for a field of mcpctl's,
// with the hint their "unknown field" gets.
var otherClientsNames = map[string]string{
	"serverUrl":     `a remote server's address is "url" here (serverUrl is Windsurf's name)`,
	"httpUrl":       `a remote server's address is "url" here (httpUrl is Gemini CLI's name for a streamable HTTP one)`,
	"transportType": `the transport is "type" here: "http", "sse" or "ws"`,
	// Names for filtering tools, and others, that spelling alone does not
	// lead to ("disabledTools" is nearest "disabled").
	"disabledTools":     `did you mean "excludeTools"? (globs of the tools to hide)`,
	"disabled_tools":    `did you mean "excludeTools"? (globs of the tools to hide)`,
	"excludedTools":     `did you mean "excludeTools"? (globs of the tools to hide)`,
	"allowedTools":      `did you mean "includeTools"? (globs of the only tools to offer)`,
	"enabledTools":      `did you mean "includeTools"? (globs of the only tools to offer)`,
	"enabled_tools":     `did you mean "includeTools"? (globs of the only tools to offer)`,
	"enabled":           `a server is on unless "disabled": true`,
	"workingDirectory":  `did you mean "cwd"? (the server's working directory)`,
	"working_directory": `did you mean "cwd"? (the server's working directory)`,
}

// foreign refuses the fields of the other kind of server that the server
// itself writes.
func (r *fieldReader) foreign(fields []string, kind, hint string) {
	for _, f := range fields {
		if _, ok := r.obj[f]; ok {
			p := append(append([]string(nil), r.server...), f)
			r.d.errorAt(p, true, r.d.writtenName(p)+" is for "+kind, hint)
		}
	}
}

func (r *fieldReader) checkTransport() {
	s, d := r.s, r.d
	if s.Type == "" {
		switch {
		case s.Command != "" || r.unexpanded["command"]:
			s.Type = "stdio"
		case hasPrefixFold(s.URL, "ws://") || hasPrefixFold(s.URL, "wss://"):
			s.Type = "ws"
		case s.URL != "" || r.unexpanded["url"]:
			s.Type, s.TypeImplied = "http", true
		default:
			// A server with another client's name for its url: that
			// field's error says where the address goes. (Faulted
			// fields are not in obj.)
			if f := d.faulted[r.server[len(r.server)-1]]; f["serverUrl"] || f["httpUrl"] {
				return
			}
			d.errorAt(append(append([]string(nil), r.server...), "command"), false, "required, but missing",
				`give "command" for a local server, or "url" for a remote one`)
			return
		}
	}
	switch s.Type {
	case "stdio":
		if s.Command == "" && !r.unexpanded["command"] {
			d.errorAt(append(append([]string(nil), r.server...), "command"), false, "required, but missing", `a stdio server runs "command"`)
		}
		if _, p, ok := r.get("url"); ok {
			hint := `remove it, or set "type": "http"`
			if _, _, both := r.get("command"); both {
				hint = `a server is run ("command") or reached ("url"): keep one`
			}
			d.errorAt(p, true, "url is for http, sse and ws servers", hint)
		}
		r.foreign(remoteOnly, "http, sse and ws servers", "remove it: a stdio server is run, not reached")
	default:
		r.foreign(stdioOnly, "stdio servers", "remove it: mcpctl does not run a remote server")
		if s.URL == "" {
			if _, _, ok := r.get("url"); !ok {
				d.errorAt(append(append([]string(nil), r.server...), "url"), false, "required, but missing", "servers of type "+s.Type+" are reached at \"url\"")
			}
			return
		}
		if _, p, ok := r.get("command"); ok {
			d.errorAt(p, true, "command is for stdio servers", `remove it, or remove "type"`)
		}
		if _, p, ok := r.get("url"); ok {
			typ := s.Type
			if s.TypeImplied {
				typ = "" // no type written: ws:// would do too
			}
			if msg, hint := urlProblem(s.URL, typ, s.Redact); msg != "" {
				d.errorAt(p, false, msg, hint)
			}
		}
	}
	_ = d
}

// urlProblem says what is wrong with the url of a server of type typ, or
// "" when nothing is: its scheme, its host and port, its escapes. The URL
// is shown (redacted) only when it has no @: what fails to parse may hide
// a password, which redaction does not know.
func urlProblem(raw, typ string, redact func(string) string) (msg, hint string) {
	schemes := map[string][]string{"http": {"http", "https"}, "sse": {"http", "https"}, "ws": {"ws", "wss"}, "": {"http", "https", "ws", "wss"}}[typ]
	scheme, rest, hasScheme := strings.Cut(raw, "://")
	if strings.TrimSpace(raw) != raw {
		// A space at the end passes for part of the path: a 404.
		return "the URL has white space at its start or end", "remove it"
	}
	if !hasScheme || !slices.Contains(schemes, strings.ToLower(scheme)) {
		return schemeProblem(raw, scheme, hasScheme, schemes, redact)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return parseProblem(err, scheme, rest)
	}
	if u.Host == "" {
		return "not a URL with a host", ""
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Sprintf("the URL's port %s is out of range: a port is from 1 to 65535", p), ""
		}
	}
	return "", ""
}

// schemeProblem is urlProblem's for a URL without the scheme its type
// takes (schemes), with a hint to write one where it is clear which.
func schemeProblem(raw, scheme string, hasScheme bool, schemes []string, redact func(string) string) (msg, hint string) {
	starts := make([]string, len(schemes))
	for i, sc := range schemes {
		starts[i] = sc + "://"
	}
	msg = fmt.Sprintf("expected a URL starting with %s or %s", strings.Join(starts[:len(starts)-1], ", "), starts[len(starts)-1])
	if strings.Contains(raw, "@") {
		return msg, "" // not shown: it may hold a password
	}
	switch {
	case hasScheme:
		if near := schemas.Closest(strings.ToLower(scheme), schemes); len(near) > 0 {
			hint = fmt.Sprintf("did you mean %s://?", near[0])
		}
	case schemeWithoutColon(raw, schemes) != "":
		// http//host: the scheme's colon left out.
		hint = fmt.Sprintf("did you mean %s?", redact(schemeWithoutColon(raw, schemes)))
	case looksSchemed().MatchString(raw):
		// http:/host: a scheme, mistyped after it.
	case isHostAndPath(raw):
		// Shown: a URL without a scheme parsed as one (127.0.0.1:
		// 8080/mcp fails to, "first path segment ... colon").
		hint = fmt.Sprintf("e.g. %s://%s", schemes[0], redact(raw))
	default:
		hint = fmt.Sprintf("write the server's address, e.g. %s://localhost:8080/mcp", schemes[0])
	}
	return fmt.Sprintf("%s, got %q", msg, redact(raw)), hint
}

// isHostAndPath says whether s reads as a URL once a scheme is put before
// it: a host, a port perhaps, a path.
func isHostAndPath(s string) bool {
	u, err := url.Parse("http://" + s)
	return err == nil && u.Host != "" && !strings.ContainsAny(s, " \t")
}

// parseProblem says why net/url refused a URL (err) that has a scheme and
// rest after it, without showing it.
func parseProblem(err error, scheme, rest string) (msg, hint string) {
	host, _, _ := strings.Cut(rest, "/")
	host = host[strings.LastIndex(host, "@")+1:]
	var ee url.EscapeError
	var he url.InvalidHostError
	switch why := errors.Unwrap(err); {
	case strings.Contains(rest, "@"):
		return "not a URL with a host", "in a user or password, write @ : / ? # as %40 %3A %2F %3F %23"
	case strings.Count(host, ":") > 1 && !strings.HasPrefix(host, "["):
		return "not a URL with a host", fmt.Sprintf("an IPv6 address goes in brackets, e.g. %s://[::1]:8080/mcp", strings.ToLower(scheme))
	case errors.As(why, &ee):
		return "the URL holds a % that does not start an escape (% and two hex digits)", "write a % itself as %25"
	case errors.As(why, &he) && string(he) == " ":
		return "the URL's host holds a space", "remove it; in the path, write a space as %20"
	case errors.As(why, &he):
		return fmt.Sprintf("the URL's host holds %q, which a host name cannot", string(he)), ""
	case why != nil && strings.HasPrefix(why.Error(), "invalid port"):
		return "the URL's port is not a number from 1 to 65535", "e.g. :8080 after the host"
	case why != nil && strings.Contains(why.Error(), "control character"):
		return "the URL holds a control character", "remove it"
	}
	return "not a URL with a host", ""
}

func (r *fieldReader) limits() {
	v, p, ok := r.get("limits")
	if !ok {
		return
	}
	r.note("limits", p)
	m := v.(map[string]any)
	at := func(k string) []string { return append(append([]string(nil), p...), k) }
	for k := range m {
		// Placed at the value: a check says it is too high.
		r.s.where["limits."+k] = r.d.whereValue(at(k))
	}
	if e, ok := m["memory"]; ok {
		n, err := parseSize(e)
		if err != nil {
			r.d.errorAt(at("memory"), false, err.Error(), "")
		}
		r.s.Limits.Memory = n
	}
	if _, ok := m["cpuTime"]; ok {
		sub := &fieldReader{d: r.d, obj: m, s: r.s, server: p}
		if d, ok := sub.duration("cpuTime", false); ok {
			r.s.Limits.CPUTime = d
		}
	}
	if e, ok := m["openFiles"]; ok {
		r.s.Limits.OpenFiles = r.whole(at("openFiles"), e, 1)
	}
	if e, ok := m["processes"]; ok {
		r.s.Limits.Processes = r.whole(at("processes"), e, 1)
	}
}

// whole reads a number the schema types as an integer, which JSON Schema
// lets be written 5.0 or 1e1; one with a fraction, or too large to count
// anything, is an error at path.
func (r *fieldReader) whole(path []string, v any, least int) int {
	n, _ := v.(json.Number)
	if i, err := n.Int64(); err == nil && i >= int64(least) && i <= math.MaxInt32 {
		return int(i)
	}
	if f, err := n.Float64(); err == nil && f == math.Trunc(f) && f >= float64(least) && f <= math.MaxInt32 {
		return int(f)
	}
	r.d.errorAt(path, false, fmt.Sprintf("expected a whole number from %d to %d, got %s", least, math.MaxInt32, n), "")
	return 0
}

func (r *fieldReader) globs(field string) []string {
	out := r.strings(field)
	for i, g := range out {
		if _, err := filepath.Match(g, ""); err != nil {
			_, p, _ := r.get(field)
			if shown, ok := r.s.shown[g]; ok {
				g = shown // as written: it may hold a secret
			}
			r.d.errorAt(append(append([]string(nil), p...), strconv.Itoa(i)), false, fmt.Sprintf("%q is not a valid glob", g), "use * and ? and [a-z]")
		}
	}
	return out
}

// parseSize reads 512MiB, 1G, 800k, 1.5g or a number of bytes. The units
// k, m, g and t are powers of 1024, with or without "i" and "B".
func parseSize(v any) (int64, error) {
	f, err := sizeOf(v)
	switch {
	case err != nil:
		return 0, err
	case f <= 0:
		return 0, fmt.Errorf("expected a size above zero, got %s", schemas.JSONText(v))
	case f > 1<<60:
		return 0, fmt.Errorf("expected a size of at most 1 EiB, got %s", schemas.JSONText(v))
	case f != math.Trunc(f):
		return 0, fmt.Errorf("expected a whole number of bytes, got %s", schemas.JSONText(v))
	}
	return int64(f), nil
}

// sizeOf is the number of bytes a size says, however many.
func sizeOf(v any) (float64, error) {
	if n, ok := v.(json.Number); ok {
		f, err := n.Float64()
		if err != nil {
			return 0, fmt.Errorf("expected a size in bytes, got %s", n)
		}
		return f, nil
	}
	s := strings.TrimSpace(v.(string))
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	}
	f, err := strconv.ParseFloat(num, 64)
	unit = strings.TrimSuffix(strings.TrimSuffix(unit, "b"), "i")
	mult := map[string]float64{"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[unit]
	if err != nil || mult == 0 {
		return 0, fmt.Errorf(`expected a size such as "512MiB" or "1G", or a number of bytes, got %q`, s)
	}
	return f * mult, nil
}

// readEnvFile reads KEY=VALUE lines: blank lines and # comments are
// skipped, "export " is allowed, values may be quoted ('…' as is, "…" with
// \n, \t, \" and \\).
func readEnvFile(path string) ([][2]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if pe, ok := err.(*os.PathError); ok {
			return nil, fmt.Errorf("cannot read %s: %w", pe.Path, pe.Err)
		}
		return nil, err
	}
	var out [][2]string
	// A BOM, as Windows editors save one, is not the first key's.
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	// Split, not scanned: a bufio.Scanner stops at a line over 64 KiB, and
	// every line after it was lost unsaid.
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || !validVarName(k) {
			return nil, fmt.Errorf("%s:%d: expected KEY=VALUE, KEY of letters, digits and _ not starting with a digit", path, n)
		}
		v = strings.TrimSpace(v)
		switch {
		case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
			v = v[1 : len(v)-1]
		case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
			v = strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\"`, `"`, `\\`, `\`).Replace(v[1 : len(v)-1])
		default:
			if i := strings.Index(v, " #"); i >= 0 {
				v = strings.TrimSpace(v[:i])
			}
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

// checkDependencies reports unknown names, disabled dependencies and
// every cycle in dependsOn. known names every server defined, including
// those that could not be read, which are not checked further.
func checkDependencies(servers []*Server, known map[string]bool) Errors {
	byName := map[string]*Server{}
	var names []string
	for _, s := range servers {
		byName[s.Name] = s
		names = append(names, s.Name)
	}
	var errs Errors
	for _, s := range servers {
		for i, dep := range s.DependsOn {
			where := s.Where("dependsOn." + strconv.Itoa(i))
			switch d := byName[dep]; {
			case d == nil && known[dep]:
				// Not readable: its own errors are reported.
			case d == nil:
				hint := ""
				// Never the server itself: that would be a cycle.
				others := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == s.Name })
				if near := schemas.Closest(dep, others); len(near) > 0 {
					hint = fmt.Sprintf("did you mean %q?", near[0])
				}
				errs = append(errs, errorAtPlace(where, fmt.Sprintf("servers.%s.dependsOn[%d]", s.Name, i), fmt.Sprintf("unknown server %q", dep), hint))
			case d.Disabled && !s.Disabled:
				errs = append(errs, errorAtPlace(where, fmt.Sprintf("servers.%s.dependsOn[%d]", s.Name, i), fmt.Sprintf("server %q is disabled", dep), "enable it, or drop the dependency"))
			case d.Activation == "manual" && !s.Disabled && (s.Activation == "" || s.Activation == "eager"):
				// s starts with the session, before anyone could start d.
				errs = append(errs, errorAtPlace(where, fmt.Sprintf("servers.%s.dependsOn[%d]", s.Name, i), fmt.Sprintf("server %q starts only by hand (activation manual), and %s starts with the session, before it", dep, s.Name),
					fmt.Sprintf("make %s lazy or manual too, or %s eager or lazy", s.Name, dep)))
			}
		}
	}
	// Depth-first search; a grey node met again closes a cycle. Unknown
	// and unreadable servers are passed over: a cycle among the others is
	// reported beside them.
	const white, grey, black = 0, 1, 2
	color := map[string]int{}
	var stack []string
	var visit func(n string) []string
	visit = func(n string) []string {
		color[n] = grey
		stack = append(stack, n)
		for _, dep := range byName[n].DependsOn {
			if byName[dep] == nil {
				continue
			}
			switch color[dep] {
			case grey:
				i := slices.Index(stack, dep)
				return append(append([]string(nil), stack[i:]...), dep)
			case white:
				if c := visit(dep); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[n] = black
		return nil
	}
	for _, s := range servers {
		if color[s.Name] != white {
			continue
		}
		cycle := visit(s.Name)
		if cycle == nil {
			continue
		}
		first := byName[cycle[0]]
		i := slices.Index(first.DependsOn, cycle[1])
		errs = append(errs, errorAtPlace(first.Where("dependsOn."+strconv.Itoa(i)), fmt.Sprintf("servers.%s.dependsOn[%d]", first.Name, i),
			"dependency cycle: "+strings.Join(cycle, " → "), "remove one of these dependencies"))
		// The search stopped at the cycle: what it went through is done
		// with, and a cycle elsewhere is looked for and reported too.
		for _, n := range stack {
			color[n] = black
		}
		stack = stack[:0]
	}
	return errs
}

// errorAtPlace builds an Error from a "file:line:col" place.
func errorAtPlace(place, field, msg, hint string) *Error {
	e := &Error{File: place, Field: field, Msg: msg, Hint: hint}
	parts := strings.Split(place, ":")
	if len(parts) >= 3 {
		line, err1 := strconv.Atoi(parts[len(parts)-2])
		col, err2 := strconv.Atoi(parts[len(parts)-1])
		if err1 == nil && err2 == nil {
			e.File, e.Line, e.Col = strings.Join(parts[:len(parts)-2], ":"), line, col
		}
	}
	return e
}

// inputs resolves ${input:ID}: from $MCPCTL_INPUT_<ID>, else by asking, once
// per id.
type inputs struct {
	declared []Input
	opts     Options
	mu       sync.Mutex
	values   map[string]string
	// interrupted is set when the user gave up answering (Ctrl-C); no
	// further input is asked for and the load ends with it.
	interrupted error
}

// checkInputs finds inputs of one file that share an id, or whose ids are
// set by one variable (api-key, api_key): ${input:ID} would take whichever
// was declared first, and the variable would set both. And a pickString
// needs options to pick from, its default among them.
func (d *document) checkInputs() {
	list, _ := d.root["inputs"].([]any)
	first := map[string]int{} // InputEnv(id) → index of the first input with it
	for i, item := range list {
		obj, _ := item.(map[string]any)
		if obj["type"] == "pickString" {
			options, _ := obj["options"].([]any)
			def, hasDefault := obj["default"].(string)
			switch {
			case len(options) == 0:
				_, written := obj["options"]
				path := []string{"inputs", strconv.Itoa(i)}
				if written {
					path = append(path, "options")
				}
				d.errorAt(path, false, "a pickString input needs options to pick from",
					`list them, e.g. "options": ["small", "large"], or make it a promptString`)
			case hasDefault && def != "" && !slices.Contains(options, any(def)):
				d.errorAt([]string{"inputs", strconv.Itoa(i), "default"}, false, fmt.Sprintf("default %q is not one of the options", def),
					"add it to the options, or choose one of them")
			}
		}
		id, _ := obj["id"].(string)
		if id == "" {
			continue
		}
		env := InputEnv(id)
		j, seen := first[env]
		if !seen {
			first[env] = i
			continue
		}
		other, _ := list[j].(map[string]any)["id"].(string)
		path := []string{"inputs", strconv.Itoa(i), "id"}
		line, col := d.at([]string{"inputs", strconv.Itoa(j), "id"}, false)
		if other == id {
			d.errorAt(path, false, fmt.Sprintf("duplicate input id %q (first declared at %d:%d)", id, line, col),
				"remove one, or give it another id")
			continue
		}
		d.errorAt(path, false, fmt.Sprintf("input id %q is set by %s, as %q is (declared at %d:%d)", id, env, other, line, col),
			"give one an id that differs in more than case and punctuation")
	}
}

// checkInputsAcross finds an input id that two files declare unlike (a
// pickString in one, a password in the other): ${input:ID} is one value,
// so a server of one file would get what the other declared. Declared
// alike, it is one input, asked once.
func checkInputsAcross(docs []*document) {
	type decl struct {
		d   *document
		i   int
		obj map[string]any
	}
	first := map[string]decl{} // InputEnv(id) → where it was first declared
	for _, d := range docs {
		list, _ := d.root["inputs"].([]any)
		for i, item := range list {
			obj, _ := item.(map[string]any)
			id, _ := obj["id"].(string)
			if id == "" {
				continue
			}
			f, seen := first[InputEnv(id)]
			if !seen {
				first[InputEnv(id)] = decl{d, i, obj}
				continue
			}
			if f.d == d {
				continue // one file's own clashes are checkInputs'
			}
			// The fields that differ (not the description, which only
			// tells the user): none, and it is one input.
			fields := maps.Clone(f.obj)
			maps.Copy(fields, obj)
			delete(fields, "description")
			var differ []string
			for _, k := range slices.Sorted(maps.Keys(fields)) {
				if !reflect.DeepEqual(f.obj[k], obj[k]) {
					differ = append(differ, k)
				}
			}
			if len(differ) == 0 {
				continue
			}
			line, col := f.d.at([]string{"inputs", strconv.Itoa(f.i), "id"}, false)
			d.errorAt([]string{"inputs", strconv.Itoa(i), "id"}, false,
				fmt.Sprintf("input id %q is declared otherwise in %s:%d:%d (%s); ${input:%s} has one value for both files", id, f.d.file, line, col, strings.Join(differ, ", "), id),
				"declare it alike in both, or give one another id")
		}
	}
}

func newInputs(docs []*document, opts Options) *inputs {
	in := &inputs{opts: opts, values: map[string]string{}}
	for _, d := range docs {
		raw, _ := json.Marshal(d.root["inputs"])
		var list []Input
		json.Unmarshal(raw, &list)
		in.declared = append(in.declared, list...)
	}
	return in
}

func (in *inputs) noAskHint(env string) string {
	if in.opts.NoAskHint != nil {
		return in.opts.NoAskHint(env)
	}
	return fmt.Sprintf("set %s, or run mcpctl on a terminal to be asked", env)
}

func (in *inputs) value(id string) (string, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if v, ok := in.values[id]; ok {
		return v, nil
	}
	i := slices.IndexFunc(in.declared, func(d Input) bool { return d.ID == id })
	if v, ok := in.opts.LookupEnv(InputEnv(id)); ok {
		// A choice is checked as the terminal checks it, empty taking
		// the default.
		if i >= 0 && len(in.declared[i].Options) > 0 && v == "" {
			v = in.declared[i].Default
		}
		if i >= 0 && len(in.declared[i].Options) > 0 && !slices.Contains(in.declared[i].Options, v) {
			return "", &expandError{msg: fmt.Sprintf("is set by %s to a value that is not one of its options (%s)", InputEnv(id), strings.Join(in.declared[i].Options, ", ")),
				hint: fmt.Sprintf("set %s to one of them", InputEnv(id))}
		}
		in.values[id] = v
		return v, nil
	}
	if i < 0 {
		return "", &expandError{msg: "refers to an input that \"inputs\" does not declare",
			hint: fmt.Sprintf(`declare it in "inputs", or set %s`, InputEnv(id))}
	}
	if in.opts.Ask == nil && in.declared[i].Default != "" {
		// Nobody to ask: the declared default is the answer.
		in.values[id] = in.declared[i].Default
		return in.declared[i].Default, nil
	}
	if in.opts.Ask == nil && in.opts.Placeholder != "" {
		return in.opts.Placeholder, nil
	}
	if in.opts.Ask == nil {
		return "", &expandError{msg: "has no value", hint: in.noAskHint(InputEnv(id))}
	}
	if in.interrupted != nil {
		return "", in.interrupted
	}
	v, err := in.opts.Ask(in.declared[i])
	if errors.Is(err, context.Canceled) {
		in.interrupted = err
		return "", err
	}
	if err != nil {
		return "", &expandError{msg: "has no value: " + err.Error(), hint: fmt.Sprintf("set %s", InputEnv(id)), cause: err}
	}
	in.values[id] = v
	return v, nil
}

// schemeWithoutColon is raw with the colon its scheme lacks put back
// (http//host → http://host), when it starts with one of schemes so; "".
func schemeWithoutColon(raw string, schemes []string) string {
	for _, scheme := range schemes {
		if len(raw) > len(scheme)+2 && strings.EqualFold(raw[:len(scheme)+2], scheme+"//") {
			return scheme + "://" + raw[len(scheme)+2:]
		}
	}
	return ""
}

// looksSchemed matches a URL that starts with a scheme, however mistyped
// what follows it is (http:/host): no scheme is to be put before it.
var looksSchemed = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:/`) })
