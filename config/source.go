package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mcpctl/mcpctl/schemas"
	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
	"github.com/tailscale/hujson"
)

// A document is one config file, in the JSON shape the schema describes,
// with the place in the file of every value.
type document struct {
	file string // as shown in messages
	data []byte
	root map[string]any // JSON-shaped: map[string]any, []any, json.Number, string, bool, nil
	ix   *index
	// written maps a path in root to the path as the file writes it (Codex
	// names fields differently); nil means they are the same.
	written func([]string) []string
	errs    Errors
	dir     string // the project directory relative paths are relative to

	// faulted are the servers the schema found fault with (not decoded),
	// each with the fields it faulted ("" is the server as a whole);
	// unusable says the problems are outside any one server (say in
	// defaults), so no server of the file is decoded.
	faulted  map[string]map[string]bool
	unusable bool

	pos *positions // made on first use

	// bearerVars are the variables Codex's bearer_token_env_var names,
	// by server: an empty one is refused, as Codex refuses it.
	bearerVars map[string]string
}

// fault marks field of server as faulted ("" for the server as a whole):
// the server is not decoded, nor checked where the field decides.
func (d *document) fault(server, field string) {
	if d.faulted == nil {
		d.faulted = map[string]map[string]bool{}
	}
	if d.faulted[server] == nil {
		d.faulted[server] = map[string]bool{}
	}
	d.faulted[server][field] = true
}

// at places a path of root in the file.
func (d *document) at(path []string, key bool) (line, col int) {
	return d.place(d.ix.at(d.writtenPath(path), key))
}

// place turns an offset into a line and column.
func (d *document) place(off int) (line, col int) {
	if d.pos == nil {
		d.pos = newPositions(d.data)
	}
	return d.pos.at(off)
}

func (d *document) writtenPath(path []string) []string {
	if d.written == nil {
		return path
	}
	return d.written(path)
}

func (d *document) errorAt(path []string, key bool, msg, hint string) {
	line, col := d.at(path, key)
	written := d.writtenPath(path)
	if d.written != nil && len(written) >= 3 && (written[2] == "bearer_token_env_var" || written[2] == "env_http_headers") {
		// Codex's field names the variable: ${VAR:-default} is not
		// written there.
		if before, _, ok := strings.Cut(hint, ", or give a default"); ok {
			hint = before + " (" + written[2] + " names it)"
		}
	}
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Col: col, Field: schemas.FieldPath(written), Msg: msg, Hint: hint})
}

// writtenName is the name of the field at path as the file writes it
// (Codex's http_headers for headers).
func (d *document) writtenName(path []string) string {
	w := d.writtenPath(path)
	return w[len(w)-1]
}

func (d *document) where(path []string) string {
	line, col := d.at(path, true)
	return fmt.Sprintf("%s:%d:%d", d.file, line, col)
}

// whereValue is where the value at path is, not its key.
func (d *document) whereValue(path []string) string {
	line, col := d.at(path, false)
	return fmt.Sprintf("%s:%d:%d", d.file, line, col)
}

// readDocument decodes a config file: TOML by its extension, else JSON with
// the comments and trailing commas VS Code allows.
func readDocument(file string, data []byte) (*document, error) {
	if bytes.HasPrefix(data, []byte("\uFEFF")) {
		// A byte order mark, as Windows editors write; editors do not
		// count it in columns either.
		data = data[3:]
	}
	if isUTF16(data) {
		return nil, &Error{File: file, Line: 1, Col: 1, Msg: "the file is UTF-16 text, not UTF-8",
			Hint: "save it as UTF-8 (Windows PowerShell 5's > writes UTF-16)"}
	}
	if off := invalidUTF8(data); off >= 0 {
		// JSON decoding would read the byte as U+FFFD, silently: a
		// server would get another argument than the one written.
		line, col := LineCol(data, off)
		return nil, &Error{File: file, Line: line, Col: col, Msg: "the file is not UTF-8 text: a byte here is not UTF-8",
			Hint: "save it as UTF-8 (it may be Latin-1 or Windows-1252); a value that is not text cannot be passed in a config"}
	}
	if onlyComments(data, strings.EqualFold(filepath.Ext(file), ".toml")) {
		hint := `a config names its servers: {"servers": {"NAME": {"command": "..."}}}`
		if strings.EqualFold(filepath.Ext(file), ".toml") {
			hint = `a config names its servers: [servers.NAME] with command = "..."`
		}
		return nil, &Error{File: file, Msg: "the file is empty", Hint: hint}
	}
	read := readJSON
	if strings.EqualFold(filepath.Ext(file), ".toml") {
		read = readTOML
	}
	d, err := read(file, data)
	var e *Error
	if errors.As(err, &e) && e.Line > 0 && strings.HasPrefix(e.Msg, "invalid ") {
		e.Hint = cmp.Or(formatHint(file, data), e.Hint)
	}
	return d, err
}

// formatHint says, for a file that is not valid in the format its name
// chose, that the name chooses it, when the file is likely in another
// format; "" when it is not.
func formatHint(file string, data []byte) string {
	ext := strings.ToLower(filepath.Ext(file))
	switch {
	case ext == ".yaml" || ext == ".yml":
		return "mcpctl does not read YAML: write the config as JSON (a .json file) or TOML (a .toml file)"
	case ext != ".toml" && looksLikeTOML(data):
		return fmt.Sprintf("this looks like TOML, which mcpctl reads only from a file named .toml; %s is read as JSON", filepath.Base(file))
	case ext == ".toml" && bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")):
		return fmt.Sprintf("this looks like JSON, which mcpctl reads from a file not named .toml; %s is read as TOML", filepath.Base(file))
	}
	return ""
}

// tomlLine matches a line that only TOML starts with: a [table] header or
// a key = value. Compiled on first use: only a file in the wrong format
// needs it.
var tomlLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(\[\[?[A-Za-z0-9_. -]+\]\]?\s*(#.*)?$|[A-Za-z0-9_-]+(\s*\.\s*[A-Za-z0-9_-]+)*\s*=)`)
})

// looksLikeTOML says whether the first line of data that is not blank
// nor a # comment is one only TOML has.
func looksLikeTOML(data []byte) bool {
	for line := range bytes.Lines(data) {
		t := bytes.TrimSpace(line)
		if len(t) == 0 || t[0] == '#' {
			continue
		}
		return tomlLine().Match(t)
	}
	return false
}

// invalidUTF8 returns the offset of the first byte of data that is not
// UTF-8, or -1.
func invalidUTF8(data []byte) int {
	if utf8.Valid(data) {
		return -1
	}
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// loneSurrogate returns the offset of the first \u escape in a string of
// data, valid JSON, that is half of a surrogate pair without the other
// half, or -1.
func loneSurrogate(data []byte) int {
	inString := false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			inString = !inString
		case c == '\\' && inString:
			if i+6 > len(data) {
				return -1 // not JSON: its decoder says why
			}
			if data[i+1] != 'u' {
				i++ // an escape of one character
				continue
			}
			cp, _ := strconv.ParseUint(string(data[i+2:i+6]), 16, 16)
			switch {
			case cp >= 0xDC00 && cp <= 0xDFFF:
				return i // a second half first
			case cp >= 0xD800 && cp <= 0xDBFF:
				if i+12 > len(data) || data[i+6] != '\\' || data[i+7] != 'u' {
					return i
				}
				lo, _ := strconv.ParseUint(string(data[i+8:i+12]), 16, 16)
				if lo < 0xDC00 || lo > 0xDFFF {
					return i
				}
				i += 11 // the pair
				continue
			}
			i += 5
		}
	}
	return -1
}

// isUTF16 reports whether data is UTF-16 text: its byte order mark, or,
// without one, a zero byte beside each of its first two ASCII characters.
func isUTF16(data []byte) bool {
	if bytes.HasPrefix(data, []byte{0xFF, 0xFE}) || bytes.HasPrefix(data, []byte{0xFE, 0xFF}) {
		return true
	}
	return len(data) >= 4 && (data[0] == 0 && data[1] != 0 && data[2] == 0 && data[3] != 0 ||
		data[0] != 0 && data[1] == 0 && data[2] != 0 && data[3] == 0)
}

// onlyComments reports whether data holds nothing but blanks and the
// comments of JSON with comments (// to the end of the line, /* */) or, if
// toml, of TOML (# to the end of the line).
func onlyComments(data []byte, toml bool) bool {
	for i := 0; i < len(data); {
		switch rest := data[i:]; {
		case rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\n' || rest[0] == '\r':
			i++
		case toml && rest[0] == '#' || !toml && bytes.HasPrefix(rest, []byte("//")):
			end := bytes.IndexByte(rest, '\n')
			if end < 0 {
				return true
			}
			i += end + 1
		case !toml && bytes.HasPrefix(rest, []byte("/*")):
			end := bytes.Index(rest[2:], []byte("*/"))
			if end < 0 {
				return false // not closed: the parser says so
			}
			i += 2 + end + 2
		default:
			return false
		}
	}
	return true
}

// hujsonPos reads hujson's errors; (?s): the literal it quotes may hold
// the very line break that is wrong.
var hujsonPos = regexp.MustCompile(`(?s)^hujson: line (\d+), column (\d+): (.*)$`)

// maxDepth bounds how deep a JSON config nests. Real ones nest four
// levels; the bound keeps a hostile file from costing time and memory that
// grow with the square of its depth.
const maxDepth = 32

// tooDeep returns the offset where data (JSON with comments) nests deeper
// than maxDepth, or -1. It runs before parsing, which is what costs.
func tooDeep(data []byte) int {
	depth := 0
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case c == '/' && i+1 < len(data) && data[i+1] == '/':
			for i < len(data) && data[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(data) && data[i+1] == '*':
			end := bytes.Index(data[i+2:], []byte("*/"))
			if end < 0 {
				return -1
			}
			i += end + 3
		case c == '{' || c == '[':
			if depth++; depth > maxDepth {
				return i
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return -1
}

// syntaxMistake says what the JSON parser found wrong (msg, hujson's), in
// words and with a hint, never quoting the text itself: an unquoted or
// badly escaped value may be a key or a password.
func syntaxMistake(msg string) (string, string) {
	lit, isLiteral := strings.CutPrefix(msg, "invalid literal: ")
	switch {
	case isLiteral && strings.HasPrefix(lit, `"`) && strings.ContainsFunc(lit, unicode.IsControl):
		// A string with a raw line break or tab in it.
		return "a string holds a line break or another control character", `write it escaped: \n, \t`
	case isLiteral && strings.HasPrefix(lit, `"`):
		return "a string holds a backslash that is not a JSON escape", `write a backslash as \\ (a Windows path: "C:\\Users\\me"); JSON knows \" \\ \/ \b \f \n \r \t and \uXXXX`
	case isLiteral && lit != "" && (lit[0] == '-' || lit[0] >= '0' && lit[0] <= '9'):
		return "a number JSON does not take (a leading zero, a stray character)", `write it as JSON does (8080, 1.5), or quote it as a string: "0800"`
	case isLiteral:
		return "a word that is not quoted (a key or a value)", `quote keys and strings with double quotes: "KEY": "value"; true, false and null go bare`
	case strings.Contains(msg, "invalid character '\\''"):
		return "a single quote", `JSON quotes strings and keys with double quotes: "value"`
	case strings.Contains(msg, "after object value (expecting ',' or '}')"), strings.Contains(msg, "after array value (expecting ',' or ']')"):
		return msg, "a comma is missing between two fields or items"
	case strings.Contains(msg, "parsing string: unexpected EOF"):
		return "a string is not closed", `end it with a double quote: "value"`
	case strings.Contains(msg, "unexpected EOF"):
		return "the file ends before a { or [ is closed", "close every { with } and every [ with ]"
	}
	return msg, ""
}

func readJSON(file string, data []byte) (*document, error) {
	if off := tooDeep(data); off >= 0 {
		line, col := LineCol(data, off)
		return nil, &Error{File: file, Line: line, Col: col, Msg: fmt.Sprintf("invalid JSON: nested more than %d levels deep", maxDepth),
			Hint: "a config nests a few levels: servers, a server, its env"}
	}
	// Standardize blanks comments and trailing commas out, keeping every
	// byte where it was, so positions still hold.
	buf := append([]byte(nil), data...)
	if last := buf[bytes.LastIndexByte(buf, '\n')+1:]; bytes.Contains(last, []byte("//")) {
		// hujson wants a line comment ended by a line break, which a file
		// VS Code saved last with a comment on its last line lacks.
		buf = append(buf, '\n')
	}
	std, err := hujson.Standardize(buf)
	if err != nil {
		if m := hujsonPos.FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			col, _ := strconv.Atoi(m[2])
			msg, hint := syntaxMistake(m[3])
			return nil, &Error{File: file, Line: line, Col: col, Msg: "invalid JSON: " + msg, Hint: hint}
		}
		return nil, &Error{File: file, Msg: "invalid JSON: " + err.Error()}
	}
	ix, err := indexJSON(std)
	if err != nil {
		var se *syntaxError
		if errors.As(err, &se) {
			line, col := LineCol(data, se.offset)
			return nil, &Error{File: file, Line: line, Col: col, Msg: "invalid JSON: " + se.msg}
		}
		return nil, &Error{File: file, Msg: "invalid JSON: " + err.Error()}
	}
	if off := loneSurrogate(std); off >= 0 {
		// JSON decoding would read it as U+FFFD, silently, as it would a
		// byte that is not UTF-8.
		line, col := LineCol(data, off)
		return nil, &Error{File: file, Line: line, Col: col, Msg: fmt.Sprintf("invalid JSON: %s is half of a UTF-16 surrogate pair, which is no character", std[off:off+6]),
			Hint: `write the character itself, or both halves of its pair (\ud83d\ude00 for 😀)`}
	}
	v, err := schemas.Decode(std)
	if err != nil {
		return nil, &Error{File: file, Msg: "invalid JSON: " + err.Error()}
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, &Error{File: file, Line: 1, Col: 1, Msg: "expected a JSON object with \"servers\" or \"mcpServers\""}
	}
	d := &document{file: file, data: data, root: root, ix: ix}
	for _, dup := range ix.dups {
		line, col := d.place(dup.first)
		what := "field"
		if len(dup.path) == 2 && (dup.path[0] == "servers" || dup.path[0] == "mcpServers") {
			what = "server name"
		}
		l2, c2 := d.place(dup.second)
		hint := "remove one of the two"
		if what == "server name" {
			hint = "remove one, or give it another name"
		}
		d.errs = append(d.errs, &Error{File: file, Line: l2, Col: c2, Field: schemas.FieldPath(dup.path),
			Msg: fmt.Sprintf("duplicate %s %q (first defined at %d:%d)", what, dup.path[len(dup.path)-1], line, col), Hint: hint})
	}
	return d, nil
}

func readTOML(file string, data []byte) (*document, error) {
	var raw map[string]any
	if err := toml.Unmarshal(data, &raw); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			return nil, tomlError(file, data, de)
		}
		return nil, &Error{File: file, Msg: "invalid TOML: " + err.Error()}
	}
	dates := tomlDates(raw, nil)
	_, codex := raw["mcp_servers"]
	// Codex's own file is Codex's, servers or not: model, profiles, ...
	codex = codex || isCodexFile(file)
	root, _ := jsonShape(raw).(map[string]any)
	d := &document{file: file, data: data, root: root, ix: indexTOML(data)}
	if codex {
		d.fromCodex()
	}
	for _, p := range dates {
		if codex && p[0] != "mcp_servers" {
			continue // the rest of Codex's file is Codex's
		}
		// No field takes a date; as text it must be quoted. p is the path
		// as written, as the index knows it.
		line, col := d.place(d.ix.at(p, false))
		d.errs = append(d.errs, &Error{File: file, Line: line, Col: col, Field: schemas.FieldPath(p),
			Msg: "a TOML date or time, where text is expected", Hint: "quote it to make it text"})
		// Its server is faulted, as the schema's faults are: a date
		// for a command is not also a command not found.
		if len(p) >= 3 && (p[0] == "servers" || p[0] == "mcpServers" || p[0] == "mcp_servers") {
			d.fault(p[1], p[2])
		}
	}
	return d, nil
}

// tomlError places go-toml's error in the file (its column counts bytes,
// ours characters) and says it in words, with a hint where one helps.
func tomlError(file string, data []byte, de *toml.DecodeError) *Error {
	line, col := de.Position()
	off := offsetOf(data, line, col)
	line, col = LineCol(data, off)
	msg := strings.TrimPrefix(de.Error(), "toml: ")
	e := &Error{File: file, Line: line, Col: col, Msg: "invalid TOML: " + msg}
	switch {
	case strings.HasPrefix(msg, "expected keyword "), strings.HasSuffix(msg, " at start of value"):
		// node reads as the start of nan, sk-... as no value at all.
		e.Msg = "invalid TOML: a value that is not quoted (a string needs quotes)"
		e.Hint = `write strings in double quotes: command = "node"; true, false and numbers go bare`
	case strings.HasPrefix(msg, "expected newline but got"):
		e.Msg = "invalid TOML: something follows the value on its line"
		e.Hint = `write one key = value a line, a string in double quotes: command = "node"`
	case strings.Contains(msg, "escape"):
		e.Msg = "invalid TOML: a string holds a backslash that is not a TOML escape"
		e.Hint = `write a backslash as \\ ("C:\\Users\\me"), or quote with single quotes, which take every character as written ('C:\Users\me')`
	case strings.HasPrefix(msg, "table ") && strings.Contains(msg, " already exists"):
		e.Field = schemas.FieldPath(de.Key())
		e.Msg = fmt.Sprintf("invalid TOML: table [%s] is defined twice", strings.Join(de.Key(), "."))
		if first := tomlTableOffset(data, de.Key()); first >= 0 && first < off {
			l, c := LineCol(data, first)
			e.Msg += fmt.Sprintf(" (first at %d:%d)", l, c)
		}
		e.Hint = "merge the two tables into one"
		if k := de.Key(); len(k) == 2 && (k[0] == "servers" || k[0] == "mcpServers" || k[0] == "mcp_servers") {
			e.Hint = "remove one, or give it another name"
		}
	case strings.HasPrefix(msg, "key ") && strings.HasSuffix(msg, " is already defined"):
		path := append(tomlTableBefore(data, off), de.Key()...)
		if name := strings.TrimSuffix(strings.TrimPrefix(msg, "key "), " is already defined"); len(path) == 0 || path[len(path)-1] != name {
			path = append(path, name) // in an inline table: its key is the table's
			// go-toml places it at the start of the line: the second
			// of the two is where the reader looks.
			if at := secondKeyOnLine(data, off, name); at >= 0 {
				e.Line, e.Col = LineCol(data, at)
			}
		}
		e.Field = schemas.FieldPath(path)
		e.Msg = fmt.Sprintf("invalid TOML: duplicate field %q", path[len(path)-1])
		e.Hint = "remove one of the two"
	}
	return e
}

// secondKeyOnLine is the offset of the second key name (bare or quoted,
// followed by =) on the line that starts at off, or -1.
func secondKeyOnLine(data []byte, off int, name string) int {
	line := data[off:]
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	re := regexp.MustCompile(`[\s{,]("|')?` + regexp.QuoteMeta(name) + `("|')?\s*=`)
	found := re.FindAllSubmatchIndex(line, 2)
	if len(found) < 2 {
		return -1
	}
	return off + found[1][0] + 1
}

// offsetOf is the offset of a 1-based line and byte column in data.
func offsetOf(data []byte, line, col int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return len(data)
		}
		off += i + 1
	}
	return min(off+col-1, len(data))
}

// tomlHeaders calls f with the path and offset of each [table] header of
// data, in order, until f returns false or parsing fails.
func tomlHeaders(data []byte, f func(path []string, off int) bool) {
	var p unstable.Parser
	p.Reset(data)
	for p.NextExpression() {
		n := p.Expression()
		if n.Kind != unstable.Table && n.Kind != unstable.ArrayTable {
			continue
		}
		var path []string
		off := -1
		for it := n.Key(); it.Next(); {
			k := it.Node()
			if off < 0 {
				off = int(k.Raw.Offset)
			}
			path = append(path, string(k.Data))
		}
		if !f(path, off) {
			return
		}
	}
}

// tomlTableOffset is the offset of the first header of the table at
// path, or -1.
func tomlTableOffset(data []byte, path []string) int {
	at := -1
	tomlHeaders(data, func(p []string, off int) bool {
		if slices.Equal(p, path) {
			at = off
			return false
		}
		return true
	})
	return at
}

// tomlTableBefore is the path of the table the key at off is in: that of
// the last header before it.
func tomlTableBefore(data []byte, off int) []string {
	var table []string
	tomlHeaders(data, func(p []string, at int) bool {
		if at > off {
			return false
		}
		table = p
		return true
	})
	return table
}

// tomlDates returns the paths of the dates and times in decoded TOML.
func tomlDates(v any, path []string) [][]string {
	var out [][]string
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			out = append(out, tomlDates(e, append(slices.Clip(path), k))...)
		}
	case []any:
		for i, e := range v {
			out = append(out, tomlDates(e, append(slices.Clip(path), strconv.Itoa(i)))...)
		}
	case time.Time, toml.LocalDate, toml.LocalTime, toml.LocalDateTime:
		out = append(out, path)
	}
	return out
}

// jsonShape turns decoded TOML into the shape JSON decoding gives.
func jsonShape(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = jsonShape(e)
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = jsonShape(e)
		}
		return v
	case int64:
		return json.Number(strconv.FormatInt(v, 10))
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return fmt.Sprint(v)
		}
		return json.Number(strconv.FormatFloat(v, 'g', -1, 64))
	case time.Time:
		return v.Format(time.RFC3339Nano)
	case toml.LocalDate, toml.LocalTime, toml.LocalDateTime:
		return fmt.Sprint(v)
	}
	return v
}

// indexTOML places every key and value of a TOML document.
func indexTOML(data []byte) *index {
	ix := &index{data: data, spans: map[string]span{}, keys: map[string][]string{}}
	var p unstable.Parser
	p.Reset(data)
	var table []string
	arrays := map[string]int{}
	// keyPath returns a (dotted) key, the offset of each part, and the
	// offset of its last part.
	var parts []int
	keyPath := func(n *unstable.Node) ([]string, int) {
		var out []string
		parts = parts[:0]
		it := n.Key()
		for it.Next() {
			k := it.Node()
			parts = append(parts, int(k.Raw.Offset))
			out = append(out, string(k.Data))
		}
		return out, parts[len(parts)-1]
	}
	// record places path; the parents that a dotted key or table header
	// names are placed at their own parts.
	record := func(path []string, key, value int) {
		first := len(path) - len(parts)
		for i := 1; i <= len(path); i++ {
			parent, child := pathKey(path[:i-1]), path[i-1]
			if _, seen := ix.spans[pathKey(path[:i])]; !seen {
				off := key
				if j := i - 1 - first; j >= 0 && j < len(parts) {
					off = parts[j]
				}
				ix.keys[parent] = append(ix.keys[parent], child)
				ix.spans[pathKey(path[:i])] = span{key: off, value: off}
			}
		}
		ix.spans[pathKey(path)] = span{key: key, value: value}
	}
	var walkValue func(path []string, v *unstable.Node, fallback int)
	walkValue = func(path []string, v *unstable.Node, fallback int) {
		switch v.Kind {
		case unstable.Array:
			it := v.Children()
			for i := 0; it.Next(); i++ {
				c := it.Node()
				off := fallback
				if c.Raw.Length > 0 {
					off = int(c.Raw.Offset)
				}
				child := append(append([]string(nil), path...), strconv.Itoa(i))
				parts = parts[:0]
				record(child, -1, off)
				walkValue(child, c, off)
			}
		case unstable.InlineTable:
			it := v.Children()
			for it.Next() {
				kv := it.Node()
				k, koff := keyPath(kv)
				child := append(append([]string(nil), path...), k...)
				val := kv.Value()
				voff := koff
				if val.Raw.Length > 0 {
					voff = int(val.Raw.Offset)
				}
				record(child, koff, voff)
				walkValue(child, val, voff)
			}
		}
	}
	for p.NextExpression() {
		n := p.Expression()
		switch n.Kind {
		case unstable.Table:
			k, off := keyPath(n)
			table = k
			record(table, off, off)
		case unstable.ArrayTable:
			k, off := keyPath(n)
			i := arrays[pathKey(k)]
			arrays[pathKey(k)]++
			table = append(k, strconv.Itoa(i))
			record(table, off, off)
		case unstable.KeyValue:
			k, koff := keyPath(n)
			path := append(append([]string(nil), table...), k...)
			val := n.Value()
			voff := koff
			if val.Raw.Length > 0 {
				voff = int(val.Raw.Offset)
			}
			record(path, koff, voff)
			walkValue(path, val, voff)
		}
	}
	return ix
}

// Codex's config.toml keeps servers under [mcp_servers.NAME] with names of
// its own; fromCodex renames them into mcpctl's shape, remembering the
// original names for messages.
var codexFields = map[string]string{
	"command": "command", "args": "args", "env": "env", "cwd": "cwd", "url": "url",
	"http_headers": "headers", "startup_timeout_sec": "startupTimeout", "startup_timeout_ms": "startupTimeout",
	"tool_timeout_sec": "requestTimeout", "enabled_tools": "includeTools", "disabled_tools": "excludeTools",
	"enabled": "", "bearer_token_env_var": "", "env_http_headers": "", "env_vars": "", "required": "",
}

// isCodexFile says whether file is Codex's config.toml, in .codex/.
func isCodexFile(file string) bool {
	return filepath.Base(file) == "config.toml" && filepath.Base(filepath.Dir(file)) == ".codex"
}

func (d *document) fromCodex() {
	if _, ok := d.root["servers"]; ok {
		// mcp.toml's tables beside Codex's: one would be left out unsaid.
		if _, both := d.root["mcp_servers"]; both {
			d.errorAt([]string{"servers"}, true, "both [mcp_servers] (Codex) and [servers] are present",
				"keep one: [mcp_servers.NAME] (Codex's config.toml) or [servers.NAME] (mcp.toml)")
		} else {
			d.errorAt([]string{"servers"}, true, "Codex's config.toml keeps MCP servers under [mcp_servers], not [servers]",
				"rename [servers.NAME] to [mcp_servers.NAME]")
		}
	}
	servers, ok := d.root["mcp_servers"].(map[string]any)
	if v, given := d.root["mcp_servers"]; given && !ok {
		d.errorAt([]string{"mcp_servers"}, true, "expected a table of servers, got "+typeName(v), `give each server a table: [mcp_servers.NAME] with command = "..."`)
	}
	out := map[string]any{}
	origin := map[string]string{}         // "server\x00field" → Codex field
	headerOrigin := map[string][]string{} // "server\x00header" → its path from the Codex field
	for name, v := range servers {
		in, ok := v.(map[string]any)
		if !ok {
			// Placed and named as the file writes it: the mapping from
			// Codex's names is not made yet.
			d.errorAt([]string{"mcp_servers", name}, false, fmt.Sprintf("expected a table, got %s", typeName(v)),
				fmt.Sprintf(`give the server a table: [mcp_servers.%s] with command = "..."`, name))
			continue
		}
		s := map[string]any{}
		for k, val := range in {
			to, known := codexFields[k]
			if !known {
				var names []string
				for n := range codexFields {
					names = append(names, n)
				}
				hint := ""
				if near := schemas.Closest(k, names); len(near) > 0 {
					hint = fmt.Sprintf("did you mean %q?", near[0])
				}
				if h := otherClientsNames[k]; h != "" {
					// Another client's name for url: said so, and the
					// server is faulted, not also "command required".
					// (A name of Codex's own near it is the better hint:
					// disabled_tools for disabledTools.)
					if hint == "" {
						hint = h
					}
					d.fault(name, k)
				}
				line, col := d.place(d.ix.at([]string{"mcp_servers", name, k}, true))
				d.errs = append(d.errs, &Error{File: d.file, Line: line, Col: col, Field: "mcp_servers." + name + "." + k, Msg: "unknown field", Hint: hint})
				continue
			}
			// bad reports a field of this server that Codex would refuse.
			bad := func(msg, hint string) { d.codexBad(name, k, nil, msg, hint) }
			switch k {
			case "enabled":
				b, ok := val.(bool)
				if !ok {
					bad("expected true or false, got "+typeName(val), "")
					continue
				}
				s["disabled"] = !b
				origin[name+"\x00disabled"] = k
			case "startup_timeout_ms":
				n, ok := val.(json.Number)
				if _, both := in["startup_timeout_sec"]; both {
					bad("startup_timeout_sec says the same", "keep one of startup_timeout_sec and startup_timeout_ms")
					continue
				}
				if !ok {
					bad("expected a number of milliseconds, got "+typeName(val), "e.g. startup_timeout_ms = 20000")
					continue
				}
				f, _ := n.Float64()
				// Said here, in milliseconds: the duration check would quote
				// the value in seconds.
				if f < 1e-6 || f > float64(maxDuration.Milliseconds()) {
					bad(fmt.Sprintf("expected a number of milliseconds above zero, at most %d (24h), got %s", maxDuration.Milliseconds(), n), "e.g. startup_timeout_ms = 20000")
					continue
				}
				s["startupTimeout"] = json.Number(strconv.FormatFloat(f/1000, 'g', -1, 64))
				origin[name+"\x00startupTimeout"] = k
			case "bearer_token_env_var", "env_http_headers", "http_headers":
				// Below, in a fixed order: see codexHeaders.
			case "env_vars":
				// Codex passes these besides its basic variables: mcpctl's
				// inheritEnv list.
				if _, ok := val.([]any); !ok {
					bad("expected an array of variable names, got "+typeName(val), `e.g. env_vars = ["AWS_REGION"]`)
					continue
				}
				s["inheritEnv"] = val
				origin[name+"\x00inheritEnv"] = k
			case "required":
				// mcpctl starts all of a config's servers or none.
			default:
				s[to] = val
				origin[name+"\x00"+to] = k
			}
		}
		if headers, from := d.codexHeaders(name, in, headerOrigin); len(headers) > 0 {
			s["headers"] = headers
			origin[name+"\x00headers"] = from
		}
		if _, local := in["command"]; local && s["inheritEnv"] == nil {
			// Without env_vars Codex passes a server only its basic
			// variables (PATH, HOME, ...), not the shell's secrets.
			s["inheritEnv"] = false
		}
		out[name] = s
	}
	// The rest of a Codex config (model, profiles, ...) is Codex's own.
	d.root = map[string]any{"servers": out}
	d.written = func(path []string) []string {
		if len(path) == 0 || path[0] != "servers" {
			return path
		}
		w := append([]string{"mcp_servers"}, path[1:]...)
		if len(w) >= 4 && w[2] == "headers" {
			// A header is where Codex's field for it is.
			if o, ok := headerOrigin[w[1]+"\x00"+w[3]]; ok {
				return append(append(w[:2:2], o...), w[4:]...)
			}
		}
		if len(w) >= 3 {
			if f, ok := origin[w[1]+"\x00"+w[2]]; ok {
				w[2] = f
			}
		}
		return w
	}
}

// codexBad reports field of a Codex server, or the part of it at at, as
// one Codex would refuse.
func (d *document) codexBad(server, field string, at []string, msg, hint string) {
	path := append([]string{"mcp_servers", server, field}, at...)
	line, col := d.place(d.ix.at(path, false))
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Col: col, Field: schemas.FieldPath(path), Msg: msg, Hint: hint})
}

// codexHeaders makes the headers of a Codex server (in) from its three
// fields, in this order: http_headers, env_http_headers (which wins over
// http_headers, as in Codex), bearer_token_env_var. Its Authorization
// set by another field too is an error naming both: which one Codex
// sends is not plain, and taken from either, it was the one a map's order
// chose. from is the
// field the headers are placed at, http_headers if written; origin gets
// where each header is written.
func (d *document) codexHeaders(server string, in map[string]any, origin map[string][]string) (headers map[string]any, from string) {
	headers = map[string]any{}
	setBy := map[string]string{} // a header's name in lower case → the field that set it
	named := map[string]string{} // and as that field wrote it
	set := func(field, h string, v any, at ...string) {
		key := strings.ToLower(h)
		if first, dup := setBy[key]; dup {
			if first == field {
				d.codexBad(server, field, at, fmt.Sprintf("%s and %s are one header: header names do not differ by case", named[key], h), "keep one of them")
				return
			}
			if first != "http_headers" || field != "env_http_headers" {
				// Which one Codex sends is not plain: refused.
				d.codexBad(server, field, at, fmt.Sprintf("%s and %s both set the %s header", first, field, h), "keep one of them")
				return
			}
			// As Codex does: env_http_headers over http_headers, whose
			// value stays for a variable unset or blank.
			if lit, ok := headers[named[key]].(string); ok && !strings.Contains(lit, "}") {
				v = strings.TrimSuffix(v.(string), "}") + ":-" + lit + "}"
			}
			delete(headers, named[key])
			delete(origin, server+"\x00"+named[key])
		}
		setBy[key], named[key] = field, h
		headers[h] = v
		origin[server+"\x00"+h] = append([]string{field}, at...)
		from = cmp.Or(from, field)
	}
	if val, ok := in["http_headers"]; ok {
		m, ok := val.(map[string]any)
		if !ok {
			// Dropped, the server would run without its
			// Authorization, and fail as unauthorized.
			d.codexBad(server, "http_headers", nil, "expected a table of header names and values, got "+typeName(val), `e.g. http_headers = { Authorization = "Bearer ${GITHUB_TOKEN}" }`)
		}
		for _, h := range slices.Sorted(maps.Keys(m)) {
			set("http_headers", h, m[h], h)
		}
		if ok {
			from = "http_headers" // even when it is empty
		}
	}
	if val, ok := in["env_http_headers"]; ok {
		m, ok := val.(map[string]any)
		if !ok {
			d.codexBad(server, "env_http_headers", nil, "expected a table of header names and environment variable names, got "+typeName(val), `e.g. env_http_headers = { X-Api-Key = "API_KEY" }`)
		}
		for _, h := range slices.Sorted(maps.Keys(m)) {
			if v, ok := m[h].(string); ok && validVarName(v) {
				set("env_http_headers", h, "${"+v+"}", h)
				continue
			}
			d.codexBad(server, "env_http_headers", []string{h}, "expected the name of an environment variable, got "+codexShown(m[h]), `e.g. env_http_headers = { X-Api-Key = "API_KEY" }`)
		}
	}
	if val, ok := in["bearer_token_env_var"]; ok {
		v, ok := val.(string)
		if !ok || !validVarName(v) {
			d.codexBad(server, "bearer_token_env_var", nil, "expected the name of an environment variable, got "+codexShown(val), `e.g. bearer_token_env_var = "GITHUB_TOKEN"`)
		} else {
			set("bearer_token_env_var", "Authorization", "Bearer ${"+v+"}")
			if d.bearerVars == nil {
				d.bearerVars = map[string]string{}
			}
			d.bearerVars[server] = v
		}
	}
	return headers, from
}

// codexShown is a value Codex wanted a variable name for, as the message
// shows it: ${VAR} as written, as that is the likely mistake; any other
// string not at all, as it may be the token itself.
func codexShown(v any) string {
	s, ok := v.(string)
	switch {
	case !ok:
		return typeName(v)
	case strings.HasPrefix(s, "${") && strings.HasSuffix(s, "}") && validVarName(s[2:len(s)-1]):
		return strconv.Quote(s) + " (the name alone, without ${})"
	}
	return "a string that is not a variable name (not shown: it may be the token itself)"
}

func typeName(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case json.Number:
		return "number"
	case string:
		return "string"
	case bool:
		return "boolean"
	}
	return "null"
}
