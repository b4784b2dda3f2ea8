package commands

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
)

// decodeServed reads a server's result into the SDK's type for serve to
// pass on. MCP asks for standard, padded base64 in blobs and in image and
// audio data, and the SDK's types refuse any other; some servers send it
// unpadded or URL-safe, which mcpctl's other commands take (decodeBase64).
// Such data is made standard before a second try, so that the result is
// served rather than refused whole.
func decodeServed(raw json.RawMessage, out any) error {
	err := json.Unmarshal(raw, out)
	if err == nil {
		return nil
	}
	if fixed, ok := standardBase64(raw); ok && json.Unmarshal(fixed, out) == nil {
		return nil
	}
	return err
}

// standardBase64 returns raw with each blob, and each image or audio
// block's data, that is base64 but not standard padded base64 written
// again as standard; ok is false when there was none.
func standardBase64(raw json.RawMessage) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers go back as they came
	var v any
	if dec.Decode(&v) != nil {
		return raw, false
	}
	if !fixBase64(v) {
		return raw, false
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw, false
	}
	return out, true
}

func fixBase64(v any) bool {
	fixed := false
	switch v := v.(type) {
	case map[string]any:
		fields := []string{"blob"}
		if t, _ := v["type"].(string); t == "image" || t == "audio" {
			fields = append(fields, "data")
		}
		for _, f := range fields {
			s, ok := v[f].(string)
			if !ok {
				continue
			}
			if _, err := base64.StdEncoding.DecodeString(s); err == nil {
				continue
			}
			if b, err := decodeBase64(s); err == nil {
				v[f] = base64.StdEncoding.EncodeToString(b)
				fixed = true
			}
		}
		for _, sub := range v {
			fixed = fixBase64(sub) || fixed
		}
	case []any:
		for _, sub := range v {
			fixed = fixBase64(sub) || fixed
		}
	}
	return fixed
}
