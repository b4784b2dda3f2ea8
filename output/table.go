package output

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

// Table writes rows under an upper-cased header in the borderless,
// space-aligned style of docker ps and kubectl get: columns three spaces
// apart, no trailing blanks, one line per row (newlines and tabs in a cell
// become spaces, so each row stays one line for grep and cut).
//
// It is written here rather than taken from a table library because every
// run of mcpctl paid for the one it used (tablewriter's width tables: about
// 0.8 ms and 660 KB of package initialisation, more than all the rest of a
// warm call's own work; docs/performance.md).
func Table(w io.Writer, header []string, rows [][]string) error {
	cells := make([][]string, 0, len(rows)+1)
	head := make([]string, len(header))
	for i, h := range header {
		head[i] = strings.ToUpper(h)
	}
	cells = append(cells, head)
	for _, r := range rows {
		row := make([]string, len(r))
		for i, c := range r {
			row[i] = Printable(oneLine(c))
		}
		cells = append(cells, row)
	}
	var widths []int
	for _, row := range cells {
		for i, c := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], runewidth.StringWidth(c))
		}
	}
	if tw, ok := w.(terminalWriter); ok && tw.width > 0 && len(widths) > 1 {
		fitColumns(cells, widths, tw.width)
	}
	var b strings.Builder
	for _, row := range cells {
		// Trailing empty cells would only leave blanks at the end.
		n := len(row)
		for n > 0 && row[n-1] == "" {
			n--
		}
		for i, c := range row[:n] {
			b.WriteString(c)
			if i < n-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-runewidth.StringWidth(c)+3))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fitColumns cuts cells so that a row fits a terminal width cells wide,
// less one (a line that ends in the last column wraps on some terminals):
// a wrapped row reads as two. The widest columns are cut first, down to
// 12 cells each, which leaves a state ("unavailable") whole. The first
// column is never cut: it is what names the row (a server, a tool, a
// resource's URI), which a user reads and copies. When that cannot make a
// row fit, nothing is cut.
func fitColumns(cells [][]string, widths []int, width int) {
	const least = 12
	room := width - 1
	total, saving := 3*(len(widths)-1), 0
	for i, w := range widths {
		total += w
		if i > 0 && w > least {
			saving += w - least
		}
	}
	if total <= room || total-saving > room {
		return
	}
	for excess := total - room; excess > 0; excess-- {
		widest := 1
		for i := 2; i < len(widths); i++ {
			if widths[i] >= widths[widest] {
				widest = i // of equals, the later: descriptions come last
			}
		}
		widths[widest]--
	}
	for _, row := range cells {
		for i := 0; i < len(row) && i < len(widths); i++ {
			if runewidth.StringWidth(row[i]) > widths[i] {
				row[i] = runewidth.Truncate(row[i], widths[i], "…")
			}
		}
	}
}

// oneLine turns the line breaks and tabs in s into spaces and trims it.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n\t") {
		return strings.TrimSpace(s)
	}
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		switch r {
		case '\r', '\n', '\t':
			return ' '
		}
		return r
	}, s))
}

// invisible reports a format character (bidi controls, zero-width spaces,
// tags) that would hide or reorder text unseen; not the joiners that
// emoji and some scripts need.
func invisible(r rune) bool {
	return r >= 0xAD && unicode.Is(unicode.Cf, r) && r != 0x200C && r != 0x200D
}

// Printable makes s safe to show on a terminal: control characters other
// than newline and tab (ESC, BEL, C1), invisible format characters (bidi
// controls, zero-width spaces) and bytes that are not UTF-8 are written as
// escapes (\x1b, \u009b, \u202e), so that a
// server's name, description or stderr line cannot move the cursor, clear
// the screen, set the clipboard (OSC 52) or show its text in another order
// than it has. JSON output is data for programs and is left as it is
// (encoding/json escapes C0 controls there, not C1 or DEL).
func Printable(s string) string {
	unsafe := func(r rune, size int) bool {
		return r == utf8.RuneError && size == 1 || r != '\n' && r != '\t' && unicode.IsControl(r) || invisible(r)
	}
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unsafe(r, size) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case !unsafe(r, size):
			b.WriteString(s[i : i+size])
		case size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r > 0xFFFF:
			fmt.Fprintf(&b, `\U%08x`, r) // \ue0041 would read as \ue004 and 1
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}
