package engine

import (
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// parsePlain must never accept a line the SDK's decoder refuses: that
// line would end the connection instead of being skipped.
var plainCases = []struct {
	line  string
	plain bool
}{
	{`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`, true},
	{`{"result":{"tools":[]},"jsonrpc":"2.0","id":7}`, true},
	{`{ "jsonrpc" : "2.0" , "id" : "a-1" , "result" : [1, {"x": "}"}] }`, true},
	{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}`, true},
	{`{"jsonrpc":"2.0","id":3,"method":"roots/list"}`, true},
	{`{"jsonrpc":"2.0","id":null,"method":"x"}`, true},
	{`{"jsonrpc":"2.0","id":-12,"result":{}}`, true},
	{`{"jsonrpc":"2.0","id":1,"result":{"s":"a\"b\\c\u00e9"},"JSONRPC":1}`, true},
	{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`, false},
	{`{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}`, false},
	{`{"jsonrpc":"1.0","id":1,"result":{}}`, false},
	{`{"jsonrpc":2.0,"id":1,"result":{}}`, false},
	{`{"id":1,"result":{}}`, false},
	{`{"jsonrpc":"2.0","result":{}}`, false},
	{`{"jsonrpc":"2.0","id":null,"result":{}}`, false},
	{`{"jsonrpc":"2.0","id":true,"result":{}}`, false},
	{`{"jsonrpc":"2.0","id":{"a":1},"result":{}}`, false},
	{`{"jsonrpc":"2.0","id":1.5,"result":{}}`, false},
	{`{"jsonrpc":"2.0","id":1e400,"result":{}}`, false},
	{`{"jsonrpc":"2.0","id":12345678901234567890,"result":{}}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":5}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":null}`, false},
	{`{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"result":{}}`, false},
	{`{"jsonrpc":"2.0","id":1,"id":2,"result":{}}`, false},
	{`{"jsonr\u0070c":"2.0","id":1,"result":{}}`, false},
	{`{"jsonrpc":"2\u002e0","id":1,"result":{}}`, false},
	{`{"jsonrpc":"2.0","id":1,"result":{}`, false},
	{`{"jsonrpc":"2.0","id":1,"result":{}} x`, false},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xff\"}", false},
	{`{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`, false},
	{`[{"jsonrpc":"2.0","id":1,"result":{}}]`, false},
	{`{}`, false},
}

func TestPlainMessage(t *testing.T) {
	for _, c := range plainCases {
		if _, got := parsePlain([]byte(c.line)); got != c.plain {
			t.Errorf("parsePlain(%s) = %v, want %v", c.line, got, c.plain)
		}
		if c.plain {
			sameMessage(t, []byte(c.line))
		}
	}
}

func FuzzPlainMessage(f *testing.F) {
	for _, c := range plainCases {
		f.Add([]byte(c.line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if _, plain := parsePlain(line); !plain {
			return
		}
		sameMessage(t, line)
	})
}

// sameMessage checks that the SDK decodes a plain line, and to the message
// the fast path makes of it.
func sameMessage(t *testing.T, line []byte) {
	t.Helper()
	want, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		t.Errorf("parsePlain accepts %q, which the SDK refuses: %v", line, err)
		return
	}
	m, _ := parsePlain(line)
	got, err := m.message()
	if err != nil {
		t.Errorf("the fast path cannot make a message of %q: %v", line, err)
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%q: the fast path makes %#v, the SDK %#v", line, got, want)
	}
}
