package jsonschema

import (
	"strings"
	"sync"
	"testing"
)

// A draft's metaschema is compiled the first time a schema of that draft is
// checked, and only that draft's: every schema is still checked against its
// own draft's metaschema, from any number of goroutines at once.
func TestMetaschemasLoadPerDraft(t *testing.T) {
	compile := func(doc string) error {
		v, err := UnmarshalJSON(strings.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		c := NewCompiler()
		if err := c.AddResource("mem:///s.json", v); err != nil {
			return err
		}
		_, err = c.Compile("mem:///s.json")
		return err
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := compile(`{"type": "object", "properties": {"n": {"type": "integer"}}}`); err != nil {
				t.Errorf("valid 2020-12 schema: %v", err)
			}
			if err := compile(`{"type": "strin"}`); err == nil {
				t.Error("a 2020-12 schema with type \"strin\" compiled")
			}
		})
	}
	wg.Wait()
	if Draft2020.sch == nil {
		t.Fatal("the 2020-12 metaschema was not loaded")
	}
	if Draft7.sch != nil || Draft4.sch != nil {
		t.Fatal("compiling 2020-12 schemas loaded other drafts' metaschemas")
	}
	if err := compile(`{"$schema": "http://json-schema.org/draft-07/schema#", "minimum": "zero"}`); err == nil {
		t.Error("a draft-07 schema with a string minimum compiled")
	}
	if Draft7.sch == nil {
		t.Fatal("the draft-07 metaschema was not loaded")
	}
}
