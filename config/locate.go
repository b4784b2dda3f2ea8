package config

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// A span is where a value sits in the source: the offset of its key (for
// object members, -1 otherwise) and of the value itself.
type span struct{ key, value int }

// A duplicate is an object key given twice; both places are kept so the
// error can show them.
type duplicate struct {
	path          []string
	first, second int
}

// An index maps every value of a JSON document to its place in the source,
// and remembers the order of object keys (Go maps forget it).
type index struct {
	data  []byte
	spans map[string]span
	keys  map[string][]string
	dups  []duplicate
}

func pathKey(path []string) string { return strings.Join(path, "\x00") }

// indexJSON walks a JSON document token by token. It fails on a syntax error
// with the offset where the document stopped making sense.
func indexJSON(data []byte) (*index, error) {
	ix := &index{data: data, spans: map[string]span{}, keys: map[string][]string{}}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	w := walker{ix: ix, dec: dec}
	start := w.skip(0, "")
	ix.spans[""] = span{key: -1, value: start}
	if err := w.value(nil); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, &syntaxError{offset: int(dec.InputOffset()), msg: "unexpected data after the top-level value"}
	}
	return ix, nil
}

type syntaxError struct {
	offset int
	msg    string
}

func (e *syntaxError) Error() string { return e.msg }

type walker struct {
	ix  *index
	dec *json.Decoder
}

// skip moves past whitespace and the given punctuation to where the next
// token starts.
func (w *walker) skip(off int, punct string) int {
	d := w.ix.data
	for off < len(d) {
		c := d[off]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || strings.IndexByte(punct, c) >= 0 {
			off++
			continue
		}
		break
	}
	return off
}

func (w *walker) token() (json.Token, error) {
	tok, err := w.dec.Token()
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, &syntaxError{offset: int(se.Offset), msg: se.Error()}
		}
		if errors.Is(err, errUnexpectedEOF) || err.Error() == "EOF" || strings.Contains(err.Error(), "unexpected EOF") {
			return nil, &syntaxError{offset: len(w.ix.data), msg: "unexpected end of file"}
		}
		return nil, &syntaxError{offset: int(w.dec.InputOffset()), msg: err.Error()}
	}
	return tok, nil
}

var errUnexpectedEOF = errors.New("unexpected EOF")

func (w *walker) value(path []string) error {
	tok, err := w.token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		return w.object(path)
	case '[':
		return w.array(path)
	}
	return &syntaxError{offset: int(w.dec.InputOffset()), msg: fmt.Sprintf("unexpected %q", d)}
}

func (w *walker) object(path []string) error {
	pk := pathKey(path)
	seen := map[string]int{}
	for w.dec.More() {
		kstart := w.skip(int(w.dec.InputOffset()), ",")
		tok, err := w.token()
		if err != nil {
			return err
		}
		k, ok := tok.(string)
		if !ok {
			return &syntaxError{offset: kstart, msg: "expected a quoted field name"}
		}
		child := append(append([]string(nil), path...), k)
		vstart := w.skip(int(w.dec.InputOffset()), ":")
		if first, dup := seen[k]; dup {
			w.ix.dups = append(w.ix.dups, duplicate{path: child, first: first, second: kstart})
		} else {
			seen[k] = kstart
			w.ix.keys[pk] = append(w.ix.keys[pk], k)
			w.ix.spans[pathKey(child)] = span{key: kstart, value: vstart}
		}
		if err := w.value(child); err != nil {
			return err
		}
	}
	_, err := w.token() // '}'
	return err
}

func (w *walker) array(path []string) error {
	for i := 0; w.dec.More(); i++ {
		start := w.skip(int(w.dec.InputOffset()), ",")
		child := append(append([]string(nil), path...), fmt.Sprint(i))
		w.ix.spans[pathKey(child)] = span{key: -1, value: start}
		if err := w.value(child); err != nil {
			return err
		}
	}
	_, err := w.token() // ']'
	return err
}

// at returns the offset of the value at path, or of its key when key is set
// and the value is an object member. It falls back to the nearest ancestor
// that exists (a missing field is reported at its parent).
func (ix *index) at(path []string, key bool) int {
	for p := path; ; p = p[:len(p)-1] {
		if sp, ok := ix.spans[pathKey(p)]; ok {
			if key && sp.key >= 0 && len(p) == len(path) {
				return sp.key
			}
			return sp.value
		}
		if len(p) == 0 {
			return 0
		}
	}
}

// LineCol turns a byte offset into a 1-based line and column (columns count
// characters, as editors do).
func LineCol(data []byte, off int) (line, col int) {
	return newPositions(data).at(off)
}

// positions places offsets of one file by its lines, found once: a config
// of thousands of servers asks where each of them is, and finding each
// from the file's start made loading it quadratic (10,000 servers on one
// line took 8 s).
type positions struct {
	data   []byte
	starts []int  // the offset of each line's first byte
	ascii  []int8 // per line: 0 not yet known, 1 ASCII only, -1 not
	// marks, per line that is not ASCII, are the column at a character
	// every 4 KiB or so: a place on a long line is counted from the mark
	// before it, not from the line's start.
	marks map[int][]mark
}

type mark struct{ off, col int }

func newPositions(data []byte) *positions {
	p := &positions{data: data, starts: []int{0}}
	for i, c := range data {
		if c == '\n' {
			p.starts = append(p.starts, i+1)
		}
	}
	p.ascii = make([]int8, len(p.starts))
	return p
}

func (p *positions) at(off int) (line, col int) {
	off = min(max(off, 0), len(p.data))
	// The last line starting at or before off.
	i, found := slices.BinarySearch(p.starts, off)
	if !found {
		i--
	}
	start := p.starts[i]
	if p.ascii[i] == 0 {
		end := len(p.data)
		if i+1 < len(p.starts) {
			end = p.starts[i+1]
		}
		p.ascii[i] = -1
		if isASCII(p.data[start:end]) {
			p.ascii[i] = 1
		}
	}
	if p.ascii[i] == 1 {
		return i + 1, off - start + 1
	}
	from, col := start, 1
	marks := p.lineMarks(i)
	if j, _ := slices.BinarySearchFunc(marks, off, func(m mark, off int) int { return cmp.Compare(m.off, off+1) }); j > 0 {
		from, col = marks[j-1].off, marks[j-1].col
	}
	return i + 1, col + utf8.RuneCount(p.data[from:off])
}

// lineMarks returns the marks of line i, found on first use.
func (p *positions) lineMarks(i int) []mark {
	if m, ok := p.marks[i]; ok {
		return m
	}
	start, end := p.starts[i], len(p.data)
	if i+1 < len(p.starts) {
		end = p.starts[i+1]
	}
	var marks []mark
	col, next := 1, start+4096
	for b := start; b < end; col++ {
		if b >= next {
			marks = append(marks, mark{b, col})
			next = b + 4096
		}
		_, size := utf8.DecodeRune(p.data[b:end])
		b += size
	}
	if p.marks == nil {
		p.marks = map[int][]mark{}
	}
	p.marks[i] = marks
	return marks
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
