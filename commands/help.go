package commands

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/mcpctl/mcpctl/schemas"
)

// newHelpCmd is the help command of a group (the root, config, auth). It
// takes a path of any depth ("mcpctl help auth login"), where urfave's
// looks at its first word only, and a word that names no command is a usage
// error, where urfave's printed the group's help with exit 0.
func newHelpCmd() *cli.Command {
	return &cli.Command{
		Name: "help", Aliases: []string{"h"},
		Usage:     "Show the commands, or the help of one",
		ArgsUsage: "[COMMAND [SUBCOMMAND]]",
		// "mcpctl help help" is this command's own help, not a sub-help.
		HideHelpCommand: true,
		// --help anywhere in "help up --help" would make urfave look for a
		// subcommand "up" of help itself.
		SkipFlagParsing: true,
		// help <TAB>: the commands of the group it is in, or of the
		// command named, as the group lists them.
		ShellComplete: func(ctx context.Context, cmd *cli.Command) {
			group := cmd.Lineage()[1]
			for _, w := range cmd.Args().Slice() {
				if sub := group.Command(w); sub != nil {
					group = sub
				}
			}
			for _, c := range group.Commands {
				if !c.Hidden && c.Name != "help" {
					fmt.Fprintln(cmd.Root().Writer, candidateLine(candidate(c.Name, c.Usage)))
				}
			}
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			group := cmd.Lineage()[1]
			var words []string
			askedHelp := false
			for _, w := range cmd.Args().Slice() {
				switch {
				case w == "--help" || w == "-h" || w == "-help":
					askedHelp = true
				case strings.HasPrefix(w, "-"):
					return usagef(fmt.Sprintf("unknown flag %s", w), "see: mcpctl help --help")
				default:
					words = append(words, w)
				}
			}
			if askedHelp && len(words) == 0 {
				return cli.ShowCommandHelp(ctx, group, "help")
			}
			if len(words) == 0 {
				if group == cmd.Root() {
					return cli.ShowRootCommandHelp(group)
				}
				return cli.ShowSubcommandHelp(group)
			}
			parent := group
			for i, word := range words {
				c := parent.Command(word)
				if c == nil {
					return noHelpOn(group, parent, words[:i+1])
				}
				if i == len(words)-1 {
					return cli.ShowCommandHelp(ctx, parent, word)
				}
				parent = c
			}
			return nil
		},
	}
}

// noHelpOn is the error for a help path whose last word names no command
// of parent.
func noHelpOn(group, parent *cli.Command, path []string) error {
	word := path[len(path)-1]
	var names []string
	for _, c := range parent.VisibleCommands() {
		if c.Name != "help" {
			names = append(names, c.Name)
		}
	}
	asked := strings.TrimPrefix(group.FullName()+" "+strings.Join(path, " "), "mcpctl ")
	hint := fmt.Sprintf("see the commands with: %s --help", parent.FullName())
	switch near := schemas.Closest(word, names); {
	case len(names) == 0:
		return usagef(fmt.Sprintf("no help on %q: %s has no subcommands", asked, parent.FullName()),
			fmt.Sprintf("see its help with: mcpctl help %s", strings.TrimPrefix(parent.FullName(), "mcpctl ")))
	case len(near) > 0:
		hint = fmt.Sprintf("did you mean %s %s?", parent.FullName(), near[0])
	}
	return usagef(fmt.Sprintf("no help on %q: there is no such command", asked), hint)
}

// urfave's help goes through a package variable: set once, not by each
// root built (which would race when two run at once).
func init() { cli.ShowCommandHelp = showCommandHelp }

// showCommandHelp is urfave's ShowCommandHelp, except that --help on a
// command without subcommands shows that command's help whatever
// arguments come with it: urfave took "mcpctl call fs.read --help" for
// help on a subcommand "fs.read" of call, and failed.
func showCommandHelp(ctx context.Context, cmd *cli.Command, name string) error {
	if cmd.Command(name) == nil && len(cmd.Lineage()) > 1 && !hasSubcommands(cmd) {
		return cli.DefaultShowCommandHelp(ctx, cmd.Lineage()[1], cmd.Name)
	}
	return cli.DefaultShowCommandHelp(ctx, cmd, name)
}

func hasSubcommands(cmd *cli.Command) bool {
	for _, c := range cmd.Commands {
		if c.Name != "help" {
			return true
		}
	}
	return false
}
