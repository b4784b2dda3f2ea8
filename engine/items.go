package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

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
// replaced.
func marshalItem(raw json.RawMessage, first ...field) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range first {
		delete(m, f.key)
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.key)
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(m[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// unmarshalItem reads what marshalItem wrote: it returns mcpctl's fields
// (taking them out) and the server's object with restore put back.
func unmarshalItem(data []byte, take []string, restore map[string]string) (ours map[string]json.RawMessage, raw json.RawMessage, err error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, nil, err
	}
	ours = map[string]json.RawMessage{}
	for _, k := range take {
		if v, ok := m[k]; ok {
			ours[k] = v
			delete(m, k)
		}
	}
	for k, from := range restore {
		if v, ok := ours[from]; ok {
			m[k] = v
		}
	}
	raw, err = json.Marshal(m)
	return ours, raw, err
}

func stringField(raw json.RawMessage, name string) string {
	var m map[string]json.RawMessage
	var s string
	if json.Unmarshal(raw, &m) == nil {
		json.Unmarshal(m[name], &s)
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
	t.once.Do(func() { t.tmpl, _ = uritemplate.New(t.URITemplate) })
	return t.tmpl != nil && t.tmpl.Match(uri) != nil
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
