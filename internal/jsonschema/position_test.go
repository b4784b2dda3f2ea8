package jsonschema

import (
	"strings"
	"testing"
)

// Schemas embedded at every kind of position (a property of a keyword, an
// item of an array keyword, a keyword's own value) are found as resources,
// so a $ref to their $id or anchor resolves to them, not to the network:
// SchemaPath.collect (an mcpctl patch) walks those positions.
func TestEmbeddedResourcesFound(t *testing.T) {
	draft7 := `{
		"$schema": "http://json-schema.org/draft-07/schema#",
		"$id": "http://example.com/root.json",
		"definitions": {"a": {"$id": "#defA", "type": "string"}},
		"items": [{"$id": "item0.json", "type": "boolean"}],
		"allOf": [{}, {"$id": "all1.json", "minimum": 5}],
		"not": {"$id": "not.json", "type": "null"},
		"dependencies": {"d": {"$id": "dep.json", "maxLength": 2}},
		"additionalProperties": {"$id": "more.json", "type": "array"},
		"properties": {
			"p": {"$id": "p.json", "type": "integer"},
			"viaDef": {"$ref": "#defA"},
			"viaP": {"$ref": "p.json"},
			"viaItem": {"$ref": "item0.json"},
			"viaAll": {"$ref": "all1.json"},
			"viaNot": {"$ref": "not.json"},
			"viaDep": {"$ref": "dep.json"},
			"viaMore": {"$ref": "more.json"}
		}
	}`
	draft2020 := `{
		"$id": "http://example.com/root.json",
		"$defs": {"a": {"$anchor": "defA", "type": "string"}},
		"prefixItems": [{"$id": "item0.json", "type": "boolean"}],
		"allOf": [{}, {"$id": "all1.json", "minimum": 5}],
		"not": {"$id": "not.json", "type": "null"},
		"dependentSchemas": {"d": {"$id": "dep.json", "maxLength": 2}},
		"additionalProperties": {"$id": "more.json", "type": "array"},
		"properties": {
			"p": {"$id": "p.json", "type": "integer"},
			"viaDef": {"$ref": "#defA"},
			"viaP": {"$ref": "p.json"},
			"viaItem": {"$ref": "item0.json"},
			"viaAll": {"$ref": "all1.json"},
			"viaNot": {"$ref": "not.json"},
			"viaDep": {"$ref": "dep.json"},
			"viaMore": {"$ref": "more.json"}
		}
	}`
	cases := []struct{ good, bad string }{
		{`{"viaDef": "x"}`, `{"viaDef": 1}`},
		{`{"viaP": 1}`, `{"viaP": "x"}`},
		{`{"viaItem": true}`, `{"viaItem": 1}`},
		{`{"viaAll": 5}`, `{"viaAll": 4}`},
		{`{"viaNot": null}`, `{"viaNot": 1}`},
		{`{"viaDep": "ab"}`, `{"viaDep": "abc"}`},
		{`{"viaMore": []}`, `{"viaMore": {}}`},
	}
	for name, doc := range map[string]string{"draft-07": draft7, "2020-12": draft2020} {
		t.Run(name, func(t *testing.T) {
			v, err := UnmarshalJSON(strings.NewReader(doc))
			if err != nil {
				t.Fatal(err)
			}
			c := NewCompiler()
			// Unchecked against the metaschemas, whose own compiling walks
			// the same positions: this test is about the schema's.
			c.Trusted()
			if err := c.AddResource("http://example.com/root.json", v); err != nil {
				t.Fatal(err)
			}
			sch, err := c.Compile("http://example.com/root.json")
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			for _, tc := range cases {
				good, _ := UnmarshalJSON(strings.NewReader(tc.good))
				bad, _ := UnmarshalJSON(strings.NewReader(tc.bad))
				if err := sch.Validate(good); err != nil {
					t.Errorf("%s: %v", tc.good, err)
				}
				if err := sch.Validate(bad); err == nil {
					t.Errorf("%s: valid, want the embedded schema's error", tc.bad)
				}
			}
		})
	}
}
