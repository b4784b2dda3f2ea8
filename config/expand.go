package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Vars resolves the names that ${...} may refer to.
type Vars struct {
	// LookupEnv reads the environment; nil means no variables are set.
	LookupEnv func(string) (string, bool)
	// WorkspaceFolder is ${workspaceFolder}: the project directory.
	WorkspaceFolder string
	// UserHome is ${userHome}.
	UserHome string
	// Input resolves ${input:ID}; nil means inputs cannot be resolved.
	Input func(id string) (string, error)

	unresolved bool                                  // Options.Unresolved
	unsetHint  func(name, withDefault string) string // Options.UnsetHint
}

// An expandError says which reference in a value could not be resolved.
// It never holds a resolved value, so it cannot leak a secret.
type expandError struct {
	ref   string // the reference as written, e.g. ${BRAVE_API_KEY}
	msg   string
	hint  string
	cause error
}

func (e *expandError) Error() string { return e.ref + " " + e.msg }
func (e *expandError) Unwrap() error { return e.cause }

// errValueUnknown is what Validate's inputs answer: a value that will be
// there at run time, but is not now. What it would fill is not checked.
var errValueUnknown = errors.New("not known until the servers run")

// expand replaces ${VAR}, ${VAR:-default} (a default may hold another
// ${...}), ${env:VAR}, ${input:ID},
// ${workspaceFolder}, ${workspaceFolderBasename}, ${userHome} and
// ${pathSeparator} (${/}) in s, and $$ with a literal $. Any other
// $ is kept as written. A variable that is unset and has no default is an
// error. secrets are the values that came from the environment or inputs:
// they are kept out of output.
func expand(s string, v Vars) (out, shown string, secrets []string, err error) {
	if !strings.Contains(s, "$") {
		return s, s, nil, nil
	}
	var b, sh strings.Builder // sh: the value with its secrets redacted
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' {
			b.WriteByte(c)
			sh.WriteByte(c)
			i++
			continue
		}
		if strings.HasPrefix(s[i:], "$$") {
			b.WriteByte('$')
			sh.WriteByte('$')
			i += 2
			continue
		}
		if !strings.HasPrefix(s[i:], "${") {
			b.WriteByte(c)
			sh.WriteByte(c)
			i++
			continue
		}
		end := closingBrace(s[i:])
		if end < 0 {
			return "", "", nil, &expandError{ref: s[i:], msg: "is not closed", hint: "close it with }, or write $$ for a literal $"}
		}
		ref := s[i : i+end+1]
		val, fromEnv, inner, err := resolve(ref, s[i+2:i+end], v)
		if err != nil {
			return "", "", nil, err
		}
		b.WriteString(val)
		// A default's own secrets too: in free text (a server's stderr)
		// they may come back alone.
		secrets = append(secrets, inner...)
		if fromEnv && val != "" {
			secrets = append(secrets, val)
			sh.WriteString(Redacted)
		} else {
			sh.WriteString(val)
		}
		i += end + 1
	}
	return b.String(), sh.String(), secrets, nil
}

// InputEnvPrefix starts the name of every variable that gives an input.
const InputEnvPrefix = "MCPCTL_INPUT_"

// InputEnv is the environment variable that gives the value of ${input:id}.
func InputEnv(id string) string {
	var b strings.Builder
	b.WriteString(InputEnvPrefix)
	for _, r := range strings.ToUpper(id) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// resolve returns the value of one ${...}; secret says it came from the
// environment or an input, inner are the secrets a default held.
func resolve(ref, body string, v Vars) (val string, secret bool, inner []string, err error) {
	name, def, hasDef := strings.Cut(body, ":-")
	spelled := "" // how the reference named the environment, for the hint
	switch {
	case name == "workspaceFolder":
		return v.WorkspaceFolder, false, nil, nil
	case name == "userHome":
		return v.UserHome, false, nil, nil
	case name == "workspaceFolderBasename":
		return filepath.Base(v.WorkspaceFolder), false, nil, nil
	case name == "pathSeparator" || name == "/":
		return string(filepath.Separator), false, nil, nil
	case strings.HasPrefix(name, "env:"):
		name, spelled = strings.TrimPrefix(name, "env:"), "env:"
	case strings.HasPrefix(name, "input:"):
		id := strings.TrimPrefix(name, "input:")
		if strings.TrimSpace(id) == "" {
			return "", false, nil, &expandError{ref: ref, msg: "names no input", hint: `write ${input:ID}, with the id of an input declared in "inputs"`}
		}
		if v.Input == nil {
			return "", false, nil, &expandError{ref: ref, msg: "cannot be resolved here", hint: "set " + InputEnv(id)}
		}
		val, err := v.Input(id)
		if err != nil {
			var ee *expandError
			if errors.As(err, &ee) {
				ee.ref = ref
				return "", false, nil, ee
			}
			return "", false, nil, &expandError{ref: ref, msg: err.Error(), hint: "set " + InputEnv(id)}
		}
		return val, true, nil, nil
	case strings.Contains(name, ":"):
		return "", false, nil, &expandError{ref: ref, msg: "is not a known variable",
			hint: "write ${VAR}, ${VAR:-default}, ${env:VAR}, ${input:ID}, ${workspaceFolder}, ${workspaceFolderBasename}, ${userHome} or ${pathSeparator}"}
	}
	if !validVarName(name) {
		return "", false, nil, &expandError{ref: ref, msg: "is not a valid variable name",
			hint: "variable names use letters, digits and _, and do not start with a digit"}
	}
	var ok bool
	if v.LookupEnv != nil {
		val, ok = v.LookupEnv(name)
	}
	if hasDef && (!ok || val == "") {
		// The default may name variables too: ${A:-${B}}.
		out, _, secrets, err := expand(def, v)
		return out, len(secrets) > 0, secrets, err
	}
	if !ok {
		withDefault := "${" + spelled + name + ":-value}"
		hint := fmt.Sprintf("export %s, or give a default: %s", name, withDefault)
		if v.unsetHint != nil {
			hint = v.unsetHint(name, withDefault)
		}
		return "", false, nil, &expandError{ref: ref, msg: "is not set", hint: hint}
	}
	return val, true, nil, nil
}

// closingBrace returns the index in s, which starts with "${", of the }
// that closes it, counting the ${ opened inside it (a default such as
// ${A:-${B}}); -1 if none does.
func closingBrace(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], "${"):
			depth++
			i++
		case s[i] == '}':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
