package commands

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/engine"
	"github.com/mcpctl/mcpctl/output"
	"github.com/urfave/cli/v3"
)

// Shell completion rides on urfave/cli's own machinery: the root enables
// it, so a command line ending in the hidden --generate-shell-completion
// flag runs the ShellComplete func of the command it reaches instead of its
// Action. That func prints one candidate per line ("name:description"; a
// colon inside a name is written "\:"). The scripts in completions/ ask
// mcpctl this way on every TAB.

// completionShells are the shells `mcpctl completion` writes a script for.
var completionShells = []string{"bash", "zsh", "fish"}

// completionTimeout bounds how long a completion waits for the session
// before it falls back to the config: a hung session must not hang a TAB.
const completionTimeout = time.Second

// A nameKind is what a command's arguments name.
type nameKind int

const (
	servers      nameKind = iota // server names
	toolNames                    // server.tool
	promptNames                  // server.prompt
	resourceURIs                 // resource URIs
	templateURIs                 // resource templates' URIs
	httpServers                  // the config's streamable HTTP servers (OAuth's)
)

// argCompletions says what the arguments of each command name: the kinds
// of the first argument, and whether every further argument is the same.
var argCompletions = map[string]struct {
	kinds []nameKind
	all   bool
	// args: the arguments after the first are the named tool's or
	// prompt's, key=value.
	args bool
}{
	"tools":       {kinds: []nameKind{servers, toolNames}},
	"call":        {kinds: []nameKind{toolNames}, args: true},
	"prompts":     {kinds: []nameKind{servers, promptNames}},
	"prompt":      {kinds: []nameKind{promptNames}, args: true},
	"resources":   {kinds: []nameKind{servers}},
	"resource":    {kinds: []nameKind{resourceURIs}},
	"complete":    {kinds: []nameKind{promptNames, templateURIs}},
	"inspect":     {kinds: []nameKind{servers}},
	"logs":        {kinds: []nameKind{servers}},
	"metrics":     {kinds: []nameKind{servers}},
	"start":       {kinds: []nameKind{servers}, all: true},
	"stop":        {kinds: []nameKind{servers}, all: true},
	"restart":     {kinds: []nameKind{servers}, all: true},
	"auth login":  {kinds: []nameKind{httpServers}},
	"auth logout": {kinds: []nameKind{httpServers}},
}

// setCompletions enables shell completion on root, shapes urfave's
// completion command into `mcpctl completion SHELL`, and gives each command
// whose arguments are names a ShellComplete func that lists them.
func setCompletions(env *Env, root *cli.Command) {
	root.EnableShellCompletion = true
	root.ConfigureShellCompletionCommand = func(c *cli.Command) { shapeCompletionCmd(env, root, c) }
	root.ShellComplete = valueless(env, env.completeCommandsAndFlags)
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			path := strings.TrimSpace(prefix + " " + c.Name)
			switch spec, ok := argCompletions[path]; {
			case c.ShellComplete != nil:
				// Its own (help: the commands it can tell of).
			case ok:
				c.ShellComplete = valueless(env, completeNames(env, spec.kinds, spec.all, spec.args))
			default:
				c.ShellComplete = valueless(env, env.completeCommandsAndFlags)
			}
			walk(path, c.Commands)
		}
	}
	walk("", root.Commands)
}

// valueless wraps a ShellComplete func so that after a flag that takes a
// value ("-c ", "--timeout ") it lists nothing, and the shell completes a
// file name as it does for any word mcpctl has no candidates for; without
// it the line's last word, "-c", read as a partial flag, got "--config".
func valueless(env *Env, complete cli.ShellCompleteFunc) cli.ShellCompleteFunc {
	return func(ctx context.Context, cmd *cli.Command) {
		if args := cmd.Args().Slice(); len(args) > 0 && takesValue(cmd, args[len(args)-1]) {
			flag := args[len(args)-1]
			// A value the flag was given already (--type a --type) is not
			// offered again: those before it are parsed, and in its list.
			given := cmd.StringSlice(strings.TrimLeft(flag, "-"))
			for _, c := range env.flagValues(ctx, cmd, flag) {
				if !slices.Contains(given, c) {
					fmt.Fprintln(env.Out, candidateLine(c))
				}
			}
			return
		}
		complete(ctx, cmd)
	}
}

// completeCommandsAndFlags is urfave's completion of subcommands and flags,
// with the backticks that mark a flag's placeholder in its usage ("give up
// after `DURATION`") taken out of the descriptions shells show.
func (env *Env) completeCommandsAndFlags(ctx context.Context, cmd *cli.Command) {
	root := cmd.Root()
	var b bytes.Buffer
	w := root.Writer
	root.Writer = &b
	cli.DefaultCompleteWithFlags(ctx, cmd)
	root.Writer = w
	io.WriteString(w, strings.ReplaceAll(b.String(), "`", ""))
}

// flagValues lists the values of a flag that takes one of a known few (a
// log level, an event type) or a server's name; nil for any other, whose
// value the shell completes as a file name.
func (env *Env) flagValues(ctx context.Context, cmd *cli.Command, flag string) []string {
	switch strings.TrimLeft(flag, "-") {
	case "server":
		var names []string
		for _, c := range env.nameCandidates(ctx, []nameKind{servers}, "") {
			names = append(names, c.name)
		}
		return names
	case "type":
		if cmd.Name == "watch" {
			return engine.EventTypes
		}
	case "log-level":
		switch cmd.Name {
		case "up":
			return sessionLogLevels
		case "watch":
			return engine.LogLevels
		}
	}
	return nil
}

// takesValue reports whether arg names a flag of cmd or of a command above
// it that takes a value: "-c" or "--config", not "--c", which is a long
// flag being typed.
func takesValue(cmd *cli.Command, arg string) bool {
	name, long := strings.CutPrefix(arg, "--")
	if !long {
		name, _ = strings.CutPrefix(arg, "-")
	}
	if name == arg || strings.Contains(name, "=") || long != (len(name) > 1) {
		return false
	}
	for _, c := range cmd.Lineage() {
		for _, f := range c.Flags {
			if df, ok := f.(cli.DocGenerationFlag); ok && df.TakesValue() && slices.Contains(f.Names(), name) {
				return true
			}
		}
	}
	return false
}

// shapeCompletionCmd turns the command urfave builds (hidden, with a
// subcommand per shell) into mcpctl's: shown in help, bash, zsh and fish
// only, and a usage error for anything else.
func shapeCompletionCmd(env *Env, root, c *cli.Command) {
	c.Hidden = false
	c.Usage = "Print the shell completion script for bash, zsh or fish"
	c.ArgsUsage = "SHELL"
	c.Description = `Prints a script that completes mcpctl's commands, flags, and the names of
tools, prompts, resources and servers: from the running session, else server
names from the config (no server is started to complete a name); after
"call SERVER.TOOL" or "prompt SERVER.PROMPT", from the session, its
arguments as KEY=; the values of --server, --type and --log-level. The line
is read as the shell will pass it: quotes, ~ and $VAR (a command in $(...)
is never run). The same scripts are in completions/ of the source tree.

  source <(mcpctl completion bash)                        # in ~/.bashrc
  mcpctl completion zsh > "${fpath[1]}/_mcpctl"           # zsh, then compinit
  mcpctl completion fish > ~/.config/fish/completions/mcpctl.fish`
	var subs []*cli.Command
	for _, s := range c.Commands {
		if !slices.Contains(completionShells, s.Name) {
			continue
		}
		s.Usage = "Print the completion script for " + s.Name
		s.Description = ""
		render := s.Action
		shell := s.Name
		s.Action = func(ctx context.Context, cmd *cli.Command) error {
			if err := noArgs(cmd); err != nil {
				return err
			}
			if err := env.noJSON(cmd, "a shell script"); err != nil {
				return err
			}
			script, err := completionScript(ctx, root, shell, render, cmd)
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(root.Writer, script)
			return err
		}
		subs = append(subs, s)
	}
	c.Commands = subs
	c.Action = func(ctx context.Context, cmd *cli.Command) error {
		choices := "choose one of: " + strings.Join(completionShells, ", ")
		if cmd.Args().Len() == 0 {
			return usagef("completion needs a shell", choices, "e.g. mcpctl completion bash")
		}
		return usagef(fmt.Sprintf("unknown shell %q", cmd.Args().First()), choices)
	}
}

// completionScript returns the script for shell. zsh gets urfave's bundled
// script as it is; fish gets it with one fix (names may hold a colon, as
// URIs do); bash gets mcpctl's own, since urfave's needs the bash-completion
// package and cannot complete words holding a colon.
func completionScript(ctx context.Context, root *cli.Command, shell string, render cli.ActionFunc, cmd *cli.Command) (string, error) {
	if shell == "bash" {
		return bashCompletion, nil
	}
	// urfave's renderer writes to the root's Writer; catch it.
	var buf bytes.Buffer
	w := root.Writer
	root.Writer = &buf
	err := render(ctx, cmd)
	root.Writer = w
	if err != nil {
		return "", err
	}
	script := buf.String()
	if shell == "zsh" {
		// A tool's argument ("key=") is completed without the space
		// after it, so its value can follow.
		const describe = "\t\t_describe 'values' opts\n"
		if !strings.Contains(script, describe) {
			return "", fmt.Errorf("urfave/cli's zsh script changed: no %q to patch", describe)
		}
		script = strings.Replace(script, describe, `		local -a eq other
		local o ret=1
		for o in "${opts[@]}"; do
			if [[ ${${o//\\:/}%%:*} == *[=.] ]]; then eq+=("$o"); else other+=("$o"); fi
		done
		(( ${#other} )) && _describe 'values' other && ret=0
		(( ${#eq} )) && _describe 'values' eq -S '' && ret=0
		(( ret == 0 ))
`, 1)
	}
	if shell == "zsh" {
		// zsh's words are as typed, quotes and all: mcpctl reads them
		// as the shell will pass them (quotes, ~, $VAR).
		start := strings.Index(script, "\tif [[ \"$current\" == \"-\"* ]]; then\n")
		end := strings.Index(script, "\tfi\n")
		if start < 0 || end < start {
			return "", fmt.Errorf("urfave/cli's zsh script changed: no words to patch")
		}
		script = script[:start] + "\topts=(\"${(@f)$(" + completeLineEnv + "=\"${(j: :)words}\" ${words[1]} --generate-shell-completion)}\")\n" + script[end+len("\tfi\n"):]
	}
	if shell == "fish" {
		// The line as typed: mcpctl reads it as the shell will pass it
		// (quotes, ~, $VAR).
		start := strings.Index(script, "    if string match -q -- \"-*\" $lastArg\n")
		end := strings.Index(script[max(start, 0):], "    end\n")
		if start < 0 || end < 0 {
			return "", fmt.Errorf("urfave/cli's fish script changed: no words to patch")
		}
		script = script[:start] + "    set results (env " + completeLineEnv + "=(commandline -cp | string collect) $args[1] --generate-shell-completion 2> /dev/null)\n" + script[start+end+len("    end\n"):]
		const split = `set -l parts (string split -m 1 ":" -- "$line")`
		if !strings.Contains(script, split) {
			return "", fmt.Errorf("urfave/cli's fish script changed: no %q to patch", split)
		}
		script = strings.Replace(script, split,
			`set -l parts (string replace -r -- '^((?:[^:\\\\]|\\\\.)*):' '$1'\x1f "$line" | string replace -a -- '\\:' ':' | string split -m 1 \x1f)`, 1)
		script = strings.Replace(script, `printf "%s\n" "$line"`, `printf "%s\n" (string replace -a -- '\\:' ':' "$line")`, 1)
	}
	return script, nil
}

// bashCompletion asks mcpctl for candidates with the words before the
// cursor (and a partial flag), as urfave's script does, without needing the
// bash-completion package, and completes words holding a colon (URIs)
// whatever COMP_WORDBREAKS says. bash inserts a reply as it is: each is
// quoted as the word being completed is where the cursor stands (bare,
// in '...' or "...", after a "\"), so that the shell reads the candidate
// back as one word ("fake://q?a=1&b=2", "fake://space name").
const bashCompletion = `# bash completion for mcpctl, generated by mcpctl completion bash.
# Install: source this file from ~/.bashrc, or copy it to
# /etc/bash_completion.d/ or ~/.local/share/bash-completion/completions/mcpctl.

_mcpctl_completion() {
  local line words=() i c
  line=${COMP_LINE:0:COMP_POINT}
  read -r -a words <<< "$line"
  # The word under the cursor: as typed (word), as the shell will read it
  # (cur), and the quote open where it ends (q) or a "\" ending it (esc).
  local word="" cur="" q="" esc=""
  for ((i = 0; i < ${#line}; i++)); do
    c=${line:i:1}
    word+=$c
    if [[ $q == "'" ]]; then
      if [[ $c == "'" ]]; then q=""; else cur+=$c; fi
    elif [[ $c == '\' ]]; then
      if ((i + 1 == ${#line})); then
        if [[ -z $q ]]; then esc=1; else cur+=$c; fi
        continue
      fi
      c=${line:i+1:1}
      word+=$c
      ((i++))
      # In "...", a "\" escapes only $, " and \ (and a backquote).
      [[ -n $q && $c != [\$$'\x60'\"\\] ]] && cur+='\'
      cur+=$c
    elif [[ $q == '"' ]]; then
      if [[ $c == '"' ]]; then q=""; else cur+=$c; fi
    elif [[ $c == [\'\"] ]]; then
      q=$c
    elif [[ $c == [[:space:]] ]]; then
      word="" cur=""
    else
      cur+=$c
    fi
  done
  COMPREPLY=()
  local out name names=()
  # mcpctl reads the line as the shell will pass it (quotes, ~, $VAR).
  out=$(MCPCTL_COMPLETE_LINE=$line "${words[0]}" --generate-shell-completion 2>/dev/null </dev/null) || return 0
  while IFS= read -r line; do
    [[ -z $line ]] && continue
    # "name:description", a colon in the name written "\:".
    name=${line//\\:/$'\x1f'}
    name=${name%%:*}
    name=${name//$'\x1f'/:}
    # A key= already typed whole is left to bash: a file name may follow.
    [[ $name == *= && $name == "$cur" ]] && continue
    [[ $name == "$cur"* ]] && names+=("$name")
  done <<< "$out"
  # A reply replaces the part of the word bash completes ($2: after its
  # last break, a ":" of COMP_WORDBREAKS say, or its open quote): that
  # part as typed, then the rest of the name quoted as the word is there.
  local text=$2 rest
  [[ $word == *"$text" ]] || text=$word
  for name in "${names[@]}"; do
    rest=${name:${#cur}}
    if [[ -n $esc && -n $rest ]]; then
      text+=${rest:0:1}
      rest=${rest:1}
    fi
    if [[ -z $rest ]]; then
      :
    elif [[ $q == "'" ]]; then
      rest=${rest//\'/\'\\\'\'}
    elif [[ $q == '"' ]]; then
      rest=${rest//\\/\\\\}
      rest=${rest//\$/\\\$}
      rest=${rest//$'\x60'/\\$'\x60'}
      rest=${rest//\"/\\\"}
      rest=${rest//!/\"\\!\"}
    else
      printf -v rest %q "$rest"
    fi
    # bash closes the open quote after a single reply unless the reply
    # ends with that quote ("\"" or "'\''" do): then close it here.
    [[ -n $q && $text$rest == *"$q" ]] && rest+=$q
    COMPREPLY+=("$text$rest")
    [[ -n $esc ]] && text=${text%?}
  done
  # A tool's argument ("key=") takes its value with no space between, and
  # a server's name its tool's ("server.").
  local all_keys=${#names[@]}
  for name in "${names[@]}"; do
    [[ $name == *[=.] ]] || all_keys=0
  done
  if [[ $all_keys -gt 0 ]]; then
    compopt -o nospace 2>/dev/null
  fi
  return 0
}

complete -o bashdefault -o default -F _mcpctl_completion mcpctl
`

// completeNames returns a ShellComplete func: flags after a "-", else the
// names kinds asks for, from the session or else the config; with
// toolArgs, after the tool's name, its arguments not given yet.
func completeNames(env *Env, kinds []nameKind, all, toolArgs bool) cli.ShellCompleteFunc {
	return func(ctx context.Context, cmd *cli.Command) {
		args := cmd.Args().Slice()
		if n := len(args); n > 0 && strings.HasPrefix(args[n-1], "-") {
			env.completeCommandsAndFlags(ctx, cmd)
			return
		}
		if len(args) > 0 && toolArgs {
			for _, c := range env.argCandidates(ctx, kinds[0], args[0], args[1:]) {
				fmt.Fprintln(env.Out, candidateLine(c))
			}
			return
		}
		if len(args) > 0 && !all {
			return
		}
		// resource --server S, complete --server S: S's names only.
		only := ""
		if slices.ContainsFunc(cmd.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), "server") }) {
			only = cmd.String("server")
		}
		for _, c := range env.nameCandidates(ctx, kinds, only) {
			if !slices.Contains(args, c.name) { // "stop a b": a is named already
				fmt.Fprintln(env.Out, candidateLine(candidate(c.name, c.desc)))
			}
		}
	}
}

// candidateLine is a completion candidate as one line safe for a terminal:
// zsh and fish show the descriptions servers wrote in their menus, so a
// control character in one must not act on it, nor a line break split it.
func candidateLine(c string) string {
	return output.Printable(strings.Join(strings.Fields(c), " "))
}

// nameCandidates lists names of kinds from the session within
// completionTimeout; without an answer, the config's server names. It never
// starts a server, never asks the user anything, and prints no error.
func (env *Env) nameCandidates(ctx context.Context, kinds []nameKind, only string) []nameCandidate {
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	if slices.Equal(kinds, []nameKind{httpServers}) {
		// OAuth is for streamable HTTP servers: the config says which.
		cfg, err := env.completionConfig()
		if err != nil {
			return nil
		}
		var out []nameCandidate
		for _, sv := range cfg.Servers {
			if sv.Type == "http" {
				out = append(out, nameCandidate{name: sv.Name})
			}
		}
		return out
	}
	if client, _, err := env.client(); err == nil {
		client.OnVersionMismatch = func(string) {}
		if st, err := client.Status(ctx); err == nil && st.Session != nil {
			return sessionNames(ctx, client, kinds, st, only)
		}
	}
	// No session (or it did not answer): server names from the config,
	// where a name starts with one (server.tool, server.prompt).
	if !slices.ContainsFunc(kinds, func(k nameKind) bool { return k != resourceURIs && k != templateURIs }) {
		return nil
	}
	cfg, err := env.completionConfig()
	if err != nil {
		return nil
	}
	// Where a server alone is no answer (call SERVER.TOOL), "server.",
	// which the shell completes with no space after it.
	suffix := "."
	if slices.Contains(kinds, servers) {
		suffix = ""
	}
	var out []nameCandidate
	for _, n := range cfg.Names() {
		out = append(out, nameCandidate{name: n + suffix})
	}
	return out
}

// completionConfig reads the config for names, asking for no input.
func (env *Env) completionConfig() (*config.Config, error) {
	paths, err := env.configPaths()
	if err != nil {
		return nil, err
	}
	return config.LoadFiles(paths, config.Options{LookupEnv: env.LookupEnv, WorkDir: env.WorkDir, Context: env.ctx})
}

// A nameCandidate is a name to complete and what it is.
type nameCandidate struct{ name, desc string }

// argCandidates lists "key=" for each argument of the tool (from its input
// schema, as the session lists it) or prompt (kind says which) named that
// given does not set yet, described by its type, whether it is required,
// and its description. Without a session it lists nothing: no server is
// started to complete a word.
func (env *Env) argCandidates(ctx context.Context, kind nameKind, name string, given []string) []string {
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	client, _, err := env.client()
	if err != nil {
		return nil
	}
	client.OnVersionMismatch = func(string) {}
	// What the servers listed, starting none: a TAB must not start a
	// server (a lazy one would start, and a slow one eat the second).
	listed, _ := client.Listed(ctx)
	var params []engine.Parameter
	for _, in := range listed {
		if kind == promptNames {
			for _, p := range in.Prompts {
				if p.Name() == name {
					for _, a := range p.Arguments() {
						params = append(params, engine.Parameter{Name: a.Name, Required: a.Required, Description: a.Description})
					}
				}
			}
			continue
		}
		for _, t := range in.Tools {
			if t.Name() == name {
				params = t.Parameters()
			}
		}
	}
	var out []string
	for _, p := range params {
		if slices.ContainsFunc(given, func(a string) bool {
			// bash and zsh pass the words as typed: "a=1" or 'a=1' too.
			k, _, ok := strings.Cut(strings.TrimLeft(a, `"'`), "=")
			return ok && strings.TrimSuffix(k, ":") == p.Name
		}) {
			continue
		}
		desc := p.Type
		if p.Required {
			desc = strings.TrimSpace("required " + desc)
		}
		if d := firstLine(p.Description, 60); d != "" {
			desc = strings.TrimPrefix(desc+", "+d, ", ")
		}
		out = append(out, candidate(p.Name+"=", desc))
	}
	return out
}

// sessionNames lists the names of kinds that the session offers, from
// what its servers have listed (asked once): none is started.
func sessionNames(ctx context.Context, client *engine.Client, kinds []nameKind, st *engine.Status, only string) []nameCandidate {
	var out []nameCandidate
	var listed []*engine.Inspection
	if slices.ContainsFunc(kinds, func(k nameKind) bool { return k != servers }) {
		listed, _ = client.Listed(ctx)
	}
	for _, k := range kinds {
		if k == servers {
			for _, s := range st.Servers {
				out = append(out, nameCandidate{name: s.Name})
			}
			continue
		}
		for _, in := range listed {
			if only != "" && in.Name != only {
				continue
			}
			switch k {
			case toolNames:
				for _, t := range in.Tools {
					out = append(out, nameCandidate{t.Name(), t.Description()})
				}
			case promptNames:
				for _, p := range in.Prompts {
					out = append(out, nameCandidate{p.Name(), p.Description()})
				}
			case resourceURIs:
				for _, r := range in.Resources {
					out = append(out, nameCandidate{name: r.URI})
				}
			case templateURIs:
				for _, t := range in.Templates {
					out = append(out, nameCandidate{name: t.URITemplate})
				}
			}
		}
	}
	// A URI two servers offer is one word to complete.
	seen := map[string]bool{}
	return slices.DeleteFunc(out, func(c nameCandidate) bool {
		dup := seen[c.name]
		seen[c.name] = true
		return dup
	})
}

// candidate is one line of completion output: the name with its colons
// escaped, and the first line of its description.
func candidate(name, desc string) string {
	name = strings.ReplaceAll(name, ":", `\:`)
	if d := firstLine(desc, 60); d != "" {
		// fish takes a tab for the end of the name.
		return name + ":" + strings.ReplaceAll(d, "\t", " ")
	}
	return name
}
