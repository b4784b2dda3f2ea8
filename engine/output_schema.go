package engine

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpctl/mcpctl/schemas"
)

// A tool that declares an outputSchema MUST answer with structuredContent
// that conforms to it, and a client SHOULD check (MCP 2025-06-18 on). A
// result that does not is still the tool's answer, its side effects done:
// it is passed on as it came, with what is wrong said under
// _meta["mcpctl/warnings"], which the CLI prints on stderr.

// WarningsMetaKey is the key of the warnings mcpctl adds to a result's
// _meta: a list of sentences.
const WarningsMetaKey = "mcpctl/warnings"

// outputCompiled returns the tool's compiled output schema; nil when it
// has none, or one the validator cannot compile (then nothing is checked).
func (t *Tool) outputCompiled() *schemas.Schema {
	ts := t.schema
	if ts == nil {
		return nil
	}
	ts.outOnce.Do(func() {
		raw := t.field("outputSchema")
		if len(raw) == 0 || string(raw) == "null" {
			return
		}
		ts.out, _ = schemas.Compile(raw)
		if ts.out != nil {
			ts.out.Redact = true // the result may hold what must not be shown
		}
	})
	return ts.out
}

// outputWarnings says how structured, a result's structuredContent (nil
// when it has none), breaks the tool's outputSchema; nil when it does not,
// or the tool declares none.
func (t *Tool) outputWarnings(structured json.RawMessage) []string {
	schema := t.outputCompiled()
	if schema == nil {
		return nil
	}
	if len(structured) == 0 || string(structured) == "null" {
		return []string{fmt.Sprintf("%s declares an outputSchema, but its result has no structuredContent", t.Name())}
	}
	inst, err := schemas.Decode(structured)
	if err != nil {
		return nil
	}
	vs := schema.Validate(inst)
	if len(vs) == 0 {
		return nil
	}
	lines := make([]string, len(vs))
	for i, v := range vs {
		lines[i] = "structuredContent"
		if f := v.Field(); f != "" {
			lines[i] += "." + f
		}
		lines[i] += ": " + v.Message
	}
	return []string{fmt.Sprintf("%s's result does not match its outputSchema: %s", t.Name(), strings.Join(lines, "; "))}
}
