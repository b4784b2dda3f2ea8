package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/mattn/go-runewidth"
	"github.com/mcpctl/mcpctl/engine"
	"github.com/mcpctl/mcpctl/output"
	"github.com/urfave/cli/v3"
)

func newToolsCmd(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "tools",
		Usage:     "List the tools of every server, or of one",
		ArgsUsage: "[SERVER | SERVER.TOOL]",
		Description: `Lists tools as server.tool with their description; in JSON each tool is the
object its server listed (inputSchema, annotations, ...) with "name" set to
server.tool and "server" and "tool" added. On a terminal, one tool named
(server.tool) is shown whole: its description and its arguments, with their
types (* required), the values they are limited to, and their defaults.

  mcpctl tools
  mcpctl tools everything
  mcpctl tools everything.echo --jq .[0].inputSchema
  mcpctl tools --jq '.[].name'`,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() > 1 {
				return usagef("tools takes at most one argument: a server or server.tool")
			}
			return runTools(ctx, env, cmd.Args().First())
		},
	}
}

func runTools(ctx context.Context, env *Env, filter string) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	var tools []*engine.Tool
	var unlisted error
	err = env.withHostLists(ctx, serverOf(filter), func(h host) error {
		tools, err = h.Tools(ctx, filter)
		unlisted, err = partialList(tools != nil, err)
		return err
	})
	if err != nil {
		return err
	}
	if tools == nil {
		tools = []*engine.Tool{}
	}
	return printThen(unlisted, p.Print(tools, func(w io.Writer) error {
		if _, _, err := engine.SplitName(filter); err == nil && len(tools) == 1 {
			return toolDetail(w, tools[0])
		}
		rows := make([][]string, len(tools))
		for i, t := range tools {
			rows[i] = []string{t.Name() + staleMark(t.Stale), firstLine(t.Description(), 72)}
		}
		return output.Table(w, []string{"tool", "description"}, rows)
	}))
}

// firstLine shortens a description to its first line, at most n cells (a
// wide character takes two).
func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return runewidth.Truncate(s, n, "…")
}

// toolDetail shows one tool whole: what a call needs to know.
func toolDetail(w io.Writer, t *engine.Tool) error {
	fmt.Fprintf(w, "%s%s\n", t.Name(), staleMark(t.Stale))
	indented(w, strings.TrimSpace(t.Description()), "  ")
	params := t.Parameters()
	if len(params) == 0 {
		var schema struct {
			Properties json.RawMessage `json:"properties"`
		}
		json.Unmarshal(t.Field("inputSchema"), &schema)
		if schema.Properties == nil {
			// It names none and forbids none: pairs go as given.
			_, err := fmt.Fprintln(w, "\narguments: not named by its schema (key=value pairs are sent as given)")
			return err
		}
		_, err := fmt.Fprintln(w, "\nno arguments")
		return err
	}
	rows := make([][]string, len(params))
	for i, p := range params {
		name := p.Name
		if p.Required {
			name += "*"
		}
		rows[i] = []string{name, p.Type, strings.TrimSpace(p.Description + " " + valuesNote(p))}
	}
	fmt.Fprintln(w)
	return wholeTable(w, []string{"argument", "type", "description"}, rows)
}

// wholeTable writes a table uncut: drawn apart from w, whose table would
// be cut to the terminal's width.
func wholeTable(w io.Writer, header []string, rows [][]string) error {
	var b bytes.Buffer
	if err := output.Table(&b, header, rows); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// valuesNote says what values an argument takes, as they are typed in
// key=value (a string bare, anything else as JSON): "(one of: a, b;
// default: a)", or "" when its schema lists none and gives no default.
func valuesNote(p engine.Parameter) string {
	typed := func(raw json.RawMessage) string {
		var s string
		if string(raw) == "null" || json.Unmarshal(raw, &s) != nil {
			return string(raw) // key:=JSON
		}
		if s == "" || strings.ContainsAny(s, ",;()") || strings.TrimSpace(s) != s || json.Valid([]byte(s)) {
			return strconv.Quote(s) // bare, it would read as another value, or two
		}
		return s
	}
	var parts []string
	if len(p.Enum) > 0 {
		vals := make([]string, len(p.Enum))
		for i, v := range p.Enum {
			vals[i] = typed(v)
		}
		parts = append(parts, "one of: "+strings.Join(vals, ", "))
	}
	if len(p.Default) > 0 {
		parts = append(parts, "default: "+typed(p.Default))
	}
	if len(parts) == 0 {
		return ""
	}
	return "(" + strings.Join(parts, "; ") + ")"
}

// indented writes text's lines with prefix before each; nothing for "".
func indented(w io.Writer, text, prefix string) {
	if text == "" {
		return
	}
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimRight(line, " \t\r"); line == "" {
			fmt.Fprintln(w)
			continue
		}
		fmt.Fprintf(w, "%s%s\n", prefix, line)
	}
}
