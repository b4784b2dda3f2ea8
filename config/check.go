package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// A CheckError is a problem with a server that the file alone does not
// show: its command is not found, its cwd does not exist, its limits cannot
// be applied. It names the server and the place in the file.
type CheckError struct {
	Server string
	Field  string // the field at fault, e.g. "command"
	Place  string // file:line:col of that field
	Msg    string
	Hint   string

	root string // the server as the file names it (Server.root)
}

// checkError is a problem Check found with field of s.
func (s *Server) checkError(field, msg, hint string) *CheckError {
	return &CheckError{Server: s.Name, Field: field, Place: s.Where(field), Msg: msg, Hint: hint, root: s.root}
}

func (e *CheckError) Error() string {
	return fmt.Sprintf("%s (server %s, %s)", e.Msg, e.Server, e.Place)
}

// Hints implements the hint convention of mcpctl's error printer.
func (e *CheckError) Hints() []string {
	if e.Hint == "" {
		return nil
	}
	return []string{e.Hint}
}

// AsConfigError places the problem the way config errors are placed, for
// `config validate`.
func (e *CheckError) AsConfigError() *Error {
	root := e.root
	if root == "" {
		root = "servers." + e.Server
	}
	return errorAtPlace(e.Place, root+"."+e.Field, e.Msg, e.Hint)
}

// Check reports what would stop the server from starting that the file
// alone does not show. It looks at the file system; it starts nothing.
func (s *Server) Check() []*CheckError {
	var errs []*CheckError
	add := func(field, msg, hint string) {
		errs = append(errs, s.checkError(field, msg, hint))
	}
	if s.IsStdio() {
		if err := s.CheckCwd(); err != nil {
			errs = append(errs, err.(*CheckError))
		} else if _, err := s.ResolveCommand(); err != nil && s.Command != "" && !strings.ContainsRune(s.Command, 0) { // a missing command is the file's error; one with a NUL, below
			ce := err.(*CheckError)
			errs = append(errs, ce)
		}
	}
	if s.IsStdio() {
		for i, root := range s.Roots {
			// server-filesystem skips a root that is not there, and
			// serves the others, or the project, unsaid.
			field := fmt.Sprintf("roots[%d]", i)
			if strings.ContainsRune(root, 0) {
				add(field, field+" holds a NUL byte, which a path cannot carry", "remove it")
			} else if _, err := os.Stat(root); err != nil {
				add(field, fmt.Sprintf("%s %s does not exist", field, s.Redact(root)), "create it, or fix roots")
			}
		}
		for i, a := range s.Args {
			if strings.ContainsRune(a, 0) {
				// exec cannot pass it: "invalid argument", at start.
				field := fmt.Sprintf("args[%d]", i)
				add(field, field+" holds a NUL byte, which a program's arguments cannot carry", "remove it")
			}
		}
		if strings.ContainsRune(s.Command, 0) {
			add("command", "the command holds a NUL byte, which a program's name cannot carry", "remove it")
		}
	}
	if s.IsStdio() && runtime.GOOS == "linux" {
		// Linux refuses to start a program with one argument or
		// environment string this long ("argument list too long").
		too := func(n int) bool { return n+1 > maxArgString }
		limit := fmt.Sprintf("Linux passes a program no argument or environment string over %d KiB", maxArgString>>10)
		for i, a := range s.Args {
			if too(len(a)) {
				add(fmt.Sprintf("args[%d]", i), fmt.Sprintf("args[%d] is %d bytes: %s", i, len(a), limit), "pass it in a file the server reads")
			}
		}
		for _, k := range slices.Sorted(maps.Keys(s.Env)) {
			if too(len(k) + 1 + len(s.Env[k])) {
				add("env", fmt.Sprintf("env %s is %d bytes: %s", k, len(s.Env[k]), limit), "pass it in a file the server reads")
			}
		}
	}
	for _, f := range []struct{ field, path string }{{"caFile", s.CAFile}, {"clientCert", s.ClientCert}, {"clientKey", s.ClientKey}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			add(f.field, fmt.Sprintf("%s %s does not exist", f.field, s.Redact(f.path)), "fix the path; relative paths are relative to the project directory")
		}
	}
	if s.Limits.Any() {
		switch {
		case runtime.GOOS != "linux":
			add("limits", "limits can be applied only on Linux", "remove limits, or run on Linux")
		case s.Limits.Processes > 0 && os.Geteuid() == 0:
			add("limits.processes", "limits.processes cannot be applied to a server run by root (RLIMIT_NPROC does not bind root)", "remove limits.processes, or run mcpctl as another user")
		}
		for _, l := range aboveHardLimits(s.Limits) {
			add("limits."+l.field, l.msg, "lower it, or raise the hard limit (ulimit -H) before mcpctl starts")
		}
	}
	return errs
}

// A limitProblem is why one limit (field, of limits) cannot be applied.
type limitProblem struct{ field, msg string }

// maxArgString is Linux's MAX_ARG_STRLEN: the longest argument or
// environment string (with its NUL) exec takes.
const maxArgString = 32 * 4096

// CheckCwd says when the server's working directory cannot be used (a
// *CheckError), as [Server.Check] does: for a start long after the check,
// the directory may have gone since.
func (s *Server) CheckCwd() error {
	if strings.ContainsRune(s.Cwd, 0) {
		// The kernel's "invalid argument", and the byte printed as
		// nothing: the path would look fine.
		return s.checkError("cwd", "the working directory holds a NUL byte, which a path cannot carry", "remove it")
	}
	if s.Cwd == "" {
		return nil // a Server built in Go without one: mcpctl's own, as exec takes it
	}
	st, err := os.Stat(s.Cwd)
	if err == nil && st.IsDir() {
		return nil
	}
	why := "does not exist"
	var pe *fs.PathError
	switch {
	case err == nil:
		why = "is not a directory"
	case !errors.Is(err, fs.ErrNotExist) && errors.As(err, &pe):
		why = "cannot be used: " + pe.Err.Error()
	}
	return s.checkError("cwd", fmt.Sprintf("working directory %s %s", s.Redact(s.Cwd), why), "create it, or fix cwd")
}

// ResolveCommand finds the server's program the way a shell would, but on
// the PATH the server itself will get, and relative to its cwd.
func (s *Server) ResolveCommand() (string, error) {
	notFound := func() error {
		hint := s.notFoundHint()
		// A whole command line in "command": its first word is a program.
		// Split as shown (redacted first: a secret may hold a space).
		shown := s.Redact(strings.TrimSpace(s.Command))
		if name, args, ok := strings.Cut(shown, " "); ok && s.runs(strings.TrimSpace(s.Command)) {
			quoted := make([]string, 0, 4)
			for _, a := range strings.Fields(args) {
				quoted = append(quoted, strconv.Quote(a))
			}
			hint = fmt.Sprintf(`put the arguments in "args": "command": %q, "args": [%s]`, name, strings.Join(quoted, ", "))
		} else if !strings.ContainsRune(s.Command, '/') && s.Command != "" {
			// A program in the server's cwd, which a command without a
			// slash is not looked for in, as in a shell.
			if st, err := os.Stat(filepath.Join(s.Cwd, s.Command)); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
				hint = fmt.Sprintf(`%s is in the server's cwd (%s), not on its PATH: write "command": "./%s"`, shown, s.Redact(s.Cwd), shown)
			}
		}
		return s.checkError("command", "command not found: "+s.Redact(s.Command), hint)
	}
	if strings.ContainsRune(s.Command, '/') {
		p := s.Command
		if !filepath.IsAbs(p) {
			p = filepath.Join(s.Cwd, p)
		}
		st, err := os.Stat(p)
		var pe *fs.PathError
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", notFound()
		case errors.As(err, &pe):
			// Not a directory on the way, no permission: not "not found".
			return "", s.checkError("command", fmt.Sprintf("%s cannot be used: %v", s.Redact(s.Command), pe.Err), "fix the command, or the permissions on its way")
		case err != nil:
			return "", notFound()
		}
		if st.IsDir() {
			return "", s.checkError("command", s.Redact(s.Command)+" is a directory", "name the program in it")
		}
		if st.Mode()&0o111 == 0 {
			return "", s.checkError("command", s.Redact(s.Command)+" is not executable", fmt.Sprintf("chmod +x %s, or run it through its interpreter (e.g. \"command\": \"node\")", s.Redact(s.Command)))
		}
		return p, s.checkRunnable(p)
	}
	if p := s.lookPath(s.Command); p != "" {
		return p, s.checkRunnable(p)
	}
	return "", notFound()
}

// notFoundHint says where the server's command was looked for, when it
// was not found: a path, from its cwd; a name, on its PATH.
func (s *Server) notFoundHint() string {
	shown := s.Redact(s.Command)
	switch {
	case filepath.IsAbs(s.Command):
		return fmt.Sprintf("there is no such file: fix the command of server %s", s.Name)
	case strings.ContainsRune(s.Command, '/'):
		// A relative path is the server's cwd's, which need not be the
		// project directory.
		hint := fmt.Sprintf("a relative command is found from the server's cwd, %s, which has no %s", s.Redact(s.Cwd), shown)
		if s.dir != "" && s.dir != s.Cwd && isProgram(filepath.Join(s.dir, s.Command)) {
			rel := strings.TrimPrefix(filepath.ToSlash(filepath.Clean(s.Command)), "./")
			hint += fmt.Sprintf(`; the project directory has it: write "command": "${workspaceFolder}/%s"`, s.Redact(rel))
		}
		return hint
	}
	if _, own := s.Env["PATH"]; own {
		// The server's env sets its PATH (not shown: env values are
		// secrets), which mcpctl's own may have the program on.
		if p := lookPathIn(s.Command, os.Getenv("PATH"), s.Cwd); p != "" {
			return fmt.Sprintf(`%s is not on the PATH the server's env gives it, but is in %s: add that directory to env.PATH, or write "command": %q`, shown, filepath.Dir(p), p)
		}
		return fmt.Sprintf("%s is not on the PATH the server's env gives it: install it there, or fix env.PATH", shown)
	}
	return fmt.Sprintf("install %s, or fix the command of server %s", shown, s.Name)
}

// isProgram says whether p is an executable file.
func isProgram(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// runs says whether the first word of line names a program: then line is
// a command with its arguments (not a path with a space in it).
func (s *Server) runs(line string) bool {
	first, _, _ := strings.Cut(line, " ")
	if !strings.ContainsRune(first, '/') {
		return s.lookPath(first) != ""
	}
	if !filepath.IsAbs(first) {
		first = filepath.Join(s.Cwd, first)
	}
	st, err := os.Stat(first)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// lookPath finds an executable file called name on the PATH the server
// will get, relative to its cwd; "" when there is none.
func (s *Server) lookPath(name string) string {
	pathEnv, ok := s.Env["PATH"]
	if !ok {
		pathEnv = os.Getenv("PATH")
	}
	return lookPathIn(name, pathEnv, s.Cwd)
}

// lookPathIn finds an executable file called name in the directories of
// pathEnv, relative ones relative to cwd; "" when there is none.
func lookPathIn(name, pathEnv, cwd string) string {
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(cwd, dir)
		}
		if p := filepath.Join(dir, name); isProgram(p) {
			return p
		}
	}
	return ""
}

// checkRunnable finds why the system would refuse to run the program at p:
// a script whose #! interpreter is not there (exec says "no such file" of
// a file that is), or whose #! line ends in a carriage return. Files that
// are neither scripts nor this system's programs are left to exec: the
// kernel may know them (binfmt_misc).
func (s *Server) checkRunnable(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return nil // the start says why
	}
	defer f.Close()
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	line, ok := bytes.CutPrefix(head[:n], []byte("#!"))
	if !ok {
		return nil
	}
	line, _, _ = bytes.Cut(line, []byte("\n"))
	if bytes.HasSuffix(line, []byte("\r")) {
		return s.checkError("command", s.Redact(s.Command)+"'s #! line ends in a carriage return (the file has Windows line ends)", "convert it to Unix line ends, e.g. with dos2unix")
	}
	fields := strings.Fields(string(line))
	if len(fields) == 0 {
		return s.checkError("command", s.Redact(s.Command)+" starts with #! and names no interpreter", "name one on its first line, e.g. #!/bin/sh")
	}
	missing := func(interp string) error {
		return s.checkError("command", fmt.Sprintf("%s needs the interpreter %s (its #! line), which is not there", s.Redact(s.Command), interp),
			fmt.Sprintf("install it, or run the script through an interpreter that is installed: \"command\": \"INTERPRETER\", \"args\": [%q]", s.Redact(s.Command)))
	}
	interp := fields[0]
	if !filepath.IsAbs(interp) {
		interp = filepath.Join(s.Cwd, interp) // as the kernel finds it: from the server's cwd
	}
	if _, err := os.Stat(interp); err != nil {
		return missing(fields[0])
	}
	if filepath.Base(interp) != "env" {
		return nil
	}
	words := fields[1:]
	if runtime.GOOS == "linux" {
		// Linux gives the interpreter all that follows it as one word:
		// env reads "node --flag" as a program's name, unless -S splits it.
		rest := strings.TrimSpace(strings.TrimSpace(string(line))[len(fields[0]):])
		var known, refused bool
		words, known, refused = linuxEnvWords(rest)
		split := slices.DeleteFunc(strings.Fields(rest), func(w string) bool { return w == "-S" })
		if refused {
			return s.checkError("command", fmt.Sprintf("%s's #! line gives env %q as one word (Linux passes all after the interpreter so), which env refuses: a space among its options", s.Redact(s.Command), rest),
				"begin with -S, which splits the rest into words: #!/usr/bin/env -S "+strings.Join(split, " "))
		}
		if !known {
			return nil // an option mcpctl does not follow; env says if it is wrong
		}
		if len(words) == 1 && strings.ContainsAny(rest, " \t") && !strings.HasPrefix(rest, "-") && !strings.Contains(strings.Fields(rest)[0], "=") {
			return s.checkError("command", fmt.Sprintf("%s's #! line runs env with %q: Linux passes all after the interpreter as one word, so env looks for a program of that name", s.Redact(s.Command), rest),
				"split it with -S: #!/usr/bin/env -S "+rest)
		}
		if len(words) == 1 && strings.Contains(strings.Fields(rest)[0], "=") {
			words = nil // VAR=1 node: one assignment, of "1 node"
		}
		if words == nil && rest != "" {
			hint := "begin with -S, which splits the rest into words: #!/usr/bin/env -S " + strings.Join(split, " ")
			if envProgram(split) == "" {
				hint = "name a program after -S, e.g. #!/usr/bin/env -S " + strings.Join(append(split, "node"), " ")
			}
			return s.checkError("command", fmt.Sprintf("%s's #! line gives env %q as one word (Linux passes all after the interpreter so), which leaves it no program: env would run the script itself, for ever", s.Redact(s.Command), rest), hint)
		}
	}
	// #!/usr/bin/env node: node on the server's PATH.
	if prog := envProgram(words); prog != "" {
		if s.lookPath(prog) == "" {
			return missing(prog)
		}
		return nil
	}
	// env runs the script itself, which runs env again, for ever.
	return s.checkError("command", s.Redact(s.Command)+"'s #! line names env but no program for it to run", "name it, e.g. #!/usr/bin/env node")
}

// envProgram returns the program env's words run, "" if none. Options
// that take a value (-u VAR, -C DIR, -P PATH) are passed by; after -S the
// program is the next word.
func envProgram(words []string) string {
	for i := 0; i < len(words); i++ {
		a := words[i]
		switch {
		case a == "-u" || a == "-C" || a == "-P":
			i++
		case strings.HasPrefix(a, "-") || strings.Contains(a, "="):
		default:
			return a
		}
	}
	return ""
}

// linuxEnvWords returns the words GNU env reads from rest, the one word
// Linux gives it after a #! line's interpreter: rest itself, or, from an
// option word that holds -S, the words -S splits from it; nil when the
// word is options without -S, which leave env no program. known is false
// for options not followed here (long ones, other letters); refused says
// env would refuse the word (a space among its options: "-i node").
func linuxEnvWords(rest string) (words []string, known, refused bool) {
	if rest == "" {
		return nil, true, false
	}
	if !strings.HasPrefix(rest, "-") {
		return []string{rest}, true, false
	}
	if strings.HasPrefix(rest, "--") {
		return nil, false, false
	}
	for i, c := range rest[1:] {
		switch c {
		case 'i', '0', 'v':
		case 'S':
			// Not nil even when empty: -S was given, and the words it
			// splits are what env runs (none: the plain no-program error).
			return append([]string{}, strings.Fields(rest[1+i+1:])...), true, false
		case 'u', 'C':
			return nil, true, false // the rest of the word is the option's value
		case ' ', '\t':
			return nil, true, true
		default:
			return nil, false, false
		}
	}
	return nil, true, false
}

// Check checks every server that is not disabled; see [Server.Check].
func (c *Config) Check() []*CheckError {
	var errs []*CheckError
	for _, s := range c.Servers {
		if !s.Disabled {
			errs = append(errs, s.Check()...)
		}
	}
	return errs
}

// Validate reads the config files as [LoadFiles] does, without asking for
// inputs, and returns every problem: those of the files and, for each
// server that could be read and is not disabled, those [Server.Check]
// finds (also for a server the schema found fault with, read without
// its faulted fields). servers are the names of the servers that could be
// read. err is set only when the files cannot be read at all.
func Validate(paths []string, opts Options) (servers []string, problems Errors, err error) {
	files, err := readFiles(paths, &opts)
	if err != nil {
		return nil, nil, err
	}
	// Validating must not need an input's value: what it would fill is
	// not checked.
	opts.Ask = func(in Input) (string, error) { return "", errValueUnknown }
	opts.checkFaulted = true
	cfg, problems, err := loadAll(files, opts)
	if err != nil {
		return nil, nil, err
	}
	servers = cfg.Names()
	checks := cfg.Check()
	for _, s := range cfg.faulted {
		if !s.Disabled {
			checks = append(checks, s.Check()...)
		}
	}
	for _, ce := range checks {
		problems = append(problems, ce.AsConfigError())
	}
	if len(cfg.Servers) == 0 && len(problems) == 0 {
		problems = append(problems, noServers(cfg.File))
	}
	sortByPlace(problems, files)
	return servers, problems, nil
}
