package config

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/mcpctl/mcpctl/schemas"
)

// serverNameRule says what a server name may be: the schema's pattern for
// the names under "servers", in words.
const serverNameRule = "invalid server name: use 1 to 64 ASCII letters, digits, '_' and '-', not starting with '-' (no dots)"

// transports are the types a Server holds once read: other clients' names
// (local, streamable-http, websocket...) are turned into these as a file
// is read. "" is stdio, in a Server built in Go.
var transports = []string{"stdio", "http", "sse", "ws"}

// Validate checks the server set of a Config built in Go for what [Load]
// and [Parse] refuse in a file, and the engine cannot run: a nil server;
// a server name that is not one (a dot, a space, empty) or is given twice;
// a type, activation or restart that is none of those known; a stdio
// server without a command, a remote one without a url; a dependsOn that
// names no server, a disabled one, or a manual one an eager server would
// wait for; and a dependency cycle. It looks at nothing else (a command
// that is not found, a cwd that is not there: [Config.Check]).
//
// A config from Load or Parse passes (but for one loaded with
// [Options.Unresolved], whose servers cannot run). Every problem is
// reported, as
// [Errors]; a field not written in a file is placed at the config's File
// (or "config"), with the field's path, e.g.
//
//	config: servers.a.dependsOn[0]: dependency cycle: a → b → a
//
// Go's zero values are taken as a file's defaults: no type is stdio, no
// activation eager, no restart never.
func (c *Config) Validate() error {
	if c == nil {
		return Errors{{File: "config", Msg: "is nil", Hint: "load one with config.Load or config.Parse"}}
	}
	var errs Errors
	var servers []*Server // the first of each name, not nil
	first := map[string]int{}
	for i, s := range c.Servers {
		if s == nil {
			errs = append(errs, &Error{Field: fmt.Sprintf("servers[%d]", i), Msg: "is a nil *config.Server", Hint: "remove it from Servers"})
			continue
		}
		if j, dup := first[s.Name]; dup {
			there := cmp.Or(c.Servers[j].Source, fmt.Sprintf("servers[%d]", j))
			errs = append(errs, errorAtPlace(s.Source, fmt.Sprintf("servers[%d]", i),
				fmt.Sprintf("duplicate server name %q (also defined at %s)", s.Name, there), "remove one, or give it another name"))
			continue
		}
		first[s.Name] = i
		servers = append(servers, s)
		errs = append(errs, s.validate(i)...)
	}
	known := map[string]bool{}
	for _, s := range servers {
		known[s.Name] = true
	}
	errs = append(errs, checkDependencies(servers, known)...)
	for _, e := range errs {
		if e.File == "" {
			e.File = cmp.Or(c.File, "config")
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// validate is [Config.Validate] for one server, the i-th: its name and
// the values the schema allows, as a file would give them, and its
// transport.
func (s *Server) validate(i int) Errors {
	var errs Errors
	add := func(field, msg, hint string) {
		path := s.root
		if path == "" {
			path = schemas.FieldPath([]string{"servers", s.Name})
		}
		if field != "" {
			path += "." + field
		}
		errs = append(errs, errorAtPlace(s.Where(field), path, msg, hint))
	}

	// The schema's own rules, on what a file would have written.
	obj := map[string]any{}
	for field, v := range map[string]string{"activation": s.Activation, "restart": s.Restart} {
		if v != "" {
			obj[field] = v
		}
	}
	doc := map[string]any{"servers": map[string]any{s.Name: obj}}
	vs := configSchema().Validate(doc)
	slices.SortFunc(vs, func(a, b schemas.Violation) int { return cmp.Compare(a.Field(), b.Field()) })
	for _, v := range vs {
		switch {
		case v.Keyword == "propertyNames":
			errs = append(errs, errorAtPlace(s.Source, fmt.Sprintf("servers[%d]", i),
				fmt.Sprintf("%s, got %q", serverNameRule, s.Name), `e.g. "github" or "my-server"`))
		case len(v.Path) == 3:
			add(v.Path[2], v.Message, enumHint(v.Message))
		default:
			add("", v.Message, "")
		}
	}

	switch {
	case s.Type != "" && !slices.Contains(transports, s.Type):
		msg := `expected one of "stdio", "http", "sse", "ws", got ` + strconv.Quote(s.Type)
		add("type", msg, enumHint(msg))
	case s.IsStdio():
		if s.Command == "" {
			hint := `a stdio server runs "command"`
			if s.URL != "" {
				hint = `a server with a url is remote: set Type to "http", "sse" or "ws"`
			}
			add("command", "required, but missing", hint)
		}
	case s.URL == "" && s.Source == "":
		// Built in Go. One read from a file may have a url that
		// expands to nothing ("${URL:-}"), which loads: its start says.
		add("url", "required, but missing", "servers of type "+s.Type+" are reached at \"url\"")
	}
	return errs
}

// enumHint is the hint a file's value gets when it is none of those
// allowed (msg, a schema's "expected one of ..., got ..."): the allowed one
// nearest it, if any is near ("htp"); not for a version or a number,
// where near in letters is not near.
func enumHint(msg string) string {
	m := enumMessage().FindStringSubmatch(msg)
	if m == nil || !strings.ContainsFunc(m[2], unicode.IsLetter) {
		return ""
	}
	var allowed []string
	for _, q := range quoted().FindAllStringSubmatch(m[1], -1) {
		allowed = append(allowed, q[1])
	}
	if near := schemas.Closest(m[2], allowed); len(near) > 0 {
		return fmt.Sprintf("did you mean %q?", near[0])
	}
	return ""
}
