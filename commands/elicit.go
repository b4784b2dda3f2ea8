package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/mcpctl/mcpctl/output"
	"golang.org/x/sys/unix"
)

// elicitOnTerminal asks the person at the terminal what an
// elicitation/create request (params as JSON, MCP 2025-11-25) asks for and
// returns the ElicitResult as JSON: {"action":"accept","content":{...}},
// {"action":"decline"} or {"action":"cancel"}.
//
// in is the terminal, read a line at a time; out is where the prompts go
// (stderr). complete, when not nil, is closed when the server sends
// notifications/elicitation/complete for a URL-mode request: waiting then
// ends as if the user had pressed Enter. Ctrl-D cancels; when ctx ends,
// elicitOnTerminal returns ctx.Err() at once and leaves nothing reading
// the terminal. What the user types is not logged anywhere.
func elicitOnTerminal(ctx context.Context, in *os.File, out io.Writer, server string, params json.RawMessage, complete <-chan struct{}) (json.RawMessage, error) {
	var p struct {
		Mode            string          `json:"mode"`
		Message         string          `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
		URL             string          `json:"url"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("reading the elicitation/create request of server %s: %w", server, err)
	}
	t := &asker{in: in, out: out}
	switch p.Mode {
	case "", "form":
		fields, err := parseSchema(p.RequestedSchema)
		if err != nil {
			return nil, fmt.Errorf("server %s asks with a form mcpctl cannot show: %w", server, err)
		}
		fmt.Fprintf(out, "mcpctl: server %s asks: %s\n", clean(server), clean(p.Message))
		return t.form(ctx, server, fields)
	case "url":
		u, err := url.Parse(p.URL)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("server %s asks to open %q, which is not a full URL", server, p.URL)
		}
		fmt.Fprintf(out, "mcpctl: server %s asks: %s\n", clean(server), clean(p.Message))
		return t.openURL(ctx, p.URL, u, complete)
	}
	return nil, fmt.Errorf("server %s asks with elicitation mode %q: mcpctl knows only form and url", server, p.Mode)
}

// An asker asks questions on a terminal, one line each.
type asker struct {
	in  *os.File
	out io.Writer
}

// errDone is what ask returns when its done channel closes first.
var errDone = errors.New("done")

// ask prints prompt and returns the line typed, trimmed.
func (t *asker) ask(ctx context.Context, prompt string, done <-chan struct{}) (string, error) {
	fmt.Fprint(t.out, prompt)
	line, err := waitLine(ctx, t.in, done)
	return strings.TrimSpace(line), err
}

// choose asks until the answer is one of choices (by its first letter or
// whole) and returns that first letter; Enter is the first choice.
func (t *asker) choose(ctx context.Context, prompt string, done <-chan struct{}, choices ...string) (byte, error) {
	for {
		answer, err := t.ask(ctx, prompt, done)
		if err != nil {
			return 0, err
		}
		if answer == "" {
			return choices[0][0], nil
		}
		for _, c := range choices {
			if strings.EqualFold(answer, c) || strings.EqualFold(answer, c[:1]) {
				return c[0], nil
			}
		}
		fmt.Fprintf(t.out, "  type Enter or the first letter of %s\n", strings.Join(choices, ", "))
	}
}

// result is the ElicitResult for an action, with content when accepted.
func result(action string, content map[string]any) (json.RawMessage, error) {
	r := struct {
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content,omitempty"`
	}{Action: action}
	if content != nil {
		r.Content, _ = json.Marshal(content)
	}
	return json.Marshal(r)
}

// ended turns what ended a question into the answer: Ctrl-D (EOF) or a
// terminal that went away is a cancel.
func ended(ctx context.Context, err error) (json.RawMessage, error) {
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, unix.EIO):
		return result("cancel", nil)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	return nil, fmt.Errorf("reading an answer from the terminal: %w", err)
}

// form asks for the fields one by one, then shows the answers to review and
// change before they are sent, as the spec requires.
func (t *asker) form(ctx context.Context, server string, fields []*field) (json.RawMessage, error) {
	prompt := "mcpctl: Enter to answer, d to decline, c to cancel: "
	if len(fields) == 0 {
		prompt = "mcpctl: Enter to accept, d to decline, c to cancel: "
	}
	switch c, err := t.choose(ctx, prompt, nil, "accept", "decline", "cancel"); {
	case err != nil:
		return ended(ctx, err)
	case c == 'd':
		return result("decline", nil)
	case c == 'c':
		return result("cancel", nil)
	}
	content := map[string]any{}
	for i, f := range fields {
		if err := t.askField(ctx, i, len(fields), f, content, false); err != nil {
			return ended(ctx, err)
		}
	}
	if len(fields) == 0 {
		return result("accept", content)
	}
	for {
		t.showAnswers(server, fields, content)
		answer, err := t.ask(ctx, "mcpctl: Enter to send, a number to change that answer, d to decline, c to cancel: ", nil)
		if err != nil {
			return ended(ctx, err)
		}
		n, nerr := strconv.Atoi(answer)
		switch {
		case answer == "" || strings.EqualFold(answer, "s") || strings.EqualFold(answer, "send"):
			return result("accept", content)
		case strings.EqualFold(answer, "d") || strings.EqualFold(answer, "decline"):
			return result("decline", nil)
		case strings.EqualFold(answer, "c") || strings.EqualFold(answer, "cancel"):
			return result("cancel", nil)
		case nerr == nil && n >= 1 && n <= len(fields):
			if err := t.askField(ctx, n-1, len(fields), fields[n-1], content, true); err != nil {
				return ended(ctx, err)
			}
		default:
			fmt.Fprintf(t.out, "  type Enter, a number from 1 to %d, d or c\n", len(fields))
		}
	}
}

// showAnswers lists what would be sent, numbered to be changed, as JSON so
// that "42" and 42 differ.
func (t *asker) showAnswers(server string, fields []*field, content map[string]any) {
	fmt.Fprintf(t.out, "mcpctl: server %s gets:\n", clean(server))
	for i, f := range fields {
		shown := "(nothing)"
		if v, ok := content[f.name]; ok {
			b, _ := json.Marshal(v)
			shown = string(b)
		}
		fmt.Fprintf(t.out, "  %2d) %s: %s\n", i+1, clean(f.name), clean(shown))
	}
}

// askField shows field i of n and asks for it until the answer is valid,
// then sets it in content, or removes it when left out. When changing an
// answer, the current one is in brackets and "-" removes an optional one
// that has no default.
func (t *asker) askField(ctx context.Context, i, n int, f *field, content map[string]any, changing bool) error {
	t.showField(i, n, f)
	current, has := f.def, f.def != nil
	if changing {
		current, has = content[f.name]
	}
	prompt := "  " + f.name
	if has {
		prompt += " [" + f.show(current) + "]"
	}
	// An optional field with a default needs no way to be left out: the
	// server would read it as the default anyway.
	canClear := changing && has && !f.required && f.def == nil
	if canClear {
		prompt += " (- for nothing)"
	}
	prompt = clean(prompt) + ": "
	for {
		answer, err := t.ask(ctx, prompt, nil)
		if err != nil {
			return err
		}
		var v any
		switch {
		case answer == "" && has:
			v = current
		case answer == "" && f.required:
			err = errors.New("an answer is required")
		case answer == "" || canClear && answer == "-":
			delete(content, f.name)
			return nil
		default:
			v, err = f.parse(answer)
		}
		if err == nil {
			content[f.name] = v
			return nil
		}
		fmt.Fprintf(t.out, "  not accepted: %s\n", clean(err.Error()))
	}
}

// showField shows field i of n: its title, description, what it accepts
// and its choices.
func (t *asker) showField(i, n int, f *field) {
	title := f.title
	if title == "" {
		title = f.name
	}
	if f.required {
		title += " (required)"
	}
	fmt.Fprintf(t.out, "[%d/%d] %s\n", i+1, n, clean(title))
	if f.description != "" {
		fmt.Fprintf(t.out, "  %s\n", clean(f.description))
	}
	if h := f.hint(); h != "" {
		fmt.Fprintf(t.out, "  %s\n", clean(h))
	}
	for j, o := range f.options {
		shown := o.title
		if o.title != o.value {
			shown += " (" + o.value + ")"
		}
		fmt.Fprintf(t.out, "  %3d) %s\n", j+1, clean(shown))
	}
}

// openURL shows the URL a URL-mode request asks the user to open, with its
// host apart (the spec wants the domain seen), and waits until the user
// says they have finished there or the server says so. mcpctl opens
// nothing itself.
func (t *asker) openURL(ctx context.Context, raw string, u *url.URL, complete <-chan struct{}) (json.RawMessage, error) {
	fmt.Fprintf(t.out, "mcpctl: open this address in your browser (mcpctl does not open it):\n\n    %s\n\n", clean(raw))
	fmt.Fprintf(t.out, "  host: %s\n", clean(u.Hostname()))
	for _, warning := range urlWarnings(u) {
		fmt.Fprintf(t.out, "  warning: %s\n", warning)
	}
	c, err := t.choose(ctx, "mcpctl: press Enter when you have finished there, d to decline, c to cancel: ", complete, "accept", "decline", "cancel")
	switch {
	case errors.Is(err, errDone):
		fmt.Fprintln(t.out, "\nmcpctl: the server says it is done")
		return result("accept", nil)
	case err != nil:
		return ended(ctx, err)
	case c == 'd':
		return result("decline", nil)
	case c == 'c':
		return result("cancel", nil)
	}
	return result("accept", nil)
}

// urlWarnings are what to check before opening u: a look-alike host
// (punycode, non-ASCII letters), a name before @ that reads like a host,
// an address that is not https.
func urlWarnings(u *url.URL) []string {
	var w []string
	host := u.Hostname()
	if strings.Contains(strings.ToLower(host), "xn--") || strings.IndexFunc(host, func(r rune) bool { return r > unicode.MaxASCII }) >= 0 {
		w = append(w, "the host has punycode or non-ASCII letters: check it is the site you expect")
	}
	if u.User != nil {
		w = append(w, "the part before @ is not the site: the site is "+clean(host))
	}
	if u.Scheme != "https" {
		w = append(w, "the address is "+clean(u.Scheme)+", not https")
	}
	return w
}

// clean makes text from a server safe to print on a terminal (see
// output.Printable). Lines after the first are indented, so none can pass
// for mcpctl's own.
func clean(s string) string {
	return strings.ReplaceAll(output.Printable(s), "\n", "\n    ")
}

// waitLine waits until a line can be read from in, then reads it. It waits
// with select(2), a tenth of a second at a time, rather than reading in a
// goroutine: a read left behind when ctx ends would take the next line
// typed, meant for another prompt or for the shell. done closing ends the
// wait with errDone.
func waitLine(ctx context.Context, in *os.File, done <-chan struct{}) (string, error) {
	rc, err := in.SyscallConn()
	if err != nil {
		return "", err
	}
	for {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-done:
			return "", errDone
		default:
		}
		var ready bool
		var serr error
		if err := rc.Control(func(fd uintptr) { ready, serr = readable(int(fd), 100*time.Millisecond) }); err != nil {
			return "", err
		}
		if serr != nil {
			return "", serr
		}
		if ready {
			return readLine(in)
		}
	}
}

// readable says whether fd has input (a whole line, on a terminal in
// canonical mode) within wait.
func readable(fd int, wait time.Duration) (bool, error) {
	if fd >= unix.FD_SETSIZE {
		return true, nil // select cannot watch it: read, and block
	}
	var set unix.FdSet
	set.Set(fd)
	tv := unix.NsecToTimeval(wait.Nanoseconds())
	n, err := unix.Select(fd+1, &set, nil, nil, &tv)
	if errors.Is(err, unix.EINTR) {
		return false, nil
	}
	return n > 0, err
}
