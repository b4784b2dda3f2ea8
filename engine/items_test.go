package engine

import (
	"encoding/json"
	"testing"
)

// A listed item goes to the caller with the server's keys and values as
// the server wrote them: sorted, its "<" and "&" unescaped, duplicates
// resolved as a decoder would, and back again unchanged.
func TestItemJSONKeepsServerBytes(t *testing.T) {
	raw := json.RawMessage(`{"name":"t<1>", "z":1, "description":"a <b> & c", "a":[1, 2], "k\u0065y":true, "x":1, "x":"two"}`)
	tool, err := newTool("srv", raw)
	if err != nil {
		t.Fatal(err)
	}
	if tool.Description() != "a <b> & c" {
		t.Errorf("Description() = %q", tool.Description())
	}
	out, err := marshalVerbatim(tool)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"name":"srv.t<1>","server":"srv","tool":"t<1>","a":[1,2],"description":"a <b> & c","k\u0065y":true,"x":"two","z":1}`
	if string(out) != want {
		t.Errorf("tool JSON\n got %s\nwant %s", out, want)
	}

	var back Tool
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	if back.Server != "srv" || back.Tool != "t<1>" || back.Stale {
		t.Errorf("decoded %+v", back)
	}
	const wantRaw = `{"a":[1,2],"description":"a <b> & c","k\u0065y":true,"name":"t<1>","x":"two","z":1}`
	if string(back.Raw()) != wantRaw {
		t.Errorf("Raw()\n got %s\nwant %s", back.Raw(), wantRaw)
	}
	again, err := marshalVerbatim(&back)
	if err != nil || string(again) != want {
		t.Errorf("again: %s %v", again, err)
	}

	back.Stale = true
	stale, _ := marshalVerbatim(&back)
	var s Tool
	if err := json.Unmarshal(stale, &s); err != nil || !s.Stale || string(s.Raw()) != wantRaw {
		t.Errorf("stale round trip: %s -> %+v %v", stale, s, err)
	}
}

func TestItemJSONRefusesWhatIsNotAnObject(t *testing.T) {
	for _, in := range []string{`[1]`, `"x"`, `{"a":`, ``, `{"a":1}x`, `{"a":1,}`, `{1:2}`} {
		var tool Tool
		if err := tool.UnmarshalJSON([]byte(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
	// Inside the engine items are valid JSON; what is not an object is
	// still an error, not a panic.
	for _, in := range []string{`[1]`, `"x"`, ``, ` `, `{1:2}`} {
		if _, err := marshalItem(json.RawMessage(in)); err == nil {
			t.Errorf("marshalItem(%q): no error", in)
		}
	}
}

// null reads as nothing, as encoding/json reads it into its own types: a
// list with a null in it still reads.
func TestItemJSONReadsNullAsNothing(t *testing.T) {
	var prompts []Prompt
	if err := json.Unmarshal([]byte(`[null,{"name":"s.p","server":"s","prompt":"p"}]`), &prompts); err != nil {
		t.Fatal(err)
	}
	if len(prompts) != 2 || prompts[0].Server != "" || prompts[1].Prompt != "p" {
		t.Errorf("got %+v", prompts)
	}
	var res []Resource
	var tmpl []Template
	var tools []Tool
	if err := json.Unmarshal([]byte(`[null]`), &res); err != nil {
		t.Error(err)
	}
	if err := json.Unmarshal([]byte(`[null]`), &tools); err != nil {
		t.Error(err)
	}
	if err := json.Unmarshal([]byte(`[null]`), &tmpl); err != nil {
		t.Error(err)
	}
}

func BenchmarkToolJSON(b *testing.B) {
	raw := json.RawMessage(`{"name":"get-weather","title":"Weather","description":"Returns the weather for a city, now or as a forecast for the next days.","inputSchema":{"type":"object","properties":{"city":{"type":"string","description":"The city"},"days":{"type":"integer","minimum":0,"maximum":14},"units":{"type":"string","enum":["metric","imperial"]}},"required":["city"],"$schema":"http://json-schema.org/draft-07/schema#"},"annotations":{"readOnlyHint":true}}`)
	tool, err := newTool("weather", raw)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		out, err := json.Marshal(tool)
		if err != nil {
			b.Fatal(err)
		}
		var back Tool
		if err := json.Unmarshal(out, &back); err != nil {
			b.Fatal(err)
		}
		_ = back.Description()
	}
}

// members never panics, and on a valid JSON object it finds what a decoder
// finds: the same keys, the last value of each.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":[1,{"c":"}"}],"a":"x"}`, ` { "k\u0065y" : null } `, `{"a":{"b":{"c":[]}}}`, `[1]`, `{"a":`, `"\\"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := members(b)
		var want map[string]json.RawMessage
		if !json.Valid(b) || json.Unmarshal(b, &want) != nil || want == nil {
			return
		}
		if err != nil {
			t.Fatalf("members(%q): %v", b, err)
		}
		got := map[string]json.RawMessage{}
		for _, m := range ms {
			got[m.key] = m.value
		}
		if len(got) != len(want) {
			t.Fatalf("members(%q) = %d keys, want %d", b, len(got), len(want))
		}
		for k, v := range want {
			if string(got[k]) != string(v) {
				t.Fatalf("members(%q)[%q] = %s, want %s", b, k, got[k], v)
			}
		}
	})
}
