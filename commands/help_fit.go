package commands

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/urfave/cli/v3"
)

// urfave/cli lays out help's lists (options, commands) as two columns, one
// line a row however long: a repeatable flag's name, given twice
// ("--config FILE, -c FILE [ --config FILE, -c FILE ]"), made the global
// options' first column 52 wide and their lines up to 222 columns. So help
// names a repeatable flag once (its usage says it repeats), and wraps each
// row's text under its own column to fit helpWidth.

// helpWidth is the width help's lists fit, a terminal's least.
const helpWidth = 80

// urfaveFlagString is urfave's own rendering of a flag in help, taken
// before init replaces it.
var urfaveFlagString = cli.FlagStringer

func init() {
	cli.FlagStringer = flagString
	cli.HelpPrinter = printHelp
}

// flagString is a flag's row in help: urfave's, with a repeatable flag's
// names given once.
func flagString(f cli.Flag) string {
	s := urfaveFlagString(f)
	name, usage, ok := strings.Cut(s, "\t")
	if !ok {
		return s
	}
	if i := strings.Index(name, " [ "); i > 0 && strings.HasSuffix(name, " ]") {
		name = name[:i]
	}
	return name + "\t" + usage
}

// printHelp prints urfave's help with its lists fitted to helpWidth.
func printHelp(w io.Writer, templ string, data any) {
	var b bytes.Buffer
	cli.HelpPrinterCustom(&b, templ, data, nil)
	w.Write(fitHelpLists(b.Bytes(), helpWidth))
}

// fitHelpLists wraps the rows wider than width in the lists of help (the
// sections whose title ends in OPTIONS: or COMMANDS:), each row's text
// under its column, and the NAME line, its usage under itself; the rest is
// left as it is.
func fitHelpLists(help []byte, width int) []byte {
	var out bytes.Buffer
	section := ""
	for _, line := range strings.SplitAfter(string(help), "\n") {
		text := strings.TrimSuffix(line, "\n")
		if text != "" && text[0] != ' ' {
			section = text
		} else if utf8.RuneCountInString(text) > width {
			col := 0
			switch {
			case strings.HasSuffix(section, "OPTIONS:") || strings.HasSuffix(section, "COMMANDS:"):
				col = rowTextColumn(text)
			case section == "NAME:":
				// "   mcpctl serve - Serve the servers' ..."
				if i := strings.Index(text, " - "); i > 0 {
					col = i + 3
				}
			}
			if col > 0 {
				out.WriteString(wrapRow(text, col, width))
				out.WriteString(line[len(text):])
				continue
			}
		}
		out.WriteString(line)
	}
	return out.Bytes()
}

// rowTextColumn is where the text of a list's row begins: after the first
// run of two or more spaces past its name; 0 when there is none.
func rowTextColumn(row string) int {
	name := len(row) - len(strings.TrimLeft(row, " "))
	gap := strings.Index(row[name:], "  ")
	if gap < 0 {
		return 0
	}
	col := name + gap
	for col < len(row) && row[col] == ' ' {
		col++
	}
	if col == len(row) {
		return 0
	}
	return col
}

// wrapRow wraps a row's text, from col on, to width, each line after the
// first indented to col; when col leaves less than half the width, the text
// starts on the next line, indented 8.
func wrapRow(row string, col, width int) string {
	head, indent := row[:col], col
	if col > width/2 {
		head, indent = strings.TrimRight(row[:col], " ")+"\n"+strings.Repeat(" ", 8), 8
	}
	var b strings.Builder
	b.WriteString(head)
	n := indent
	for i, word := range strings.Fields(row[col:]) {
		w := utf8.RuneCountInString(word)
		if i > 0 {
			if n+1+w > width {
				b.WriteString("\n" + strings.Repeat(" ", indent))
				n = indent
			} else {
				b.WriteByte(' ')
				n++
			}
		}
		b.WriteString(word)
		n += w
	}
	return b.String()
}
