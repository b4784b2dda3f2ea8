package commands

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/schemas"
	"github.com/urfave/cli/v3"
)

func newConfigCmd(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "config",
		Usage: "Check, show and locate the config",
		Description: `mcpctl reads servers from JSON ("servers" as VS Code writes it, or
"mcpServers" as Claude and Cursor do; comments and trailing commas allowed),
from mcp.toml ([servers.NAME]) and from Codex's config.toml
([mcp_servers.NAME]). Several files given with --config are merged.

  mcpctl config validate             every problem, with file:line:column
  mcpctl config show --resolved      servers as they will run
  mcpctl config schema               the JSON Schema of the file
  mcpctl config path                 which file is used, and why`,
		Commands: []*cli.Command{
			newConfigValidateCmd(env),
			newConfigShowCmd(env),
			newConfigSchemaCmd(env),
			newConfigPathCmd(env),
			newHelpCmd(),
		},
		Action: needsSubcommand,
	}
}

// A validation is what `config validate` reports.
type validation struct {
	Valid   bool          `json:"valid"`
	Files   []string      `json:"files"`
	Servers []string      `json:"servers"`
	Errors  []configIssue `json:"errors"`
}

type configIssue struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
	// Text is the whole error as one line: file:line:col: field: message.
	Text string `json:"text"`
}

func newConfigValidateCmd(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "validate",
		Usage: "Check the config files and list every problem",
		Description: `Reads the config files as "up" would, checks them against the schema and the
dependency graph, and checks what the files alone do not show: that each
command is found on PATH, that cwd and envFile exist, that limits can be
applied. Every problem is listed, each with file:line:column and the field.
Nothing is started. Inputs are not asked for. Exits 0 when the config is
valid, 2 when it is not, or is not found (the report says so too).

  mcpctl config validate
  mcpctl config validate --jq '.errors[].text'`,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := noFileArgs(cmd); err != nil {
				return err
			}
			return runConfigValidate(env)
		},
	}
}

func runConfigValidate(env *Env) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	paths, err := env.configPaths()
	if nf := (*config.NotFoundError)(nil); errors.As(err, &nf) {
		// A report still, for a script reading .valid; the error, with
		// its hint, is said on stderr as for any command.
		issue := configIssue{File: cmp.Or(nf.Path, nf.Candidate), Message: nf.Error(), Hint: strings.Join(nf.Hints(), "; "), Text: nf.Error()}
		files := []string{}
		if nf.Path != "" {
			files = append(files, nf.Path)
		}
		if perr := p.Print(validation{Files: files, Servers: []string{}, Errors: []configIssue{issue}}, func(io.Writer) error { return nil }); perr != nil {
			return perr
		}
		return err
	}
	if err != nil {
		return err
	}
	v := validation{Servers: []string{}, Errors: []configIssue{}}
	for _, path := range paths {
		v.Files = append(v.Files, env.shownPath(path))
	}
	names, problems, err := config.Validate(paths, config.Options{LookupEnv: env.LookupEnv, WorkDir: env.WorkDir, Context: env.ctx})
	if err != nil {
		return err
	}
	if names != nil {
		v.Servers = names
	}
	for _, e := range problems {
		v.Errors = append(v.Errors, configIssue{File: e.File, Line: e.Line, Column: e.Col, Field: e.Field, Message: e.Msg, Hint: e.Hint, Text: e.Error()})
	}
	v.Valid = len(v.Errors) == 0
	if err := p.Print(v, func(w io.Writer) error {
		for _, e := range v.Errors {
			fmt.Fprintln(w, e.Text)
			if e.Hint != "" {
				fmt.Fprintf(w, "  hint: %s\n", e.Hint)
			}
		}
		if v.Valid {
			fmt.Fprintf(w, "%s: valid, %d %s (%s)\n", strings.Join(v.Files, ", "), len(v.Servers), plural(len(v.Servers), "server", "servers"), strings.Join(v.Servers, ", "))
		}
		return nil
	}); err != nil {
		return err
	}
	if !v.Valid {
		// The problems are the result, on stdout; the error says how many.
		return &config.Error{File: strings.Join(v.Files, ", "), Msg: fmt.Sprintf("%d %s", len(v.Errors), plural(len(v.Errors), "problem", "problems"))}
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// shownPath shows a path relative to the working directory when below it.
func (env *Env) shownPath(p string) string {
	if rel, err := filepath.Rel(env.WorkDir, p); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return p
}

func newConfigShowCmd(env *Env) *cli.Command {
	var resolved, showSecrets bool
	return &cli.Command{
		Name:  "show",
		Usage: "Print the config as mcpctl reads it",
		Description: `Prints the servers of the config files, merged, as JSON, as they are
written, with the inputs and the log level. With --resolved, it prints what
the top-level "defaults", "sampling" and "elicitation" give each server too:
each server as it will run: defaults applied, field names normalised, ${...}
expanded, paths absolute, durations as Go writes them ("30s", "1m0s");
equivalent JSON, TOML and Codex files give the same output. Env and header
values, and whatever came from the environment or an input, are shown as
"<redacted>" unless --show-secrets (so an input is asked for only with
--show-secrets).

  mcpctl config show
  mcpctl config show --resolved --jq '.servers.fs.args'`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "resolved", Usage: "show servers as they will run", Destination: &resolved},
			&cli.BoolFlag{Name: "show-secrets", Usage: "show env and header values and expanded secrets", Destination: &showSecrets},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := noFileArgs(cmd); err != nil {
				return err
			}
			p, err := env.Printer()
			if err != nil {
				return err
			}
			if resolved {
				load := env.loadConfig
				if !showSecrets {
					// Their values would be shown as <redacted>: nobody
					// need be asked for them.
					load = env.loadConfigHidingInputs
				}
				cfg, err := load()
				if err != nil {
					return err
				}
				return p.Print(map[string]any{"servers": cfg.Resolved(showSecrets)}, nil)
			}
			// As written, it needs no variable or input to have a value.
			cfg, _, err := env.loadConfigForNames()
			if err != nil {
				return err
			}
			return p.Print(cfg.Document(showSecrets), nil)
		},
	}
}

func newConfigSchemaCmd(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "schema",
		Usage: "Print the JSON Schema of the config file",
		Description: `Prints the JSON Schema (2020-12) that mcpctl checks config files against;
editors can use it for completion and checks ("$schema" in mcp.json).

  mcpctl config schema > mcp.schema.json`,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := noArgs(cmd); err != nil {
				return err
			}
			p, err := env.Printer()
			if err != nil {
				return err
			}
			return p.Print(json.RawMessage(schemas.ConfigJSON), nil)
		},
	}
}

func newConfigPathCmd(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "path",
		Usage: "Show which config files are used, and where mcpctl looks",
		Description: `Shows the config files mcpctl uses and how they were chosen: every --config
(repeatable, merged in order), else $MCPCTL_CONFIG (paths separated by ':'),
else the first that exists of ./mcp.json, ./.vscode/mcp.json, ./.mcp.json,
./mcp.toml, ./.codex/config.toml. Exits 2 when none is found.

  mcpctl config path
  mcpctl config path -r --jq '.files[0]'`,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := noFileArgs(cmd); err != nil {
				return err
			}
			p, err := env.Printer()
			if err != nil {
				return err
			}
			d, found := env.discovery()
			if d.Files == nil {
				d.Files = []string{}
			}
			if err := p.Print(d, func(w io.Writer) error {
				for _, f := range d.Files {
					fmt.Fprintf(w, "%s (from %s)\n", env.shownPath(f), d.From)
				}
				for _, f := range d.Missing {
					fmt.Fprintf(w, "%s (from %s, missing)\n", env.shownPath(f), d.From)
				}
				fmt.Fprintln(w, "\ndiscovery order, when neither --config nor $MCPCTL_CONFIG is given:")
				for _, c := range d.Candidates {
					mark := "  "
					if c.Exists {
						mark = "* "
					}
					fmt.Fprintf(w, "  %s%s\n", mark, "./"+filepath.ToSlash(env.shownPath(c.Path)))
				}
				return nil
			}); err != nil {
				return err
			}
			return found
		},
	}
}

// noFileArgs refuses arguments to a config command that reads the config
// files: one given a file (mcpctl config validate mcp.json) is told how to
// name it.
func noFileArgs(cmd *cli.Command) error {
	if cmd.Args().Len() == 0 {
		return nil
	}
	return usagef(cmd.FullName()+" takes no arguments",
		fmt.Sprintf("name a config file with -c, before the command: mcpctl -c %s %s", shellWord(cmd.Args().First()), strings.TrimPrefix(cmd.FullName(), "mcpctl ")))
}
