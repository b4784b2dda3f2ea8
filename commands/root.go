// Package commands is mcpctl's command line: one file per command on
// urfave/cli v3, a tree rebuilt on every run, and [Main], which runs it and
// turns the outcome into an exit code.
package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/mcpctl/mcpctl/engine"
	"github.com/mcpctl/mcpctl/output"
	"github.com/mcpctl/mcpctl/schemas"
	"github.com/urfave/cli/v3"
)

// Main runs mcpctl with args (args[0] is the program name) and returns the
// exit code. It is the only entry point; main.go passes it the process's
// streams and exits with its result.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := newEnv(stdin, stdout, stderr)
	env.ctx = ctx
	if line, ok := env.LookupEnv(completeLineEnv); ok && len(args) == 2 && args[1] == "--generate-shell-completion" {
		args = completionArgs(args[0], line, env.getenv)
		// urfave reads a flag being typed at the top level from os.Args.
		os.Args = args
	}
	err := newRootCmd(env).Run(ctx, args)
	if err == nil {
		return exitOK
	}
	info := errorInfo(err)
	if info.ExitCode == exitOutputClosed {
		return info.ExitCode
	}
	redactResultError(env, err, &info)
	info.Hints = env.withGlobalFlags(info.Hints)
	var sig Signaled
	if info.ExitCode == exitInterrupted && errors.As(context.Cause(ctx), &sig) {
		if n, ok := sig.Signal.(syscall.Signal); ok {
			info.ExitCode = 128 + int(n) // as a shell reports a process the signal ended
		}
	}
	output.PrintError(env.ErrOut, info, env.jsonErrors())
	return info.ExitCode
}

// Signaled is the cause of a run's context cancelled by a signal.
type Signaled struct{ Signal os.Signal }

func (s Signaled) Error() string { return "interrupted by " + s.Signal.String() }

// newRootCmd builds the whole command tree for one run.
func newRootCmd(env *Env) *cli.Command {
	root := &cli.Command{
		Name:    "mcpctl",
		Usage:   "Run and use the MCP servers of a project from the command line",
		Version: engine.Version(),
		Description: `mcpctl reads the MCP servers a project uses from mcp.json, starts them, and
lets scripts, agents and people list and call their tools. Every result is
JSON (filtered by --jq) when stdout is not a terminal, tables and text when
it is.

  mcpctl up                              start the session and its servers
  mcpctl tools --jq '.[].name'           every tool, as server.tool
  mcpctl call fs.read_text_file path=README.md
  mcpctl status
  mcpctl down

Without a session each command starts the servers it needs and stops them
before it exits; "mcpctl up" only makes it fast.

An error goes to stderr, as one JSON line when stdout is not a terminal
(or with --json, --jq): {"error":{"code","exitCode","message","server",
"hints","details"}}.
Exit codes: 0 success; 1 the tool's result is isError (still printed);
2 usage or config; 3 a server is unavailable; 4 timeout; 5 a server's
JSON-RPC error; 6 no session; 7 authorization needed; 130 interrupted
(128 + the signal's number); 141 the output's reader went away (man mcpctl
has the whole table).

` + envHelp(),
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "config", Aliases: []string{"c"}, Usage: "read servers from `FILE`; repeat to merge files (default: $MCPCTL_CONFIG, else the first of ./mcp.json, ./.vscode/mcp.json, ./.mcp.json, ./mcp.toml, ./.codex/config.toml)", Destination: &env.configFlags},
			&cli.StringSliceFlag{Name: "header", Usage: "send `NAME=VALUE` to every remote server this command starts itself, or the session up starts (not a running session's); repeat for more", Destination: &env.headerFlags},
			&cli.StringFlag{Name: "session", Usage: "use the session called `NAME` instead of the one of the config file ($MCPCTL_SESSION)", Destination: &env.sessionFlag},
			&cli.BoolFlag{Name: "json", Usage: "print JSON even on a terminal", Destination: &env.format.JSON},
			&cli.StringFlag{Name: "jq", Usage: "filter the JSON result with the jq `EXPR`", Destination: &env.format.JQ},
			&cli.BoolFlag{Name: "raw", Aliases: []string{"r"}, Usage: "with --jq, print strings without quotes", Destination: &env.format.Raw},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print no notes or live progress on stderr (errors still)", Destination: &env.quiet},
			// mcpctl's own, not urfave's, so that --json and --jq apply
			// to it as to "mcpctl version".
			&cli.BoolFlag{Name: "version", Aliases: []string{"v"}, Usage: "print the version", Destination: &env.version, Local: true,
				Action: func(_ context.Context, cmd *cli.Command, _ bool) error {
					if cmd.Args().Present() {
						return usagef("--version takes no command", "for the versions of mcpctl, its SDK and the protocol: mcpctl version")
					}
					return nil
				}},
		},
		Commands: []*cli.Command{
			newUpCmd(env),
			newDownCmd(env),
			newStatusCmd(env),
			newToolsCmd(env),
			newCallCmd(env),
			newPromptsCmd(env),
			newPromptCmd(env),
			newResourcesCmd(env),
			newResourceCmd(env),
			newCompleteCmd(env),
			newInspectCmd(env),
			newWatchCmd(env),
			newServeCmd(env),
			newMetricsCmd(env),
			newLogsCmd(env),
			newReloadCmd(env),
			newStartCmd(env),
			newStopCmd(env),
			newRestartCmd(env),
			newAuthCmd(env),
			newConfigCmd(env),
			newWatchdogCmd(env),
			newVersionCmd(env),
			newHelpCmd(),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if env.version {
				if _, err := env.Printer(); err != nil {
					return err // -r without --jq
				}
				if env.jsonRequested() {
					return runVersion(env)
				}
				_, err := fmt.Fprintf(env.Out, "mcpctl version %s\n", engine.Version())
				return err
			}
			if cmd.Args().Len() == 0 {
				return cli.ShowRootCommandHelp(cmd)
			}
			name := cmd.Args().First()
			var known []string
			for _, c := range cmd.Commands {
				known = append(known, c.Name)
			}
			hints := []string{"see the commands with: mcpctl --help"}
			if near := schemas.Closest(name, known); len(near) > 0 {
				hints = []string{fmt.Sprintf("did you mean mcpctl %s?", near[0])}
			}
			// A command of a group given alone: validate for config validate.
			for _, c := range cmd.Commands {
				if sub := c.Command(name); sub != nil && !sub.Hidden {
					hints = []string{fmt.Sprintf("did you mean mcpctl %s %s?", c.Name, sub.Name)}
				}
			}
			return usagef(fmt.Sprintf("unknown command %q", name), hints...)
		},
		// A config path may hold a comma.
		DisableSliceFlagSeparator: true,
		// urfave would give every command a "help" (alias "h") subcommand,
		// so that "mcpctl start h" printed help instead of starting server
		// h. The root and each group have newHelpCmd instead.
		HideHelpCommand: true,
		// urfave must never exit or print errors itself: Main does both.
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
		Writer:         env.Out,
		ErrWriter:      env.ErrOut,
		Reader:         env.In,
	}
	setCompletions(env, root) // completion.go
	setUsageErrors(root)
	noteCommand(env, root)
	return root
}

// noteCommand has each command note its name in env before it runs, for
// hints that fit it.
func noteCommand(env *Env, cmd *cli.Command) {
	if act := cmd.Action; act != nil {
		cmd.Action = func(ctx context.Context, c *cli.Command) error {
			env.command = c.FullName()
			return act(ctx, c)
		}
	}
	for _, sub := range cmd.Commands {
		noteCommand(env, sub)
	}
}

// errEmptyValue refuses an empty value for a flag of one value.
var errEmptyValue = errors.New("empty value")

// badFlagValue is how the flag package reports a value it refused; it
// names a flag with one dash, however it was written.
var badFlagValue = regexp.MustCompile(`^invalid value (".*") for flag -([\w-]+): (.*)$`)

// flagMistake says a flag parsing error of cmd in mcpctl's words; a flag
// is named as --help lists it, whichever of its names was given.
func flagMistake(msg string, cmd *cli.Command) string {
	dashes := func(name string) string {
		for _, c := range cmd.Lineage() {
			for _, f := range c.Flags {
				if names := f.Names(); len(names) > 1 && slices.Contains(names, name) {
					return "--" + names[0] + " (-" + strings.Join(names[1:], ", -") + ")"
				}
			}
		}
		if len(name) > 1 {
			return "--" + name
		}
		return "-" + name
	}
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag " + dashes(name)
	}
	if m := badFlagValue.FindStringSubmatch(msg); m != nil {
		if m[3] == "can't duplicate this flag" {
			return dashes(m[2]) + " is given more than once: it takes one value"
		}
		if m[3] == errEmptyValue.Error() {
			return dashes(m[2]) + " is given an empty value"
		}
		reason := m[3]
		switch {
		case strings.Contains(reason, "value out of range"):
			reason = "out of range"
		case strings.Contains(reason, "strconv.ParseFloat"):
			reason = "not a number"
		case strings.Contains(reason, "strconv.Parse"):
			reason = "not a whole number"
		case strings.HasPrefix(reason, "time: "):
			reason = durationMistake(strings.Trim(m[1], `"`))
		}
		return fmt.Sprintf("invalid value %s for %s: %s", m[1], dashes(m[2]), reason)
	}
	return msg
}

// valueStuck is the hint for an unknown flag that is a flag taking a value
// with its value written against it (-cmcp.json, --timeout5s), as some
// tools take it; Go's flags read it as one flag of that whole name.
func valueStuck(msg string, cmd *cli.Command) string {
	name, ok := strings.CutPrefix(msg, "flag provided but not defined: -")
	if !ok {
		return ""
	}
	best := ""
	for _, c := range cmd.Lineage() {
		for _, f := range c.Flags {
			if _, isBool := f.(*cli.BoolFlag); isBool {
				continue // -rv is no flag with a value
			}
			for _, n := range f.Names() {
				if len(n) < len(name) && strings.HasPrefix(name, n) && len(n) > len(best) {
					best = n
				}
			}
		}
	}
	// What follows the name must look like a value (mcp.json, 5s): not a
	// plural or a typo of the flag (--servers).
	if best == "" || !strings.ContainsAny(name[len(best):], "0123456789./:=-_~") {
		return ""
	}
	dash := "--"
	if len(best) == 1 {
		dash = "-"
	}
	return fmt.Sprintf("a flag's value goes after a space or =: %s%s %s", dash, best, name[len(best):])
}

// nearFlag is the hint for an unknown flag that is a misspelling of one
// of cmd's (or of a command above it): "did you mean --timeout?".
func nearFlag(msg string, cmd *cli.Command) string {
	name, ok := strings.CutPrefix(msg, "flag provided but not defined: -")
	if !ok || len(name) < 2 {
		return ""
	}
	var names []string
	for _, c := range cmd.Lineage() {
		for _, f := range c.Flags {
			if n := f.Names()[0]; len(n) > 1 && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	if near := schemas.Closest(name, names); len(near) > 0 {
		return "did you mean --" + near[0] + "?"
	}
	return ""
}

// Compiled on first use, as the other regexps of error paths: every
// command's start would pay for them.
var (
	bareNumber  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9.]+$`) })
	durationish = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`) })
)

// durationMistake says what is wrong with v, a duration Go's parser
// refused, in mcpctl's words.
func durationMistake(v string) string {
	switch {
	case bareNumber().MatchString(v) && strings.Count(v, ".") <= 1:
		return "a duration needs its unit, e.g. 30s, 5m or 1h"
	case durationish().MatchString(v):
		return "too long: at most 2562047h"
	}
	return "not a duration: write it as 500ms, 30s, 5m or 1h"
}

// setUsageErrors makes a flag mistake anywhere in the tree a usage error
// (exit 2) with a pointer to --help, instead of help text on stdout. A flag
// that takes one value refuses a second: the last one silently won.
func setUsageErrors(cmd *cli.Command) {
	cmd.OnUsageError = func(_ context.Context, c *cli.Command, err error, _ bool) error {
		hints := []string{fmt.Sprintf("see the flags with: %s --help", c.FullName())}
		if h := valueStuck(err.Error(), c); h != "" {
			hints = append([]string{h}, hints...)
		} else if h := nearFlag(err.Error(), c); h != "" {
			hints = append([]string{h}, hints...)
		}
		return usagef(flagMistake(err.Error(), c), hints...)
	}
	for _, f := range cmd.Flags {
		switch f := f.(type) {
		case *cli.StringFlag:
			f.OnlyOnce = true
			// Empty, each would be taken for the flag left out.
			f.Validator = func(v string) error {
				if v == "" {
					return errEmptyValue
				}
				return nil
			}
		case *cli.IntFlag:
			f.OnlyOnce = true
		case *cli.DurationFlag:
			f.OnlyOnce = true
		}
	}
	for _, sub := range cmd.Commands {
		setUsageErrors(sub)
	}
}

// needsSubcommand is the action of a group of commands (config, auth): run
// alone, or with a name that is none of its own, it is a usage error that
// names them.
func needsSubcommand(_ context.Context, cmd *cli.Command) error {
	var names []string
	for _, c := range cmd.VisibleCommands() {
		if c.Name != "help" {
			names = append(names, c.Name)
		}
	}
	list := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	if cmd.Args().Len() == 0 {
		return usagef(fmt.Sprintf("%s needs a subcommand: %s", cmd.Name, list), fmt.Sprintf("see: %s --help", cmd.FullName()))
	}
	name := cmd.Args().First()
	hint := fmt.Sprintf("the subcommands are %s", strings.Replace(list, " or ", " and ", 1))
	if near := schemas.Closest(name, names); len(near) > 0 {
		hint = fmt.Sprintf("did you mean %s %s?", cmd.FullName(), near[0])
	}
	return usagef(fmt.Sprintf("unknown %s subcommand %q", cmd.Name, name), hint)
}
