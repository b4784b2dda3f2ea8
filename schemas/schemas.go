// Package schemas holds mcpctl's JSON Schemas, embedded in the binary, and
// the one validator every part of mcpctl uses: the config loader checks
// mcp.json against [Config], the engine checks tool arguments against each
// tool's inputSchema.
//
// Validation speaks in [Violation]s: a path into the instance and a sentence
// such as "expected string, got number", so callers can name the file, line
// and field, or the tool argument, without knowing the validator's types.
package schemas

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/mcpctl/mcpctl/internal/jsonschema"
	"github.com/mcpctl/mcpctl/internal/jsonschema/kind"
)

// ConfigJSON is the JSON Schema (2020-12) of mcp.json as mcpctl reads it.
//
//go:embed mcp.schema.json
var ConfigJSON []byte

// A Schema is a compiled JSON Schema. Its zero value is not usable; build one
// with [Compile].
type Schema struct {
	// Redact leaves the instance's values out of violation messages ("does
	// not match pattern P" instead of "'sk-123' does not match ..."): tool
	// arguments carry tokens, and messages reach logs.
	Redact bool

	root *jsonschema.Schema
	// byLocation indexes every subschema, so a violation can find the
	// properties its schema allows (for did-you-mean hints).
	byLocation map[string]*jsonschema.Schema
}

// A Violation is one way an instance fails its schema.
type Violation struct {
	// Path is the location of the offending value in the instance, as
	// object keys and array indexes.
	Path []string `json:"path"`
	// Keyword is the schema rule that failed: "type", "required",
	// "additionalProperties", "enum", "minimum", ...
	Keyword string `json:"keyword"`
	// Message says what was expected, e.g. "expected string, got number".
	Message string `json:"message"`
	// Unknown is set for a property the schema does not allow; Path ends
	// with that property's name.
	Unknown bool `json:"-"`
	// Suggest holds the allowed property names closest to an unknown one.
	Suggest []string `json:"suggest,omitempty"`
	// Want and Got are a "type" violation's types: those allowed, and the
	// value's.
	Want []string `json:"-"`
	Got  string   `json:"-"`
	// Def names the entry of the schema's $defs whose pattern or bound
	// failed ("duration"), "" when the rule is in none: a caller can say
	// what such a value must be in words.
	Def string `json:"-"`
}

// Field renders the path the way people write it: servers.fs.args[1].
// The empty path (the instance itself) renders as "".
func (v Violation) Field() string { return FieldPath(v.Path) }

// FieldPath renders a path as dotted keys with [n] for array indexes.
func FieldPath(path []string) string {
	var b strings.Builder
	for _, p := range path {
		if isIndex(p) {
			fmt.Fprintf(&b, "[%s]", p)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// noNetwork refuses every remote $ref: a tool schema must never make mcpctl
// fetch a URL.
type noNetwork struct{}

func (noNetwork) Load(url string) (any, error) {
	return nil, fmt.Errorf("refusing to load %s: remote $ref is not supported", url)
}

// Compile compiles a JSON Schema document. A document without "$schema" is
// read as draft 2020-12; draft-04, -06, -07 and 2019-09 are honoured when
// declared.
func Compile(doc []byte) (*Schema, error) { return compile(doc, false) }

func compile(doc []byte, trusted bool) (*Schema, error) {
	v, err := Decode(doc)
	if err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	const loc = "mcpctl:///schema.json"
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noNetwork{})
	if trusted {
		c.Trusted()
	}
	if err := c.AddResource(loc, v); err != nil {
		return nil, err
	}
	root, err := c.Compile(loc)
	if err != nil {
		return nil, err
	}
	s := &Schema{root: root, byLocation: map[string]*jsonschema.Schema{}}
	s.index(root)
	return s, nil
}

// MustCompile is [Compile] for the schemas embedded in mcpctl itself. They
// are not checked against their metaschema, which every run would pay for
// (TestEmbeddedSchemasValid checks them instead).
func MustCompile(doc []byte) *Schema {
	s, err := compile(doc, true)
	if err != nil {
		panic(err)
	}
	return s
}

func (s *Schema) index(sch *jsonschema.Schema) {
	if sch == nil {
		return
	}
	if _, seen := s.byLocation[sch.Location]; seen {
		return
	}
	s.byLocation[sch.Location] = sch
	s.index(sch.Ref)
	s.index(sch.Not)
	s.index(sch.If)
	s.index(sch.Then)
	s.index(sch.Else)
	s.index(sch.PropertyNames)
	s.index(sch.UnevaluatedProperties)
	s.index(sch.Contains)
	for _, l := range [][]*jsonschema.Schema{sch.AllOf, sch.AnyOf, sch.OneOf, sch.PrefixItems} {
		for _, sub := range l {
			s.index(sub)
		}
	}
	for _, sub := range sch.Properties {
		s.index(sub)
	}
	for _, sub := range sch.PatternProperties {
		s.index(sub)
	}
	if sub, ok := sch.AdditionalProperties.(*jsonschema.Schema); ok {
		s.index(sub)
	}
	switch items := sch.Items.(type) {
	case *jsonschema.Schema:
		s.index(items)
	case []*jsonschema.Schema:
		for _, sub := range items {
			s.index(sub)
		}
	}
	s.index(sch.Items2020)
}

// Decode parses JSON for validation, keeping numbers exact.
func Decode(data []byte) (any, error) {
	return jsonschema.UnmarshalJSON(bytes.NewReader(data))
}

// Validate checks an instance (as returned by [Decode]) and returns every
// violation, sorted by path. It returns nil when the instance is valid.
func (s *Schema) Validate(instance any) []Violation {
	err := s.root.Validate(instance)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Violation{{Message: err.Error()}}
	}
	var out []Violation
	s.collect(ve, &out)
	sort.SliceStable(out, func(i, j int) bool {
		return strings.Join(out[i].Path, "\x00") < strings.Join(out[j].Path, "\x00")
	})
	return dedupe(out)
}

var printer = &kind.Printer{}

// collect flattens the validator's error tree into leaf violations. anyOf and
// oneOf failures whose branches all disagree on type become one "expected A
// or B" violation instead of one line per branch.
func (s *Schema) collect(e *jsonschema.ValidationError, out *[]Violation) {
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		for _, c := range e.Causes {
			s.collect(c, out)
		}
		return
	case *kind.AnyOf, *kind.OneOf:
		if v, ok := mergeTypes(e); ok {
			*out = append(*out, v)
			return
		}
		if len(e.Causes) > 0 {
			// The branch of the value's own type says what is wrong with
			// it (-5 for a duration: "must be >= 0", not "expected
			// string").
			best := e.Causes[0]
			for _, c := range e.Causes {
				if !typeOnly(c) {
					best = c
					break
				}
			}
			s.collect(best, out)
			return
		}
	case *kind.Type:
		*out = append(*out, Violation{Path: e.InstanceLocation, Keyword: "type", Message: typeMessage(k.Want, k.Got), Want: k.Want, Got: k.Got})
		return
	case *kind.Required:
		for _, m := range k.Missing {
			*out = append(*out, Violation{Path: append(clone(e.InstanceLocation), m), Keyword: "required", Message: "required, but missing"})
		}
		return
	case *kind.AdditionalProperties:
		allowed := s.allowedProperties(e.SchemaURL)
		for _, p := range k.Properties {
			*out = append(*out, Violation{
				Path: append(clone(e.InstanceLocation), p), Keyword: "additionalProperties",
				Message: "unknown field", Unknown: true, Suggest: Closest(p, allowed),
			})
		}
		return
	case *kind.PropertyNames:
		msg := "invalid name"
		if len(e.Causes) > 0 {
			msg = "invalid name: " + e.Causes[0].ErrorKind.LocalizedString(printer)
		}
		*out = append(*out, Violation{Path: append(clone(e.InstanceLocation), k.Property), Keyword: "propertyNames", Message: msg})
		return
	case *kind.Enum:
		var want []string
		for _, w := range k.Want {
			want = append(want, JSONText(w))
		}
		msg := "expected one of " + strings.Join(want, ", ")
		if len(want) == 1 {
			msg = "expected " + want[0]
		}
		*out = append(*out, Violation{Path: e.InstanceLocation, Keyword: "enum", Message: msg + s.got(k.Got)})
		return
	case *kind.Const:
		*out = append(*out, Violation{Path: e.InstanceLocation, Keyword: "const", Message: "expected " + JSONText(k.Want) + s.got(k.Got)})
		return
	case *kind.Pattern:
		*out = append(*out, Violation{Path: e.InstanceLocation, Keyword: "pattern", Message: "does not match pattern " + k.Want + s.got(k.Got), Def: defOf(e.SchemaURL)})
		return
	case *kind.Format:
		*out = append(*out, Violation{Path: e.InstanceLocation, Keyword: "format", Message: "is not a valid " + k.Want + s.got(k.Got)})
		return
	case *kind.Minimum:
		*out = append(*out, s.bound(e, "minimum", "must be >= ", k.Want, k.Got))
		return
	case *kind.Maximum:
		*out = append(*out, s.bound(e, "maximum", "must be <= ", k.Want, k.Got))
		return
	case *kind.ExclusiveMinimum:
		*out = append(*out, s.bound(e, "exclusiveMinimum", "must be > ", k.Want, k.Got))
		return
	case *kind.ExclusiveMaximum:
		*out = append(*out, s.bound(e, "exclusiveMaximum", "must be < ", k.Want, k.Got))
		return
	case *kind.MultipleOf:
		*out = append(*out, s.bound(e, "multipleOf", "must be a multiple of ", k.Want, k.Got))
		return
	case *kind.MinLength:
		*out = append(*out, Violation{Path: e.InstanceLocation, Keyword: "minLength", Message: fmt.Sprintf("must be at least %d characters long", k.Want)})
		return
	case *kind.MaxLength:
		*out = append(*out, Violation{Path: e.InstanceLocation, Keyword: "maxLength", Message: fmt.Sprintf("must be at most %d characters long", k.Want)})
		return
	}
	kw := ""
	if p := e.ErrorKind.KeywordPath(); len(p) > 0 {
		kw = p[0]
	}
	*out = append(*out, Violation{Path: e.InstanceLocation, Keyword: kw, Message: e.ErrorKind.LocalizedString(printer)})
}

// typeOnly says whether e is a mismatch of type alone: the instance is not
// of the type its (sub)schema wants.
func typeOnly(e *jsonschema.ValidationError) bool {
	switch e.ErrorKind.(type) {
	case *kind.Type:
		return true
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		for _, c := range e.Causes {
			if !typeOnly(c) {
				return false
			}
		}
		return len(e.Causes) > 0
	}
	return false
}

// got says what the instance held, unless values are redacted.
func (s *Schema) got(v any) string {
	if s.Redact {
		return ""
	}
	return ", got " + JSONText(v)
}

func (s *Schema) bound(e *jsonschema.ValidationError, keyword, rule string, want, got *big.Rat) Violation {
	msg := rule + ratText(want)
	if !s.Redact {
		msg += ", got " + ratText(got)
	}
	return Violation{Path: e.InstanceLocation, Keyword: keyword, Message: msg, Def: defOf(e.SchemaURL)}
}

// defOf is the name of the $defs entry a schema location is in, e.g.
// "duration" of mcpctl:///schema.json#/$defs/duration/anyOf/1.
func defOf(location string) string {
	_, rest, ok := strings.Cut(location, "#/$defs/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}

func ratText(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// JSONText is v as JSON, as a message quotes a value.
func JSONText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func mergeTypes(e *jsonschema.ValidationError) (Violation, bool) {
	var want []string
	got := ""
	for _, c := range e.Causes {
		t, ok := c.ErrorKind.(*kind.Type)
		if !ok {
			return Violation{}, false
		}
		want = append(want, t.Want...)
		got = t.Got
	}
	if got == "" {
		return Violation{}, false
	}
	return Violation{Path: e.InstanceLocation, Keyword: "type", Message: typeMessage(want, got), Want: want, Got: got}, true
}

func typeMessage(want []string, got string) string {
	return fmt.Sprintf("expected %s, got %s", strings.Join(want, " or "), got)
}

func (s *Schema) allowedProperties(schemaURL string) []string {
	sch := s.byLocation[schemaURL]
	if sch == nil {
		return nil
	}
	names := make([]string, 0, len(sch.Properties))
	for n := range sch.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func clone(p []string) []string { return append([]string(nil), p...) }

func dedupe(vs []Violation) []Violation {
	seen := map[string]bool{}
	out := vs[:0]
	for _, v := range vs {
		key := strings.Join(v.Path, "\x00") + "\x01" + v.Message
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, v)
	}
	return out
}
