package commands

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/mcpctl/mcpctl/engine"
	"github.com/mcpctl/mcpctl/output"
	"github.com/urfave/cli/v3"
)

func newPromptsCmd(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "prompts",
		Usage:     "List the prompts of every server, or of one",
		ArgsUsage: "[SERVER | SERVER.PROMPT]",
		Description: `Lists prompts as server.prompt with their arguments (a * marks a required
one) and description; one named (server.prompt) is shown whole, its
arguments with their descriptions. In JSON each prompt is the object its
server listed, with "name" set to server.prompt and "server" and "prompt"
added; "stale": true marks the last known prompts of a server that is
unavailable.

  mcpctl prompts
  mcpctl prompts everything --jq '.[].name'`,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() > 1 {
				return usagef("prompts takes at most one argument: a server or server.prompt")
			}
			return runPrompts(ctx, env, cmd.Args().First())
		},
	}
}

func runPrompts(ctx context.Context, env *Env, filter string) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	var prompts []*engine.Prompt
	var unlisted error
	err = env.withHostLists(ctx, serverOf(filter), func(h host) error {
		prompts, err = h.Prompts(ctx, filter)
		unlisted, err = partialList(prompts != nil, err)
		return err
	})
	if err != nil {
		return err
	}
	if prompts == nil {
		prompts = []*engine.Prompt{}
	}
	return printThen(unlisted, p.Print(prompts, func(w io.Writer) error {
		if _, _, err := engine.SplitName(filter); err == nil && len(prompts) == 1 {
			return promptDetail(w, prompts[0])
		}
		rows := make([][]string, len(prompts))
		for i, pr := range prompts {
			var args []string
			for _, a := range pr.Arguments() {
				if a.Required {
					args = append(args, a.Name+"*")
				} else {
					args = append(args, a.Name)
				}
			}
			rows[i] = []string{pr.Name() + staleMark(pr.Stale), strings.Join(args, " "), firstLine(pr.Description(), 60)}
		}
		return output.Table(w, []string{"prompt", "arguments", "description"}, rows)
	}))
}

// promptDetail shows one prompt whole, as toolDetail shows a tool: its
// description and its arguments with theirs.
func promptDetail(w io.Writer, pr *engine.Prompt) error {
	fmt.Fprintf(w, "%s%s\n", pr.Name(), staleMark(pr.Stale))
	indented(w, strings.TrimSpace(pr.Description()), "  ")
	args := pr.Arguments()
	if len(args) == 0 {
		_, err := fmt.Fprintln(w, "\nno arguments")
		return err
	}
	rows := make([][]string, len(args))
	for i, a := range args {
		name := a.Name
		if a.Required {
			name += "*"
		}
		rows[i] = []string{name, a.Description}
	}
	fmt.Fprintln(w)
	return wholeTable(w, []string{"argument", "description"}, rows)
}

func staleMark(stale bool) string {
	if stale {
		return " (stale)"
	}
	return ""
}

type promptOptions struct {
	name    string
	pairs   []string
	noCache bool
	timeout durationFlag
}

func newPromptCmd(env *Env) *cli.Command {
	var opts promptOptions
	return &cli.Command{
		Name:      "prompt",
		Usage:     "Get a prompt with its arguments",
		ArgsUsage: "SERVER.PROMPT [KEY=VALUE]...",
		Description: `Gets a prompt and prints its messages: "role: text" on a terminal, the whole
MCP result as JSON otherwise. Arguments are checked against the ones the
prompt declares: an unknown one, or a missing required one, exits 2 naming
it. key=@file reads the value from a file, key=@- from stdin.

A session caches answers for cacheTTL (default 5m); a cached answer carries
_meta["mcpctl/cache"] with its age. --no-cache asks the server again.

  mcpctl prompt everything.simple-prompt
  mcpctl prompt everything.args-prompt city=Paris state=TX -r --jq '.messages[0].content.text'`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "no-cache", Usage: "ask the server even if the session has a fresh answer", Destination: &opts.noCache},
			timeoutFlag(&opts.timeout),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() == 0 {
				return usagef("prompt needs a prompt: mcpctl prompt SERVER.PROMPT [KEY=VALUE]...", "list the prompts with: mcpctl prompts")
			}
			opts.name, opts.pairs = cmd.Args().First(), cmd.Args().Tail()
			return runPrompt(ctx, env, opts)
		},
	}
}

func runPrompt(ctx context.Context, env *Env, opts promptOptions) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	if _, _, err := engine.SplitPromptName(opts.name); err != nil {
		return env.unqualified(ctx, err, opts.name, "prompt")
	}
	timeout := opts.timeout.millis()
	if err := env.stdinReadOnce("", opts.pairs); err != nil {
		return err
	}
	pairs, err := resolvePairFiles(env, opts.pairs, "prompt")
	if err != nil {
		return err
	}
	req := &engine.PromptRequest{Name: opts.name, Pairs: pairs, NoCache: opts.noCache, TimeoutMs: timeout}
	var res *engine.PromptResult
	err = env.withHostTimed(ctx, serverOf(opts.name), opts.timeout.d, func(h host) error {
		res, err = h.GetPrompt(ctx, req)
		return err
	})
	if err != nil {
		return err
	}
	return p.Print(res.Result, func(w io.Writer) error { return output.PromptResult(w, res.Result) })
}
