package config

import (
	"fmt"
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
}

// An expandError says which reference in a value could not be resolved.
// It never holds a resolved value, so it cannot leak a secret.
type expandError struct {
	ref  string // the reference as written, e.g. ${BRAVE_API_KEY}
	msg  string
	hint string
}

func (e *expandError) Error() string { return e.ref + " " + e.msg }

// expand replaces ${VAR}, ${VAR:-default}, ${env:VAR}, ${workspaceFolder}
// and ${userHome} in s, and $$ with a literal $. Any other $ is kept as
// written. A variable that is unset and has no default is an error.
func expand(s string, v Vars) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' {
			b.WriteByte(c)
			i++
			continue
		}
		if strings.HasPrefix(s[i:], "$$") {
			b.WriteByte('$')
			i += 2
			continue
		}
		if !strings.HasPrefix(s[i:], "${") {
			b.WriteByte(c)
			i++
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", &expandError{ref: s[i:], msg: "is not closed", hint: "close it with }, or write $$ for a literal $"}
		}
		ref := s[i : i+end+1]
		val, err := resolve(ref, s[i+2:i+end], v)
		if err != nil {
			return "", err
		}
		b.WriteString(val)
		i += end + 1
	}
	return b.String(), nil
}

func resolve(ref, body string, v Vars) (string, error) {
	name, def, hasDef := strings.Cut(body, ":-")
	switch {
	case name == "workspaceFolder":
		return v.WorkspaceFolder, nil
	case name == "userHome":
		return v.UserHome, nil
	case strings.HasPrefix(name, "env:"):
		name = strings.TrimPrefix(name, "env:")
	case strings.HasPrefix(name, "input:"):
		return "", &expandError{ref: ref, msg: "cannot be resolved: VS Code inputs are not supported yet",
			hint: "use an environment variable instead, e.g. ${MY_TOKEN}"}
	case strings.Contains(name, ":"):
		return "", &expandError{ref: ref, msg: "is not a known variable",
			hint: "write ${VAR}, ${VAR:-default}, ${env:VAR}, ${workspaceFolder} or ${userHome}"}
	}
	if !validVarName(name) {
		return "", &expandError{ref: ref, msg: "is not a valid variable name",
			hint: "variable names use letters, digits and _, and do not start with a digit"}
	}
	var val string
	ok := false
	if v.LookupEnv != nil {
		val, ok = v.LookupEnv(name)
	}
	if hasDef && (!ok || val == "") {
		return def, nil
	}
	if !ok {
		return "", &expandError{ref: ref, msg: "is not set",
			hint: fmt.Sprintf("export %s, or give a default: ${%s:-value}", name, name)}
	}
	return val, nil
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
