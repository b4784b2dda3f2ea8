package schemas

import "testing"

// The schemas built into mcpctl are compiled without their metaschema
// (MustCompile); this is where they are checked against it.
func TestEmbeddedSchemasValid(t *testing.T) {
	if _, err := Compile(ConfigJSON); err != nil {
		t.Fatalf("the config schema is not a valid JSON Schema: %v", err)
	}
	if _, err := Compile([]byte(`{"type": "strin"}`)); err == nil {
		t.Fatal("Compile took a schema its metaschema refuses")
	}
}

// BenchmarkCompileConfig is what every command that reads a config without
// a session pays first (docs/performance.md).
func BenchmarkCompileConfig(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		MustCompile(ConfigJSON)
	}
}
