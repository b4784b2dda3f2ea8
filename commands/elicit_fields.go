package commands

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// A field is one property of a form-mode elicitation's requestedSchema
// (the spec's restricted schema: flat, primitive properties): what to show
// for it, and how to read and check what the user types.
type field struct {
	name, title, description string
	kind                     string // string, number, integer, boolean, enum or multi
	required                 bool
	// def is the default as a value to send, nil when there is none (or
	// when it does not pass the field's own checks).
	def any

	minLength, maxLength *int
	pattern              *regexp.Regexp
	format               string
	minimum, maximum     *float64
	options              []option
	minItems, maxItems   *int
}

// An option is one choice of an enum: the value sent and the title shown.
type option struct{ value, title string }

// A propSchema is a property of requestedSchema as the spec allows it.
type propSchema struct {
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Default     json.RawMessage `json:"default"`
	MinLength   *int            `json:"minLength"`
	MaxLength   *int            `json:"maxLength"`
	Pattern     string          `json:"pattern"`
	Format      string          `json:"format"`
	Minimum     *float64        `json:"minimum"`
	Maximum     *float64        `json:"maximum"`
	Enum        []string        `json:"enum"`
	EnumNames   []string        `json:"enumNames"`
	OneOf       []constTitle    `json:"oneOf"`
	AnyOf       []constTitle    `json:"anyOf"`
	Items       *propSchema     `json:"items"`
	MinItems    *int            `json:"minItems"`
	MaxItems    *int            `json:"maxItems"`
}

type constTitle struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

// parseSchema reads the fields of requestedSchema in the order the server
// wrote them: a Go map would shuffle them, and a form reads best in the
// order its author chose. A missing schema is a form without fields.
func parseSchema(raw json.RawMessage) ([]*field, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var s struct {
		Type       string          `json:"type"`
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("requestedSchema: %w", err)
	}
	if s.Type != "" && s.Type != "object" {
		return nil, fmt.Errorf("requestedSchema has type %q, not object", s.Type)
	}
	names, props, err := orderedObject(s.Properties)
	if err != nil {
		return nil, fmt.Errorf("requestedSchema.properties: %w", err)
	}
	var fields []*field
	for i, name := range names {
		var p propSchema
		if err := json.Unmarshal(props[i], &p); err != nil {
			return nil, fmt.Errorf("property %q: %w", name, err)
		}
		f, err := newField(name, p)
		if err != nil {
			return nil, fmt.Errorf("property %q: %w", name, err)
		}
		for _, r := range s.Required {
			f.required = f.required || r == name
		}
		fields = append(fields, f)
	}
	return fields, nil
}

// orderedObject returns the keys of a JSON object in order, and their values.
func orderedObject(raw json.RawMessage) ([]string, []json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, errors.New("not an object")
	}
	var names []string
	var values []json.RawMessage
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		names = append(names, t.(string))
		values = append(values, v)
	}
	return names, values, nil
}

func newField(name string, p propSchema) (*field, error) {
	f := &field{name: name, title: p.Title, description: p.Description, kind: p.Type,
		minLength: p.MinLength, maxLength: p.MaxLength, format: p.Format,
		minimum: p.Minimum, maximum: p.Maximum, minItems: p.MinItems, maxItems: p.MaxItems}
	switch {
	case p.Type == "array":
		if p.Items == nil {
			return nil, errors.New("an array without items: only multi-select enums can be arrays")
		}
		f.kind, f.options = "multi", options(*p.Items)
	case p.Type == "string" || p.Type == "":
		f.kind, f.options = "string", options(p)
		if len(f.options) > 0 {
			f.kind = "enum"
		}
	case p.Type == "number" || p.Type == "integer" || p.Type == "boolean":
	default:
		return nil, fmt.Errorf("type %q cannot be asked for on a terminal (string, number, integer, boolean or array of enum)", p.Type)
	}
	if f.kind == "multi" && len(f.options) == 0 {
		return nil, errors.New("an array whose items have no enum, anyOf or oneOf")
	}
	if p.Pattern != "" {
		// A pattern Go cannot compile (lookahead, say) is left for the
		// server to check.
		f.pattern, _ = regexp.Compile(p.Pattern)
	}
	if text, ok := defaultText(p.Default); ok && string(p.Default) != "null" {
		if v, err := f.parse(text); err == nil {
			f.def = v
		}
	}
	return f, nil
}

// options are an enum's choices: enum (with the legacy enumNames as titles),
// or oneOf/anyOf of {const, title}.
func options(p propSchema) []option {
	var opts []option
	for i, v := range p.Enum {
		o := option{value: v, title: v}
		if i < len(p.EnumNames) && p.EnumNames[i] != "" {
			o.title = p.EnumNames[i]
		}
		opts = append(opts, o)
	}
	for _, c := range append(p.OneOf, p.AnyOf...) {
		o := option{value: c.Const, title: c.Title}
		if o.title == "" {
			o.title = o.value
		}
		opts = append(opts, o)
	}
	return opts
}

// defaultText is the schema's default as the user would type it, so that
// it passes the same checks as what they type; ok is false when it could
// not be typed (an array of numbers, say).
func defaultText(raw json.RawMessage) (text string, ok bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	switch v := v.(type) {
	case string:
		return v, true
	case []any:
		vals := make([]string, len(v))
		for i, x := range v {
			if vals[i], ok = x.(string); !ok {
				return "", false
			}
		}
		return strings.Join(vals, ","), true
	}
	return string(raw), true
}

// show is how a value of the field reads on the terminal.
func (f *field) show(v any) string {
	switch v := v.(type) {
	case bool:
		if v {
			return "y"
		}
		return "n"
	case string:
		for _, o := range f.options {
			if o.value == v {
				return o.title
			}
		}
		return v
	case []string:
		shown := make([]string, len(v))
		for i, s := range v {
			shown[i] = f.show(s)
		}
		return strings.Join(shown, ", ")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// hint says what the field accepts, for the line under its title; ""
// for text of any kind.
func (f *field) hint() string {
	switch f.kind {
	case "boolean":
		return "y or n"
	case "number", "integer":
		what := map[string]string{"number": "a number", "integer": "a whole number"}[f.kind]
		if r := rangeText(f.minimum, f.maximum); r != "" {
			what += ", " + r
		}
		return what
	case "enum":
		return "one of these, by number or value:"
	case "multi":
		r := rangeText(intf(f.minItems), intf(f.maxItems))
		if r == "" {
			r = "any"
		}
		return r + " of these, by numbers or values separated by commas:"
	}
	// Plain text needs no hint; text with rules says them.
	var rules []string
	if what := formats[f.format]; what != "" {
		rules = append(rules, what)
	}
	if r := rangeText(intf(f.minLength), intf(f.maxLength)); r != "" {
		rules = append(rules, r+" characters")
	}
	if f.pattern != nil {
		rules = append(rules, "matching "+f.pattern.String())
	}
	return strings.Join(rules, ", ")
}

// formats are the string formats the spec names, as the user is told them.
var formats = map[string]string{
	"email":     "an email address",
	"uri":       "a URI such as https://example.com/",
	"date":      "a date as YYYY-MM-DD",
	"date-time": "a date and time as YYYY-MM-DDThh:mm:ssZ",
}

// rangeText says "1 to 100", "at least 1", "at most 100" or "".
func rangeText(lo, hi *float64) string {
	n := func(x *float64) string { return strconv.FormatFloat(*x, 'g', -1, 64) }
	switch {
	case lo != nil && hi != nil:
		return n(lo) + " to " + n(hi)
	case lo != nil:
		return "at least " + n(lo)
	case hi != nil:
		return "at most " + n(hi)
	}
	return ""
}

func intf(i *int) *float64 {
	if i == nil {
		return nil
	}
	f := float64(*i)
	return &f
}

// parse reads what the user typed (never empty: an empty answer means the
// current value, or none) into the value sent, or says why it is not one.
func (f *field) parse(s string) (any, error) {
	switch f.kind {
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not y or n", s)
	case "number":
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, fmt.Errorf("%q is not a number", s)
		}
		return x, f.inRange(x, s)
	case "integer":
		return f.parseInteger(s)
	case "enum":
		return f.choose(s)
	case "multi":
		return f.chooseMany(s)
	}
	return s, f.checkString(s)
}

func (f *field) parseInteger(s string) (any, error) {
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		// 42.0 is a whole number too; 2.5 is not.
		x, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return nil, fmt.Errorf("%q is not a whole number", s)
		}
		i = int64(x)
	}
	return i, f.inRange(float64(i), s)
}

func (f *field) inRange(x float64, s string) error {
	if f.minimum != nil && x < *f.minimum {
		return fmt.Errorf("%s is less than %g", s, *f.minimum)
	}
	if f.maximum != nil && x > *f.maximum {
		return fmt.Errorf("%s is more than %g", s, *f.maximum)
	}
	return nil
}

func (f *field) checkString(s string) error {
	n := utf8.RuneCountInString(s)
	if f.minLength != nil && n < *f.minLength {
		return fmt.Errorf("%d characters, fewer than %d", n, *f.minLength)
	}
	if f.maxLength != nil && n > *f.maxLength {
		return fmt.Errorf("%d characters, more than %d", n, *f.maxLength)
	}
	if f.pattern != nil && !f.pattern.MatchString(s) {
		return fmt.Errorf("%q does not match %s", s, f.pattern)
	}
	return checkFormat(f.format, s)
}

// checkFormat checks the string formats the spec names; others pass.
func checkFormat(format, s string) error {
	var ok bool
	switch format {
	case "email":
		a, err := mail.ParseAddress(s)
		ok = err == nil && a.Name == "" && a.Address == s
	case "uri":
		u, err := url.Parse(s)
		ok = err == nil && u.Scheme != "" && !strings.ContainsAny(s, " \t")
	case "date":
		_, err := time.Parse(time.DateOnly, s)
		ok = err == nil
	case "date-time":
		_, err := time.Parse(time.RFC3339, s)
		ok = err == nil
	default:
		return nil
	}
	if !ok {
		return fmt.Errorf("%q is not %s", s, formats[format])
	}
	return nil
}

// choose finds the option typed: its number in the list, its value, or its
// title; the exact spelling first, then ignoring case.
func (f *field) choose(s string) (string, error) {
	if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= len(f.options) {
		return f.options[n-1].value, nil
	}
	for _, same := range []func(a, b string) bool{func(a, b string) bool { return a == b }, strings.EqualFold} {
		for _, o := range f.options {
			if same(o.value, s) || same(o.title, s) {
				return o.value, nil
			}
		}
	}
	return "", fmt.Errorf("%q is not in the list", s)
}

func (f *field) chooseMany(s string) ([]string, error) {
	var vals []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		v, err := f.choose(part)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(vals, v) {
			vals = append(vals, v)
		}
	}
	if f.minItems != nil && len(vals) < *f.minItems {
		return nil, fmt.Errorf("%d chosen, fewer than %d", len(vals), *f.minItems)
	}
	if f.maxItems != nil && len(vals) > *f.maxItems {
		return nil, fmt.Errorf("%d chosen, more than %d", len(vals), *f.maxItems)
	}
	return vals, nil
}
