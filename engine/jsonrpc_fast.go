package engine

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	segjson "github.com/segmentio/encoding/json"
)

// parsePlain reports whether line, one JSON object, is a JSON-RPC 2.0
// message that the SDK's decoder is sure to accept, and returns its parts:
// valid UTF-8 and JSON, "jsonrpc" exactly "2.0", a method that is a string,
// an id that is absent, null, a string or a short integer (and present when
// there is no method), no "error", no escaped key, no deep nesting. It is
// the fast path of [jsonLines.next]: it reads the line once, without the
// SDK's decoder (a 32 KiB buffer and a full decode per message). false
// means "look closer", not "invalid".
// A plainMsg is the parts of a plain message ([parsePlain]), as slices of
// its line.
type plainMsg struct {
	id, method, params, result []byte
	hasMethod                  bool
}

func parsePlain(line []byte) (plainMsg, bool) {
	var m plainMsg
	// The SDK's own JSON package checks the line: it is the decoder that
	// must accept it, and it reads a long line several times faster than
	// encoding/json.
	if len(line) < 2 || line[0] != '{' || !utf8.Valid(line) || !segjson.Valid(line) {
		return m, false
	}
	var version []byte
	var hasID bool
	i := skipSpace(line, 1)
	for i < len(line) && line[i] != '}' {
		kEnd := endOfString(line, i)
		key := line[i:kEnd]
		if bytes.IndexByte(key, '\\') >= 0 {
			return m, false // an escaped key may spell one of the names below
		}
		i = skipSpace(line, skipSpace(line, kEnd)+1) // past the ':'
		vEnd, ok := endOfValue(line, i, maxPlainDepth)
		if !ok {
			return m, false
		}
		val := line[i:vEnd]
		switch string(key) {
		case `"jsonrpc"`:
			if version != nil {
				return m, false
			}
			version = val
		case `"id"`:
			if hasID {
				return m, false
			}
			hasID, m.id = true, val
		case `"method"`:
			if m.hasMethod {
				return m, false
			}
			m.hasMethod, m.method = true, val
		case `"params"`:
			if m.params != nil {
				return m, false
			}
			m.params = val
		case `"result"`:
			if m.result != nil {
				return m, false
			}
			m.result = val
		case `"error"`:
			return m, false
		}
		i = skipSpace(line, vEnd)
		if i < len(line) && line[i] == ',' {
			i = skipSpace(line, i+1)
		}
	}
	if string(version) != `"2.0"` {
		return m, false
	}
	if m.hasMethod && m.method[0] != '"' {
		return m, false
	}
	if hasID && string(m.id) == "null" {
		m.id = nil
	}
	if m.id != nil && m.id[0] != '"' && !shortInteger(m.id) {
		return m, false
	}
	return m, m.hasMethod || m.id != nil
}

// message is the SDK's message for m, as [jsonrpc.DecodeMessage] makes it
// of the same line: a request (or notification) when there is a method,
// else a response. Params and Result are slices of the line.
func (m plainMsg) message() (jsonrpc.Message, error) {
	var id jsonrpc.ID
	if m.id != nil {
		var v any
		if m.id[0] == '"' {
			var s string
			if err := json.Unmarshal(m.id, &s); err != nil {
				return nil, err
			}
			v = s
		} else {
			n, err := strconv.ParseInt(string(m.id), 10, 64)
			if err != nil {
				return nil, err
			}
			v = float64(n)
		}
		var err error
		if id, err = jsonrpc.MakeID(v); err != nil {
			return nil, err
		}
	}
	if m.hasMethod {
		method := string(m.method[1 : len(m.method)-1])
		if bytes.IndexByte(m.method, '\\') >= 0 {
			if err := json.Unmarshal(m.method, &method); err != nil {
				return nil, err
			}
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: json.RawMessage(m.params)}, nil
	}
	return &jsonrpc.Response{ID: id, Result: json.RawMessage(m.result)}, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// endOfString returns the index after the string that starts at b[i], in
// valid JSON.
func endOfString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// maxPlainDepth is the deepest nesting the fast path reads; the SDK refuses
// messages nested deeper than 1000.
const maxPlainDepth = 100

// endOfValue returns the index after the value that starts at b[i], in
// valid JSON; false when it nests deeper than maxDepth.
func endOfValue(b []byte, i, maxDepth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '"':
		return endOfString(b, i), true
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = endOfString(b, i)
				continue
			case '{', '[':
				if depth++; depth > maxDepth {
					return i, false
				}
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return i, false
	}
	for i < len(b) && strings.IndexByte(",}] \t\r\n", b[i]) < 0 {
		i++
	}
	return i, true
}

// shortInteger reports whether v is an integer literal that a float64 holds
// exactly.
func shortInteger(v []byte) bool {
	if len(v) > 0 && v[0] == '-' {
		v = v[1:]
	}
	if len(v) == 0 || len(v) > 15 {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
