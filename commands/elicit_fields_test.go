package commands

import (
	"encoding/json"
	"strings"
	"testing"
)

// everythingSchema is what server-everything's trigger-elicitation-request
// tool asks for (@modelcontextprotocol/server-everything 2026.8.31).
const everythingSchema = `{
  "message": "Please provide inputs for the following fields:",
  "requestedSchema": {
    "type": "object",
    "properties": {
      "name": {"title": "String", "type": "string", "description": "Your full, legal name"},
      "check": {"title": "Boolean", "type": "boolean", "description": "Agree to the terms and conditions"},
      "firstLine": {"title": "String with default", "type": "string", "description": "Favorite first line of a story", "default": "It was a dark and stormy night."},
      "email": {"title": "String with email format", "type": "string", "format": "email", "description": "Your email address (will be verified, and never shared with anyone else)"},
      "homepage": {"type": "string", "format": "uri", "title": "String with uri format", "description": "Portfolio / personal website"},
      "birthdate": {"title": "String with date format", "type": "string", "format": "date", "description": "Your date of birth"},
      "integer": {"title": "Integer", "type": "integer", "description": "Your favorite integer (do not give us your phone number, pin, or other sensitive info)", "minimum": 1, "maximum": 100, "default": 42},
      "number": {"title": "Number in range 1-1000", "type": "number", "description": "Favorite number (there are no wrong answers)", "minimum": 0, "maximum": 1000, "default": 3.14},
      "untitledSingleSelectEnum": {"type": "string", "title": "Untitled Single Select Enum", "description": "Choose your favorite friend",
        "enum": ["Monica", "Rachel", "Joey", "Chandler", "Ross", "Phoebe"], "default": "Monica"},
      "untitledMultipleSelectEnum": {"type": "array", "title": "Untitled Multiple Select Enum", "description": "Choose your favorite instruments",
        "minItems": 1, "maxItems": 3, "items": {"type": "string", "enum": ["Guitar", "Piano", "Violin", "Drums", "Bass"]}, "default": ["Guitar"]},
      "titledSingleSelectEnum": {"type": "string", "title": "Titled Single Select Enum", "description": "Choose your favorite hero",
        "oneOf": [{"const": "hero-1", "title": "Superman"}, {"const": "hero-2", "title": "Green Lantern"}, {"const": "hero-3", "title": "Wonder Woman"}], "default": "hero-1"},
      "titledMultipleSelectEnum": {"type": "array", "title": "Titled Multiple Select Enum", "description": "Choose your favorite types of fish",
        "minItems": 1, "maxItems": 3, "items": {"anyOf": [{"const": "fish-1", "title": "Tuna"}, {"const": "fish-2", "title": "Salmon"}, {"const": "fish-3", "title": "Trout"}]}, "default": ["fish-1"]},
      "legacyTitledEnum": {"type": "string", "title": "Legacy Titled Single Select Enum", "description": "Choose your favorite type of pet",
        "enum": ["pet-1", "pet-2", "pet-3", "pet-4", "pet-5"], "enumNames": ["Cats", "Dogs", "Birds", "Fish", "Reptiles"], "default": "pet-1"}
    },
    "required": ["name"]
  }
}`

func TestParseSchemaKeepsOrder(t *testing.T) {
	var p struct {
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	}
	if err := json.Unmarshal([]byte(everythingSchema), &p); err != nil {
		t.Fatal(err)
	}
	fields, err := parseSchema(p.RequestedSchema)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fields {
		got = append(got, f.name+":"+f.kind+":"+f.show(f.def))
	}
	want := []string{"name:string:null", "check:boolean:null", "firstLine:string:It was a dark and stormy night.",
		"email:string:null", "homepage:string:null", "birthdate:string:null", "integer:integer:42", "number:number:3.14",
		"untitledSingleSelectEnum:enum:Monica", "untitledMultipleSelectEnum:multi:Guitar",
		"titledSingleSelectEnum:enum:Superman", "titledMultipleSelectEnum:multi:Tuna", "legacyTitledEnum:enum:Cats"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("fields:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !fields[0].required || fields[1].required {
		t.Errorf("only name is required")
	}
}

func TestParseSchemaErrors(t *testing.T) {
	tests := []struct{ schema, want string }{
		{`{"type":"array"}`, `requestedSchema has type "array", not object`},
		{`{"type":"object","properties":[]}`, `requestedSchema.properties: not an object`},
		{`{"properties":{"a":{"type":"object"}}}`, `property "a": type "object" cannot be asked for`},
		{`{"properties":{"a":{"type":"array"}}}`, `property "a": an array without items`},
		{`{"properties":{"a":{"type":"array","items":{"type":"string"}}}}`, `property "a": an array whose items have no enum`},
		{`{"properties":{"a":{"type":"string","enum":[1,2]}}}`, `property "a": json: cannot unmarshal number`},
	}
	for _, tt := range tests {
		if _, err := parseSchema(json.RawMessage(tt.schema)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.schema, err, tt.want)
		}
	}
	for _, empty := range []string{``, `null`, `{}`, `{"type":"object"}`} {
		if fields, err := parseSchema(json.RawMessage(empty)); len(fields) != 0 || err != nil {
			t.Errorf("%q: %v, %v; want no fields", empty, fields, err)
		}
	}
}

func TestFieldParse(t *testing.T) {
	tests := []struct {
		prop, typed string
		want        string // the value as JSON, or the error
	}{
		{`{"type":"string"}`, "héllo", `"héllo"`},
		{`{"type":"string","minLength":3}`, "hé", `2 characters, fewer than 3`},
		{`{"type":"string","maxLength":3}`, "héll", `4 characters, more than 3`},
		{`{"type":"string","pattern":"^[a-z]+$"}`, "abc", `"abc"`},
		{`{"type":"string","pattern":"^[a-z]+$"}`, "ab1", `"ab1" does not match ^[a-z]+$`},
		{`{"type":"string","pattern":"(?=x)"}`, "y", `"y"`}, // not RE2: the server checks it
		{`{"type":"string","format":"email"}`, "ada@example.com", `"ada@example.com"`},
		{`{"type":"string","format":"email"}`, "Ada <ada@example.com>", `"Ada <ada@example.com>" is not an email address`},
		{`{"type":"string","format":"uri"}`, "https://example.com/a?b=c", `"https://example.com/a?b=c"`},
		{`{"type":"string","format":"uri"}`, "example.com", `"example.com" is not a URI such as https://example.com/`},
		{`{"type":"string","format":"date"}`, "2024-02-29", `"2024-02-29"`},
		{`{"type":"string","format":"date"}`, "2023-02-29", `"2023-02-29" is not a date as YYYY-MM-DD`},
		{`{"type":"string","format":"date-time"}`, "2024-02-29T10:00:00+01:00", `"2024-02-29T10:00:00+01:00"`},
		{`{"type":"string","format":"date-time"}`, "2024-02-29 10:00", `"2024-02-29 10:00" is not a date and time as YYYY-MM-DDThh:mm:ssZ`},
		{`{"type":"string","format":"color"}`, "red", `"red"`},
		{`{"type":"integer","minimum":1,"maximum":100}`, "100", `100`},
		{`{"type":"integer"}`, "42.0", `42`},
		{`{"type":"integer"}`, "2.5", `"2.5" is not a whole number`},
		{`{"type":"integer","minimum":1}`, "0", `0 is less than 1`},
		{`{"type":"number","maximum":1000}`, "1e3", `1000`},
		{`{"type":"number"}`, "-0.5", `-0.5`},
		{`{"type":"number"}`, "Inf", `"Inf" is not a number`},
		{`{"type":"number"}`, "NaN", `"NaN" is not a number`},
		{`{"type":"number","minimum":0}`, "-1", `-1 is less than 0`},
		{`{"type":"boolean"}`, "Yes", `true`},
		{`{"type":"boolean"}`, "false", `false`},
		{`{"type":"boolean"}`, "1", `"1" is not y or n`},
		{`{"type":"string","enum":["a","b"]}`, "2", `"b"`},
		{`{"type":"string","enum":["a","b"]}`, "B", `"b"`},
		{`{"type":"string","enum":["a","b"]}`, "3", `"3" is not in the list`},
		{`{"type":"string","enum":["p1","p2"],"enumNames":["Cats","Dogs"]}`, "dogs", `"p2"`},
		{`{"type":"string","oneOf":[{"const":"h1","title":"Superman"},{"const":"h2","title":"Batman"}]}`, "h2", `"h2"`},
		{`{"type":"string","oneOf":[{"const":"h1","title":"Superman"}]}`, "Superman", `"h1"`},
		{`{"type":"array","items":{"enum":["x","y","z"]}}`, "3, x,3", `["z","x"]`},
		{`{"type":"array","items":{"anyOf":[{"const":"f1","title":"Tuna"},{"const":"f2","title":"Salmon"}]}}`, "salmon,1", `["f2","f1"]`},
		{`{"type":"array","minItems":2,"items":{"enum":["x","y"]}}`, "x", `1 chosen, fewer than 2`},
		{`{"type":"array","items":{"enum":["x","y"]}}`, "x,w", `"w" is not in the list`},
	}
	for _, tt := range tests {
		var p propSchema
		if err := json.Unmarshal([]byte(tt.prop), &p); err != nil {
			t.Fatalf("%s: %v", tt.prop, err)
		}
		f, err := newField("f", p)
		if err != nil {
			t.Fatalf("%s: %v", tt.prop, err)
		}
		var got string
		if v, err := f.parse(tt.typed); err != nil {
			got = err.Error()
		} else {
			b, _ := json.Marshal(v)
			got = string(b)
		}
		if got != tt.want {
			t.Errorf("%s, typed %q: got %s, want %s", tt.prop, tt.typed, got, tt.want)
		}
	}
}

// A default that fails the field's own checks is not offered.
func TestFieldBadDefaultDropped(t *testing.T) {
	for _, prop := range []string{
		`{"type":"integer","maximum":10,"default":42}`,
		`{"type":"string","enum":["a"],"default":"b"}`,
		`{"type":"boolean","default":"yes please"}`,
		`{"type":"array","items":{"enum":["1","2"]},"default":[1]}`,
	} {
		var p propSchema
		json.Unmarshal([]byte(prop), &p)
		if f, err := newField("f", p); err != nil || f.def != nil {
			t.Errorf("%s: default %v, err %v", prop, f.def, err)
		}
	}
}

func TestFieldHint(t *testing.T) {
	tests := []struct{ prop, want string }{
		{`{"type":"string"}`, ``},
		{`{"type":"string","format":"email","maxLength":50}`, `an email address, at most 50 characters`},
		{`{"type":"string","minLength":3,"maxLength":5,"pattern":"^a"}`, `3 to 5 characters, matching ^a`},
		{`{"type":"number","minimum":0.5}`, `a number, at least 0.5`},
		{`{"type":"integer"}`, `a whole number`},
		{`{"type":"array","maxItems":2,"items":{"enum":["x"]}}`, `at most 2 of these, by numbers or values separated by commas:`},
		{`{"type":"array","items":{"enum":["x"]}}`, `any of these, by numbers or values separated by commas:`},
	}
	for _, tt := range tests {
		var p propSchema
		json.Unmarshal([]byte(tt.prop), &p)
		f, _ := newField("f", p)
		if got := f.hint(); got != tt.want {
			t.Errorf("%s: hint %q, want %q", tt.prop, got, tt.want)
		}
	}
}

func TestClean(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text, é and 😀", "plain text, é and 😀"},
		{"red \x1b[31mtext\x1b[0m", `red \x1b[31mtext\x1b[0m`},
		{"evil.com\u202egro.elgoog", `evil.com\u202egro.elgoog`},
		{"bell\a and \u009b", `bell\x07 and \u009b`},
		{"two\nlines\tand a tab", "two\n    lines\tand a tab"},
		{"bad \xff byte", `bad \xff byte`},
	}
	for _, tt := range tests {
		if got := clean(tt.in); got != tt.want {
			t.Errorf("clean(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
