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

// The config schema refuses what mcpctl refuses: a duration or size of
// zero where one above zero is wanted (editors check files with it), and
// names the $defs entry, for the loader to say it in words.
func TestConfigSchemaDurationsAndSizes(t *testing.T) {
	s := MustCompile(ConfigJSON)
	for _, tc := range []struct {
		field string // a server's field, as JSON
		def   string // the $defs entry of the violation; "" means valid
	}{
		{`"startupTimeout": 0`, "duration"},
		{`"startupTimeout": -1`, "duration"},
		{`"startupTimeout": 86401`, "duration"},
		{`"startupTimeout": 0.5`, ""},
		{`"startupTimeout": 1e-10`, "duration"}, // under 1ns: 0 to mcpctl
		{`"startupTimeout": 1e-9`, ""},
		{`"startupTimeout": 86400`, ""},
		{`"idleTimeout": "0s"`, "duration"},
		{`"idleTimeout": "0"`, "duration"},
		{`"idleTimeout": "0h0m0.000s"`, "duration"},
		{`"idleTimeout": "0h0m0.001s"`, ""},
		{`"idleTimeout": "1m30s"`, ""},
		{`"idleTimeout": "10s"`, ""},
		{`"requestTimeout": "soon"`, "duration"},
		{`"healthCheck": {"interval": 0}`, "duration"},
		{`"limits": {"cpuTime": "0ms"}`, "duration"},
		{`"sampling": {"command": "x", "timeout": 0}`, "duration"},
		{`"cacheTTL": 0`, ""},
		{`"cacheTTL": "0"`, ""},
		{`"cacheTTL": "0s"`, ""},
		{`"cacheTTL": -1`, "durationOrZero"},
		{`"limits": {"memory": "0"}`, "size"},
		{`"limits": {"memory": "0.0GiB"}`, "size"},
		{`"limits": {"memory": 0}`, "size"},
		{`"limits": {"memory": "0.5G"}`, ""},
		{`"limits": {"memory": "512MiB"}`, ""},
		{`"limits": {"memory": 1}`, ""},
	} {
		doc, err := Decode([]byte(`{"servers": {"a": {"command": "x", ` + tc.field + `}}}`))
		if err != nil {
			t.Fatal(err)
		}
		vs := s.Validate(doc)
		switch {
		case tc.def == "" && len(vs) > 0:
			t.Errorf("%s: %v, want valid", tc.field, vs)
		case tc.def != "" && (len(vs) != 1 || vs[0].Def != tc.def):
			t.Errorf("%s: %+v, want one violation of $defs/%s", tc.field, vs, tc.def)
		}
	}
}
