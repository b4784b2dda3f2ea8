package engine

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// plainMessage reports whether line, one JSON object, is a JSON-RPC 2.0
// message that the SDK's decoder is sure to accept: valid UTF-8 and JSON,
// "jsonrpc" exactly "2.0", a method that is a string, an id that is absent,
// null, a string or a short integer (and present when there is no method),
// no "error", no escaped key, no deep nesting. It is the fast path of
// [jsonRPCProblem]: it reads the line once, without the SDK's decoder (a
// 32 KiB buffer and a full decode per message, on top of the SDK's own
// decode of the same line). false means "look closer", not "invalid".
func plainMessage(line []byte) bool {
	if len(line) < 2 || line[0] != '{' || !utf8.Valid(line) || !json.Valid(line) {
		return false
	}
	var version, id, method []byte
	var hasID, hasMethod bool
	i := skipSpace(line, 1)
	for i < len(line) && line[i] != '}' {
		kEnd := endOfString(line, i)
		key := line[i:kEnd]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false // an escaped key may spell one of the names below
		}
		i = skipSpace(line, skipSpace(line, kEnd)+1) // past the ':'
		vEnd, ok := endOfValue(line, i)
		if !ok {
			return false
		}
		val := line[i:vEnd]
		switch string(key) {
		case `"jsonrpc"`:
			if version != nil {
				return false
			}
			version = val
		case `"id"`:
			if hasID {
				return false
			}
			hasID, id = true, val
		case `"method"`:
			if hasMethod {
				return false
			}
			hasMethod, method = true, val
		case `"error"`:
			return false
		}
		i = skipSpace(line, vEnd)
		if i < len(line) && line[i] == ',' {
			i = skipSpace(line, i+1)
		}
	}
	if string(version) != `"2.0"` {
		return false
	}
	if hasMethod && method[0] != '"' {
		return false
	}
	idSet := hasID && string(id) != "null"
	if idSet && id[0] != '"' && !shortInteger(id) {
		return false
	}
	return hasMethod || idSet
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
// valid JSON; false when it nests deeper than maxPlainDepth.
func endOfValue(b []byte, i int) (int, bool) {
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
				if depth++; depth > maxPlainDepth {
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
