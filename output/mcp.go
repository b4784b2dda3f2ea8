package output

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// ToolResult renders an MCP tools/call result for people: text content as
// text, embedded text resources as their text, everything else as a one-line
// summary, and structuredContent as indented JSON when nothing else printed.
func ToolResult(w io.Writer, raw json.RawMessage) error {
	var res struct {
		Content           []map[string]json.RawMessage `json:"content"`
		StructuredContent json.RawMessage              `json:"structuredContent"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("rendering result: %w", err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		content(&b, c)
	}
	if b.Len() == 0 && len(res.StructuredContent) > 0 {
		var ib bytes.Buffer
		json.Indent(&ib, res.StructuredContent, "", "  ")
		line(&b, ib.String())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// content renders one content block: text as text, embedded text
// resources as their text, anything else as a one-line summary.
func content(b *strings.Builder, c map[string]json.RawMessage) {
	var typ string
	json.Unmarshal(c["type"], &typ)
	switch typ {
	case "text":
		var text string
		json.Unmarshal(c["text"], &text)
		line(b, text)
	case "image", "audio":
		line(b, fmt.Sprintf("[%s %s, %s]", typ, str(c["mimeType"]), dataSize(str(c["data"]))))
	case "resource_link":
		line(b, fmt.Sprintf("[resource link %s: %s]", str(c["name"]), str(c["uri"])))
	case "resource":
		var r map[string]json.RawMessage
		json.Unmarshal(c["resource"], &r)
		if t, ok := r["text"]; ok {
			var text string
			json.Unmarshal(t, &text)
			line(b, text)
		} else {
			line(b, fmt.Sprintf("[resource %s%s, %s]", str(r["uri"]), mimeOf(r), dataSize(str(r["blob"]))))
		}
	default:
		compact, _ := json.Marshal(c)
		line(b, fmt.Sprintf("[%s content] %s", typ, truncate(string(compact), 200)))
	}
}

// PromptResult renders a prompts/get result for people: each message as
// "role: text" (other content summarised as in ToolResult).
func PromptResult(w io.Writer, raw json.RawMessage) error {
	var res struct {
		Description string `json:"description"`
		Messages    []struct {
			Role    string                     `json:"role"`
			Content map[string]json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("rendering prompt: %w", err)
	}
	var b strings.Builder
	for _, m := range res.Messages {
		var c strings.Builder
		content(&c, m.Content)
		b.WriteString(m.Role + ": " + c.String())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ResourceContents renders a resources/read result for people: text as it
// is, a blob as a one-line summary (blobs are written with --output-file).
func ResourceContents(w io.Writer, raw json.RawMessage) error {
	var res struct {
		Contents []map[string]json.RawMessage `json:"contents"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("rendering resource: %w", err)
	}
	var b strings.Builder
	for _, c := range res.Contents {
		if t, ok := c["text"]; ok {
			var text string
			json.Unmarshal(t, &text)
			line(&b, text)
			continue
		}
		kind := mimeOf(c)
		size, ok := decodedSize(str(c["blob"]))
		if ok {
			size += "; write it with --output-file FILE" // which refuses what is not base64
		}
		line(&b, fmt.Sprintf("[blob %s%s, %s]", str(c["uri"]), kind, size))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Completions renders a completion/complete result: one value per line.
func Completions(w io.Writer, raw json.RawMessage) error {
	var res struct {
		Completion struct {
			Values  []string `json:"values"`
			HasMore bool     `json:"hasMore"`
		} `json:"completion"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("rendering completions: %w", err)
	}
	var b strings.Builder
	for _, v := range res.Completion.Values {
		line(&b, v)
	}
	if res.Completion.HasMore {
		line(&b, "…")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func line(b *strings.Builder, s string) {
	b.WriteString(s)
	if !strings.HasSuffix(s, "\n") {
		b.WriteByte('\n')
	}
}

// mimeOf is " (TYPE)" of a resource's mimeType, or "": a server need not
// say.
func mimeOf(r map[string]json.RawMessage) string {
	if mt := str(r["mimeType"]); mt != "" {
		return " (" + mt + ")"
	}
	return ""
}

func str(raw json.RawMessage) string {
	var s string
	json.Unmarshal(raw, &s)
	return s
}

// dataSize is the size of base64 data decoded, or says it is not base64
// (which --output-file refuses), rather than give a size it does not have.
func dataSize(s string) string {
	size, _ := decodedSize(s)
	return size
}

// decodedSize is dataSize, and whether s is base64.
func decodedSize(s string) (string, bool) {
	n, err := io.Copy(io.Discard, base64.NewDecoder(base64.StdEncoding, strings.NewReader(s)))
	if err != nil {
		return fmt.Sprintf("not base64: %d characters", len(s)), false
	}
	return size(int(n)), true
}

func size(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
