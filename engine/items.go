package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/yosida95/uritemplate/v3"
)

// Everything a server lists is kept as the server sent it, and printed with
// mcpctl's own fields first: the address (server.name, or the URI), the
// server, and "stale" when the server is unavailable and this is its last
// known list.

// A field is one of mcpctl's own fields of a listed object.
type field struct {
	key   string
	value any
}

// marshalItem writes raw (a JSON object) with first's fields first, then the
// server's other fields sorted by key; fields of raw named in first are
// replaced. The server's keys and values are written as they came: nothing
// is escaped again (a "<" stays a "<", as it does in a one-shot command's
// output).
func marshalItem(raw json.RawMessage, first ...field) ([]byte, error) {
	ms, err := members(raw)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(raw)+64)
	b = append(b, '{')
	for i, f := range first {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendPlain(b, f.key), ':')
		if s, ok := f.value.(string); ok {
			b = appendPlain(b, s)
			continue
		}
		v, err := marshalVerbatim(f.value)
		if err != nil {
			return nil, err
		}
		b = append(b, v...)
	}
	for _, m := range sortedMembers(ms, func(key string) bool { return slices.ContainsFunc(first, func(f field) bool { return f.key == key }) }) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(append(append(b, m.rawKey...), ':'), m.value...)
	}
	return append(b, '}'), nil
}

// unmarshalItem reads what marshalItem wrote: it returns mcpctl's fields
// (taking them out) and the server's object, its keys sorted, with restore
// put back (restore[k] names the field of ours that becomes k).
func unmarshalItem(data []byte, take []string, restore map[string]string) (ours map[string]json.RawMessage, raw json.RawMessage, err error) {
	if string(bytes.TrimSpace(data)) == "null" {
		// As encoding/json's own types read it: nothing.
		return map[string]json.RawMessage{}, nil, nil
	}
	if !json.Valid(data) {
		var m map[string]json.RawMessage
		return nil, nil, json.Unmarshal(data, &m) // for its message
	}
	ms, err := members(data)
	if err != nil {
		return nil, nil, err
	}
	ours = map[string]json.RawMessage{}
	kept := make([]member, 0, len(ms)+len(restore))
	for _, m := range ms {
		if slices.Contains(take, m.key) {
			ours[m.key] = m.value
		} else {
			kept = append(kept, m)
		}
	}
	for k, from := range restore {
		if v, ok := ours[from]; ok {
			rawKey, err := marshalVerbatim(k)
			if err != nil {
				return nil, nil, err
			}
			kept = append(kept, member{key: k, rawKey: rawKey, value: v})
		}
	}
	b := make([]byte, 0, len(data))
	b = append(b, '{')
	for _, m := range sortedMembers(kept, nil) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(append(append(b, m.rawKey...), ':'), m.value...)
	}
	return ours, append(b, '}'), nil
}

// A member is one member of a JSON object, as slices of the object.
type member struct {
	key           string // decoded
	rawKey, value []byte // as written, the key with its quotes
}

// members returns the members of obj, a JSON object, in order; it reads
// obj once, with the scanner of the JSON-RPC fast path. obj must be valid
// JSON (a server's item was when it was listed); what is not an object is
// an error.
func members(obj []byte) ([]member, error) {
	i := skipSpace(obj, 0)
	if i == len(obj) || obj[i] != '{' {
		return nil, fmt.Errorf("not a JSON object: %s", truncate(string(obj), 200))
	}
	var ms []member
	for i = skipSpace(obj, i+1); i < len(obj) && obj[i] != '}'; {
		if obj[i] != '"' {
			return nil, fmt.Errorf("not a JSON object: %s", truncate(string(obj), 200))
		}
		kEnd := endOfString(obj, i)
		colon := skipSpace(obj, kEnd)
		if kEnd-i < 2 || obj[kEnd-1] != '"' || colon == len(obj) || obj[colon] != ':' {
			return nil, fmt.Errorf("not a JSON object: %s", truncate(string(obj), 200))
		}
		m := member{rawKey: obj[i:kEnd]}
		m.key = string(m.rawKey[1 : len(m.rawKey)-1])
		if bytes.IndexByte(m.rawKey, '\\') >= 0 || !utf8.ValidString(m.key) {
			if err := json.Unmarshal(m.rawKey, &m.key); err != nil {
				return nil, err
			}
			if !utf8.Valid(m.rawKey) { // written again as a decoder reads it
				m.rawKey, _ = marshalVerbatim(m.key)
			}
		}
		i = skipSpace(obj, colon+1)
		vEnd, ok := endOfValue(obj, i, len(obj))
		if !ok || vEnd == i {
			return nil, fmt.Errorf("not a JSON object: %s", truncate(string(obj), 200))
		}
		m.value = obj[i:vEnd]
		ms = append(ms, m)
		if i = skipSpace(obj, vEnd); i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return ms, nil
}

// sortedMembers returns ms sorted by key, without the members drop (when
// not nil) names; of members with the same key the last counts, as when
// decoding.
func sortedMembers(ms []member, drop func(key string) bool) []member {
	out := make([]member, 0, len(ms))
	for _, m := range ms {
		if drop == nil || !drop(m.key) {
			out = append(out, m)
		}
	}
	slices.SortStableFunc(out, func(a, b member) int { return strings.Compare(a.key, b.key) })
	last := out[:0]
	for i, m := range out {
		if i+1 == len(out) || out[i+1].key != m.key {
			last = append(last, m)
		}
	}
	return last
}

// appendPlain appends s as a JSON string: as it is between quotes when
// nothing in it needs escaping (mcpctl's fields: names, URIs), else as
// marshalVerbatim writes it.
func appendPlain(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			q, _ := marshalVerbatim(s) // a string always encodes
			return append(b, q...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}

// marshalVerbatim is json.Marshal without HTML escaping, as output prints.
func marshalVerbatim(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// stringField returns raw's member name when it is a string, else "".
func stringField(raw json.RawMessage, name string) string {
	ms, err := members(raw)
	if err != nil {
		return ""
	}
	var s string
	for _, m := range ms {
		if m.key == name {
			s = ""
			json.Unmarshal(m.value, &s)
		}
	}
	return s
}

func staleField(stale bool) []field {
	if stale {
		return []field{{"stale", true}}
	}
	return nil
}

// A Prompt is one prompt of one server, as the server listed it.
type Prompt struct {
	Server string
	Prompt string // the prompt's own name
	// Stale is set when the server is unavailable and this comes from its
	// last known list.
	Stale bool
	raw   json.RawMessage
}

// Name is the address of the prompt: server.prompt.
func (p *Prompt) Name() string { return p.Server + "." + p.Prompt }

// Raw returns the prompt object as the server sent it.
func (p *Prompt) Raw() json.RawMessage { return p.raw }

// Description returns the prompt's description, or "".
func (p *Prompt) Description() string { return stringField(p.raw, "description") }

// A PromptArgument is one argument a prompt declares.
type PromptArgument struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// Arguments returns the arguments the prompt declares.
func (p *Prompt) Arguments() []PromptArgument {
	var v struct {
		Arguments []PromptArgument `json:"arguments"`
	}
	json.Unmarshal(p.raw, &v)
	return v.Arguments
}

// argumentNames are the names of a prompt's arguments.
func argumentNames(args []PromptArgument) []string {
	var names []string
	for _, a := range args {
		names = append(names, a.Name)
	}
	return names
}

func (p *Prompt) MarshalJSON() ([]byte, error) {
	return marshalItem(p.raw, append([]field{{"name", p.Name()}, {"server", p.Server}, {"prompt", p.Prompt}}, staleField(p.Stale)...)...)
}

func (p *Prompt) UnmarshalJSON(data []byte) error {
	ours, raw, err := unmarshalItem(data, []string{"name", "server", "prompt", "stale"}, map[string]string{"name": "prompt"})
	if err != nil {
		return err
	}
	json.Unmarshal(ours["server"], &p.Server)
	json.Unmarshal(ours["prompt"], &p.Prompt)
	json.Unmarshal(ours["stale"], &p.Stale)
	p.raw = raw
	return nil
}

// A Resource is one resource of one server, as the server listed it.
type Resource struct {
	Server string
	URI    string
	Stale  bool
	raw    json.RawMessage
}

// Raw returns the resource object as the server sent it.
func (r *Resource) Raw() json.RawMessage { return r.raw }

// Name returns the resource's name, or "".
func (r *Resource) Name() string { return stringField(r.raw, "name") }

// MIMEType returns the resource's MIME type, or "".
func (r *Resource) MIMEType() string { return stringField(r.raw, "mimeType") }

func (r *Resource) MarshalJSON() ([]byte, error) {
	return marshalItem(r.raw, append([]field{{"uri", r.URI}, {"server", r.Server}}, staleField(r.Stale)...)...)
}

func (r *Resource) UnmarshalJSON(data []byte) error {
	ours, raw, err := unmarshalItem(data, []string{"uri", "server", "stale"}, map[string]string{"uri": "uri"})
	if err != nil {
		return err
	}
	json.Unmarshal(ours["uri"], &r.URI)
	json.Unmarshal(ours["server"], &r.Server)
	json.Unmarshal(ours["stale"], &r.Stale)
	r.raw = raw
	return nil
}

// A Template is one resource template (RFC 6570) of one server.
type Template struct {
	Server      string
	URITemplate string
	Stale       bool
	raw         json.RawMessage

	once sync.Once
	tmpl *uritemplate.Template
}

// Raw returns the template object as the server sent it.
func (t *Template) Raw() json.RawMessage { return t.raw }

// Name returns the template's name, or "".
func (t *Template) Name() string { return stringField(t.raw, "name") }

// Match reports whether uri is an expansion of the template.
func (t *Template) Match(uri string) bool {
	tmpl := t.compiled()
	return tmpl != nil && tmpl.Match(uri) != nil
}

// variables returns the names of the template's variables.
func (t *Template) variables() []string {
	if tmpl := t.compiled(); tmpl != nil {
		return tmpl.Varnames()
	}
	return nil
}

// compiled is the template parsed, once; nil when it does not parse.
func (t *Template) compiled() *uritemplate.Template {
	t.once.Do(func() { t.tmpl, _ = uritemplate.New(t.URITemplate) })
	return t.tmpl
}

func (t *Template) MarshalJSON() ([]byte, error) {
	return marshalItem(t.raw, append([]field{{"uriTemplate", t.URITemplate}, {"server", t.Server}}, staleField(t.Stale)...)...)
}

func (t *Template) UnmarshalJSON(data []byte) error {
	ours, raw, err := unmarshalItem(data, []string{"uriTemplate", "server", "stale"}, map[string]string{"uriTemplate": "uriTemplate"})
	if err != nil {
		return err
	}
	json.Unmarshal(ours["uriTemplate"], &t.URITemplate)
	json.Unmarshal(ours["server"], &t.Server)
	json.Unmarshal(ours["stale"], &t.Stale)
	t.raw = raw
	return nil
}

// newItem builds the item of kind from a raw listed object.
func newItem[T any](server string, raw json.RawMessage, key string, build func(server, key string, raw json.RawMessage) *T) (*T, error) {
	k := stringField(raw, key)
	if k == "" {
		return nil, fmt.Errorf("listed without %q: %s", key, truncate(string(raw), 200))
	}
	return build(server, k, append(json.RawMessage(nil), raw...)), nil
}
