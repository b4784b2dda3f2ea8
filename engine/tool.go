package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/mcpctl/mcpctl/schemas"
)

// A Tool is one tool of one server, kept exactly as the server listed it
// (fields the SDK does not model, such as execution, included).
type Tool struct {
	// Server is the server's name in the config.
	Server string
	// Tool is the tool's own name.
	Tool string
	// Stale is set when the server is unavailable and this comes from its
	// last known list.
	Stale bool
	// raw is the tool object as the server sent it.
	raw json.RawMessage
	// schema is shared by copies of the tool (stale copies included).
	schema *toolSchema
}

type toolSchema struct {
	once sync.Once
	s    *schemas.Schema
	err  error

	// What every call reads, read from the tool object once.
	factsOnce   sync.Once
	taskSupport string
	propTypes   map[string][]string // each top-level property's JSON types
	// silentOnOthers: the schema has properties (none, if empty) and
	// nothing in it speaks of others (additionalProperties,
	// patternProperties, a combinator or a reference that may add some),
	// so the validator lets any other through.
	silentOnOthers bool

	// The output schema, compiled on the first result to check.
	outOnce sync.Once
	out     *schemas.Schema
}

// Name is the address of the tool: server.tool.
func (t *Tool) Name() string { return t.Server + "." + t.Tool }

// Raw returns the tool object as the server sent it.
func (t *Tool) Raw() json.RawMessage { return t.raw }

// Field returns one top-level field of the tool object (inputSchema,
// description, annotations, execution, ...), or nil.
func (t *Tool) Field(name string) json.RawMessage {
	return bytes.Clone(t.field(name))
}

// field is Field without the copy: a part of t.raw, not to be written to.
// The object is scanned, not decoded: a tool's schema and description
// can be long, and calls read fields of it.
func (t *Tool) field(name string) json.RawMessage {
	ms, err := members(t.raw)
	if err != nil {
		return nil
	}
	var v json.RawMessage
	for _, m := range ms {
		if m.key == name {
			v = m.value // the last counts, as when decoding
		}
	}
	return v
}

// facts reads, once for the tool and its copies, what each call needs.
func (t *Tool) facts() *toolSchema {
	ts := t.schema
	if ts == nil {
		ts = &toolSchema{} // a Tool not made by newTool or UnmarshalJSON
	}
	ts.factsOnce.Do(func() {
		var e struct {
			TaskSupport string `json:"taskSupport"`
		}
		if json.Unmarshal(t.field("execution"), &e) != nil || e.TaskSupport == "" {
			e.TaskSupport = "forbidden"
		}
		ts.taskSupport = e.TaskSupport
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		raw := t.field("inputSchema")
		json.Unmarshal(raw, &schema)
		defs := schemaDefs(raw)
		// "properties": {} names none: the tool takes no arguments.
		ts.silentOnOthers = schema.Properties != nil
		// Any of these may allow other properties, or forbid them.
		ms, _ := members(raw)
		for _, m := range ms {
			switch m.key {
			case "additionalProperties", "patternProperties", "unevaluatedProperties", "allOf", "anyOf", "oneOf",
				"$ref", "$dynamicRef", "if", "then", "else", "dependentSchemas", "dependencies":
				ts.silentOnOthers = false
			}
		}
		ts.propTypes = make(map[string][]string, len(schema.Properties))
		for name, raw := range schema.Properties {
			ts.propTypes[name] = schemaTypes(raw, 0, defs)
		}
	})
	return ts
}

// Description returns the tool's description, or "".
func (t *Tool) Description() string { return stringField(t.raw, "description") }

// A Parameter is one top-level property of a tool's input schema.
type Parameter struct {
	Name string `json:"name"`
	// Type is the JSON type, or types joined with "|" ("string|null"),
	// or "" when the schema does not say.
	Type        string `json:"type,omitempty"`
	Required    bool   `json:"required,omitempty"`
	Description string `json:"description,omitempty"`
	// Enum is the values the schema allows, when it lists them; Default is
	// the value the schema says the server takes when none is given.
	Enum    []json.RawMessage `json:"enum,omitempty"`
	Default json.RawMessage   `json:"default,omitempty"`
}

// Parameters lists the tool's parameters (the top-level properties of its
// input schema), required ones first, each group sorted by name.
func (t *Tool) Parameters() []Parameter {
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	json.Unmarshal(t.field("inputSchema"), &schema)
	defs := schemaDefs(t.field("inputSchema"))
	out := make([]Parameter, 0, len(schema.Properties))
	for name, raw := range schema.Properties {
		p := Parameter{Name: name, Type: strings.Join(dedupe(schemaTypes(raw, 0, defs)), "|"), Description: stringField(raw, "description")}
		var facts struct {
			Enum    []json.RawMessage `json:"enum"`
			Default json.RawMessage   `json:"default"`
		}
		if json.Unmarshal(raw, &facts) == nil {
			p.Enum, p.Default = facts.Enum, facts.Default
		}
		for _, r := range schema.Required {
			p.Required = p.Required || r == name
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Required != out[j].Required {
			return out[i].Required
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func dedupe(s []string) []string {
	var out []string
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// Idempotent reports whether the tool is annotated idempotentHint: true
// (calling it twice with the same arguments does no more than once).
func (t *Tool) Idempotent() bool {
	var a struct {
		IdempotentHint bool `json:"idempotentHint"`
	}
	json.Unmarshal(t.field("annotations"), &a)
	return a.IdempotentHint
}

// TaskSupport returns the tool's execution.taskSupport: "required",
// "optional", or "forbidden" (also when absent).
func (t *Tool) TaskSupport() string { return t.facts().taskSupport }

// MarshalJSON writes the server's tool object with name set to server.tool,
// plus "server" and "tool" (and "stale" when set).
func (t *Tool) MarshalJSON() ([]byte, error) {
	return marshalItem(t.raw, append([]field{{"name", t.Name()}, {"server", t.Server}, {"tool", t.Tool}}, staleField(t.Stale)...)...)
}

// UnmarshalJSON reads what MarshalJSON wrote (the session's wire form).
func (t *Tool) UnmarshalJSON(data []byte) error {
	ours, raw, err := unmarshalItem(data, []string{"name", "server", "tool", "stale"}, map[string]string{"name": "tool"})
	if err != nil || raw == nil { // raw is nil for null
		return err
	}
	if json.Unmarshal(ours["server"], &t.Server) != nil || json.Unmarshal(ours["tool"], &t.Tool) != nil {
		return fmt.Errorf("tool without server or name: %s", truncate(string(data), 200))
	}
	json.Unmarshal(ours["stale"], &t.Stale)
	t.raw = raw
	t.schema = &toolSchema{}
	return nil
}

func newTool(server string, raw json.RawMessage) (*Tool, error) {
	return newItem(server, raw, "name", func(server, name string, raw json.RawMessage) *Tool {
		return &Tool{Server: server, Tool: name, raw: raw, schema: &toolSchema{}}
	})
}

// compiled returns the tool's compiled input schema. A schema the validator
// cannot compile (a draft it does not know, a remote $ref, an ECMA-only
// regex) yields nil: the call then goes out unchecked instead of refused.
func (t *Tool) compiled() (*schemas.Schema, error) {
	ts := t.schema
	ts.once.Do(func() {
		raw := t.field("inputSchema")
		if len(raw) == 0 || string(raw) == "null" {
			return
		}
		ts.s, ts.err = schemas.Compile(raw)
		if ts.s != nil {
			ts.s.Redact = true
		}
	})
	return ts.s, ts.err
}

// propertyTypes returns the JSON types the input schema allows for a
// top-level property: from type, or from the values of enum and const, or
// from the branches of anyOf and oneOf. Nil means nothing is known.
func (t *Tool) propertyTypes(name string) []string { return t.facts().propTypes[name] }

// schemaDefs is the definitions of an input schema, keyed by the $ref
// that names each: "#/$defs/NAME" and "#/definitions/NAME".
func schemaDefs(schema json.RawMessage) map[string]json.RawMessage {
	var d struct {
		Defs        map[string]json.RawMessage `json:"$defs"`
		Definitions map[string]json.RawMessage `json:"definitions"`
	}
	if json.Unmarshal(schema, &d) != nil || len(d.Defs)+len(d.Definitions) == 0 {
		return nil
	}
	defs := make(map[string]json.RawMessage, len(d.Defs)+len(d.Definitions))
	for name, raw := range d.Defs {
		defs["#/$defs/"+name] = raw
	}
	for name, raw := range d.Definitions {
		defs["#/definitions/"+name] = raw
	}
	return defs
}

// schemaTypes is the JSON types a property's schema raw allows, as far as
// its type, enum, const, anyOf and oneOf say; a $ref to the input schema's
// own definitions (#/$defs/NAME, #/definitions/NAME: what Pydantic writes
// for nested models) is followed in defs.
func schemaTypes(raw json.RawMessage, depth int, defs map[string]json.RawMessage) []string {
	if len(raw) == 0 || depth > 4 {
		return nil
	}
	var s struct {
		Type  json.RawMessage   `json:"type"`
		Enum  []json.RawMessage `json:"enum"`
		Const json.RawMessage   `json:"const"`
		AnyOf []json.RawMessage `json:"anyOf"`
		OneOf []json.RawMessage `json:"oneOf"`
		Ref   string            `json:"$ref"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	if len(s.Type) == 0 && s.Ref != "" {
		return schemaTypes(defs[s.Ref], depth+1, defs)
	}
	var one string
	if json.Unmarshal(s.Type, &one) == nil && one != "" {
		return []string{one}
	}
	var many []string
	if json.Unmarshal(s.Type, &many) == nil && len(many) > 0 {
		return many
	}
	values := s.Enum
	if len(s.Const) > 0 {
		values = append(values, s.Const)
	}
	var out []string
	for _, v := range values {
		out = append(out, jsonType(v))
	}
	for _, b := range append(s.AnyOf, s.OneOf...) {
		out = append(out, schemaTypes(b, depth+1, defs)...)
	}
	return out
}

func jsonType(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return ""
	}
	switch v[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func jsonTypeName(v json.RawMessage) string {
	if !json.Valid(v) {
		return "invalid JSON"
	}
	if t := jsonType(v); t == "object" || t == "array" {
		return "an " + t
	}
	return "a " + jsonType(v)
}

func hasType(types []string, want ...string) bool {
	for _, t := range types {
		for _, w := range want {
			if t == w {
				return true
			}
		}
	}
	return false
}

// buildArguments merges the base arguments object with key=value and
// key:=json pairs. A key=value value is typed by the tool's input schema:
// it stays a string when the property allows strings (or nothing is known
// about it), and becomes a number, boolean, null, object or array only when
// the schema asks for one and the text parses as one.
func buildArguments(t *Tool, base json.RawMessage, pairs []string) (json.RawMessage, error) {
	args := map[string]json.RawMessage{}
	// Bytes that are not UTF-8 would go as U+FFFD, in silence: a file
	// name with them names another file.
	if !utf8.Valid(base) {
		return nil, errorf(KindUsage, t.Server, "the arguments object is not UTF-8 text").
			hint("send binary data as base64, if the tool takes it so")
	}
	// null is no arguments, as empty is: it is what a nil map marshals to.
	if b := bytes.TrimSpace(base); len(b) > 0 && string(b) != "null" {
		var twice string
		var ok bool
		if jsonType(base) == "object" {
			args, twice, ok = objectMembers(base)
		}
		if !ok {
			return nil, errorf(KindUsage, t.Server, "arguments must be a JSON object, got %s", jsonTypeName(base)).
				hint(`pass an object, e.g. --args '{"path": "README.md"}'`)
		}
		if twice != "" {
			// The last one won, silently, where a pair given twice is refused.
			return nil, errorf(KindUsage, t.Server, "argument %s is given more than once in the arguments object", twice).
				hint("give each argument once")
		}
	}
	seen := map[string]bool{}
	for _, p := range pairs {
		key, val, isJSON, ok := splitPair(p)
		if !ok {
			return nil, errorf(KindUsage, t.Server, "argument %q is not key=value or key:=json", p).
				hint("write key=value for text typed by the tool's schema, key:=json for raw JSON")
		}
		if err := givenOnce(t.Server, seen, key); err != nil {
			return nil, err.hint("for a list, write %s:='[…]'", key)
		}
		if !utf8.ValidString(val) {
			return nil, errorf(KindUsage, t.Server, "argument %s is not UTF-8 text", key).
				hint("send binary data as base64, e.g. %s=\"$(base64 -w0 FILE)\", if the tool takes it so", key)
		}
		if err := t.knownArgument(key); err != nil {
			return nil, err
		}
		if isJSON {
			if !json.Valid([]byte(val)) {
				// The value is not repeated: arguments often carry tokens.
				return nil, errorf(KindUsage, t.Server, "argument %s: the value after := is not valid JSON", key).
					hint(`key:= takes JSON: quote strings (key:='"text"'), or use key=value`)
			}
			args[key] = json.RawMessage(val)
			continue
		}
		args[key] = typedValue(val, t.propertyTypes(key))
	}
	return json.Marshal(args)
}

// knownArgument refuses a key=value (or key:=json) the tool's schema
// names no property for: most often a typo, which a schema that says
// nothing of other properties (most do not) would let through for the
// server to ignore. --args sends such a key anyway. A schema that does say
// is the validator's to apply.
func (t *Tool) knownArgument(key string) error {
	f := t.facts()
	if !f.silentOnOthers {
		return nil
	}
	if _, ok := f.propTypes[key]; ok {
		return nil
	}
	names := slices.Sorted(maps.Keys(f.propTypes))
	if err := knownArgument("tool", t.Name(), t.Server, names, key); err != nil {
		return err.hint(`to send it anyway, give it in --args '{"%s": …}'`, key)
	}
	return nil
}

// objectMembers reads the JSON object obj into its members, in one pass,
// and names a key it has twice (the first). ok is false when obj is not
// one valid JSON object.
func objectMembers(obj json.RawMessage) (members map[string]json.RawMessage, twice string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, "", false
	}
	members = map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, "", false
		}
		key, _ := t.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil, "", false
		}
		if _, seen := members[key]; seen && twice == "" {
			twice = key
		}
		members[key] = v
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, "", false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, "", false // something after the object
	}
	return members, twice, true
}

// givenOnce refuses a key given twice among the pairs: the last one won,
// silently. (A pair may replace a key of --args: that is what it is for.)
func givenOnce(server string, seen map[string]bool, key string) *Error {
	if seen[key] {
		return errorf(KindUsage, server, "argument %s is given more than once", key).hint("give each argument once")
	}
	seen[key] = true
	return nil
}

func splitPair(p string) (key, val string, isJSON, ok bool) {
	i := strings.IndexByte(p, '=')
	if i <= 0 {
		return "", "", false, false
	}
	key, val = p[:i], p[i+1:]
	if strings.HasSuffix(key, ":") {
		key, isJSON = strings.TrimSuffix(key, ":"), true
	}
	return key, val, isJSON, key != ""
}

func typedValue(val string, types []string) json.RawMessage {
	str, _ := json.Marshal(val)
	if len(types) == 0 || hasType(types, "string") {
		return str
	}
	v := strings.TrimSpace(val)
	switch {
	case hasType(types, "integer", "number") && jsonType(json.RawMessage(v)) == "number" && json.Valid([]byte(v)):
		return json.RawMessage(v)
	case hasType(types, "boolean") && (v == "true" || v == "false"):
		return json.RawMessage(v)
	case hasType(types, "null") && v == "null":
		return json.RawMessage(v)
	case hasType(types, "object", "array") && json.Valid([]byte(v)) && hasType([]string{"object", "array"}, jsonType(json.RawMessage(v))):
		// An object where an array is wanted, or the other way: as
		// written, so that validation says which it got.
		return json.RawMessage(v)
	}
	// Leave it a string; validation will say what the tool expected.
	return str
}

// validate checks arguments against the tool's input schema before the
// server sees them.
func (t *Tool) validate(args json.RawMessage) error {
	schema, _ := t.compiled()
	if schema == nil {
		return nil
	}
	inst, err := schemas.Decode(args)
	if err != nil {
		return errorf(KindUsage, t.Server, "arguments are not valid JSON: %v", err)
	}
	vs := schema.Validate(inst)
	if len(vs) == 0 {
		return nil
	}
	lines := make([]string, len(vs))
	for i, v := range vs {
		field := v.Field()
		if field == "" {
			field = "arguments"
		}
		lines[i] = field + ": " + v.Message
		if len(v.Suggest) > 0 {
			lines[i] += fmt.Sprintf(" (did you mean %s?)", v.Suggest[0])
		}
	}
	e := errorf(KindUsage, t.Server, "invalid arguments for %s: %s", t.Name(), strings.Join(lines, "; "))
	e.Violations = vs
	for _, v := range vs {
		// key=value gives text where the schema wants JSON it could not
		// read from it, or JSON of another kind: say how to write it.
		if v.Keyword != "type" || len(v.Path) != 1 {
			continue
		}
		switch key := v.Path[0]; {
		case slices.Contains(t.propertyTypes(key), "array"):
			e.hint(`%s takes a JSON array: write %s:='%s'`, key, key, t.arrayExample(key))
		case slices.Contains(t.propertyTypes(key), "object"):
			e.hint(`%s takes a JSON object: write %s:='{"…": …}'`, key, key)
		case slices.Contains(t.propertyTypes(key), "integer"):
			e.hint(`%s takes an integer, written as JSON writes one: 7, -2 (no leading zero, no hex)`, key)
		case slices.Contains(t.propertyTypes(key), "number"):
			e.hint(`%s takes a number, written as JSON writes one: 7, -1.5, 2e3 (no leading zero, no hex)`, key)
		case slices.Contains(t.propertyTypes(key), "boolean"):
			e.hint(`%s takes true or false`, key)
		}
	}
	return e.hint("see the tool's input schema: mcpctl tools %s", t.Name())
}

// arrayExample is a JSON array of the kind the array property key takes,
// as far as its items' type says, for a hint.
func (t *Tool) arrayExample(key string) string {
	raw := t.field("inputSchema")
	var schema struct {
		Properties map[string]struct {
			Items json.RawMessage `json:"items"`
		} `json:"properties"`
	}
	json.Unmarshal(raw, &schema)
	switch items := schemaTypes(schema.Properties[key].Items, 0, schemaDefs(raw)); {
	case len(items) == 0 || hasType(items, "string"):
		return `["…"]`
	case hasType(items, "object"):
		return `[{"…": …}]`
	case hasType(items, "integer", "number"):
		return `[1, 2]`
	case hasType(items, "boolean"):
		return `[true, false]`
	case hasType(items, "array"):
		return `[[…]]`
	}
	return `[…]`
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
