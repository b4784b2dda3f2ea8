package commands

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// An elicitation run on a pseudo-terminal: the test reads what it shows
// and types answers, as a person would.
type elicitRun struct {
	t      *testing.T
	master *os.File
	tty    *os.File
	scr    *screen
	seen   int // the screen up to here has been matched
	done   chan elicitAnswer
}

type elicitAnswer struct {
	result json.RawMessage
	err    error
}

func startElicit(t *testing.T, ctx context.Context, params string, complete <-chan struct{}) *elicitRun {
	t.Helper()
	master, tty := openPTY(t)
	r := &elicitRun{t: t, master: master, tty: tty, scr: newScreen(t, master), done: make(chan elicitAnswer, 1)}
	go func() {
		res, err := elicitOnTerminal(ctx, tty, tty, "everything", json.RawMessage(params), complete)
		r.done <- elicitAnswer{res, err}
	}()
	return r
}

// expect waits for text to show after what was matched before, so the
// same prompt asked again is told from the first time.
func (r *elicitRun) expect(text string) {
	r.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if i := strings.Index(r.scr.buf.String()[r.seen:], text); i >= 0 {
			r.seen += i + len(text)
			return
		}
		select {
		case b, ok := <-r.scr.ch:
			if !ok {
				r.t.Fatalf("terminal closed before %q; it shows:\n%s", text, r.scr.buf.String())
			}
			r.scr.buf.Write(b)
		case <-deadline:
			r.t.Fatalf("no %q on the terminal; after what was matched it shows:\n%s", text, r.scr.buf.String()[r.seen:])
		}
	}
}

// answer waits for prompt, then types line and Enter.
func (r *elicitRun) answer(prompt, line string) {
	r.t.Helper()
	r.expect(prompt)
	r.master.WriteString(line + "\n")
	r.expect(line) // the echo, so a later expect does not match before it
}

func (r *elicitRun) result() (string, error) {
	r.t.Helper()
	select {
	case a := <-r.done:
		return string(a.result), a.err
	case <-time.After(10 * time.Second):
		r.t.Fatalf("elicitOnTerminal did not return; terminal:\n%s", r.scr.buf.String())
		return "", nil
	}
}

func (r *elicitRun) want(want string) {
	r.t.Helper()
	got, err := r.result()
	if err != nil || got != want {
		r.t.Fatalf("got %s, %v\nwant %s\nterminal:\n%s", got, err, want, r.scr.buf.String())
	}
}

// everythingPrompts are the prompts of its fields, in order.
var everythingPrompts = []string{"  name: ", "  check: ", "  firstLine [It was a dark and stormy night.]: ",
	"  email: ", "  homepage: ", "  birthdate: ", "  integer [42]: ", "  number [3.14]: ",
	"  untitledSingleSelectEnum [Monica]: ", "  untitledMultipleSelectEnum [Guitar]: ",
	"  titledSingleSelectEnum [Superman]: ", "  titledMultipleSelectEnum [Tuna]: ", "  legacyTitledEnum [Cats]: "}

const (
	choicePrompt = "mcpctl: Enter to answer, d to decline, c to cancel: "
	reviewPrompt = "mcpctl: Enter to send, a number to change that answer, d to decline, c to cancel: "
)

func TestElicitFormEverything(t *testing.T) {
	r := startElicit(t, context.Background(), everythingSchema, nil)
	r.expect("mcpctl: server everything asks: Please provide inputs for the following fields:")
	r.answer(choicePrompt, "")
	// The fields come in the order of the schema, not of a Go map.
	r.expect("[1/13] String (required)")
	r.expect("  Your full, legal name")
	r.answer("  name: ", "Ada Lovelace")
	r.expect("[2/13] Boolean")
	r.expect("  y or n")
	r.answer("  check: ", "")
	r.expect("[3/13] String with default")
	r.answer("  firstLine [It was a dark and stormy night.]: ", "")
	r.expect("[4/13] String with email format")
	r.expect("  an email address")
	r.answer("  email: ", "ada at example")
	r.expect(`  not accepted: "ada at example" is not an email address`)
	r.answer("  email: ", "ada@example.com")
	r.expect("[5/13] String with uri format")
	r.answer("  homepage: ", "")
	r.expect("[6/13] String with date format")
	r.answer("  birthdate: ", "10 Dec 1815")
	r.expect(`  not accepted: "10 Dec 1815" is not a date as YYYY-MM-DD`)
	r.answer("  birthdate: ", "1815-12-10")
	r.expect("[7/13] Integer")
	r.expect("  a whole number, 1 to 100")
	r.answer("  integer [42]: ", "2.5")
	r.expect(`  not accepted: "2.5" is not a whole number`)
	r.answer("  integer [42]: ", "150")
	r.expect("  not accepted: 150 is more than 100")
	r.answer("  integer [42]: ", "")
	r.expect("[8/13] Number in range 1-1000")
	r.expect("  a number, 0 to 1000")
	r.answer("  number [3.14]: ", "")
	r.expect("[9/13] Untitled Single Select Enum")
	r.expect("    3) Joey")
	r.answer("  untitledSingleSelectEnum [Monica]: ", "3")
	r.expect("[10/13] Untitled Multiple Select Enum")
	r.expect("  1 to 3 of these, by numbers or values separated by commas:")
	r.answer("  untitledMultipleSelectEnum [Guitar]: ", "1,2,3,4")
	r.expect("  not accepted: 4 chosen, more than 3")
	r.answer("  untitledMultipleSelectEnum [Guitar]: ", "1, drums")
	r.expect("[11/13] Titled Single Select Enum")
	r.expect("    3) Wonder Woman (hero-3)")
	r.answer("  titledSingleSelectEnum [Superman]: ", "hero-3")
	r.expect("[12/13] Titled Multiple Select Enum")
	r.answer("  titledMultipleSelectEnum [Tuna]: ", "")
	r.expect("[13/13] Legacy Titled Single Select Enum")
	r.expect("    2) Dogs (pet-2)")
	r.answer("  legacyTitledEnum [Cats]: ", "Dogs")
	r.expect("mcpctl: server everything gets:")
	r.expect(`   1) name: "Ada Lovelace"`)
	r.expect("   2) check: (nothing)")
	r.expect(`  10) untitledMultipleSelectEnum: ["Guitar","Drums"]`)
	r.answer(reviewPrompt, "")
	r.want(`{"action":"accept","content":{"birthdate":"1815-12-10","email":"ada@example.com",` +
		`"firstLine":"It was a dark and stormy night.","integer":42,"legacyTitledEnum":"pet-2","name":"Ada Lovelace",` +
		`"number":3.14,"titledMultipleSelectEnum":["fish-1"],"titledSingleSelectEnum":"hero-3",` +
		`"untitledMultipleSelectEnum":["Guitar","Drums"],"untitledSingleSelectEnum":"Joey"}}`)
}

// Defaults are taken with Enter, a required field is asked again, and
// answers are changed at the review before they are sent.
func TestElicitFormDefaultsAndChanges(t *testing.T) {
	r := startElicit(t, context.Background(), everythingSchema, nil)
	r.answer(choicePrompt, "a")
	r.answer("  name: ", "")
	r.expect("  not accepted: an answer is required")
	r.answer("  name: ", "Ada")
	for _, p := range everythingPrompts[1:] {
		r.answer(p, "")
	}
	r.expect("   2) check: (nothing)")
	r.answer(reviewPrompt, "2")
	r.answer("  check: ", "yes")
	r.expect("   2) check: true")
	r.answer(reviewPrompt, "5")
	r.answer("  homepage: ", "https://ada.example/")
	r.answer(reviewPrompt, "5")
	r.answer("  homepage [https://ada.example/] (- for nothing): ", "-")
	r.expect("   5) homepage: (nothing)")
	r.answer(reviewPrompt, "9")
	r.answer("  untitledSingleSelectEnum [Monica]: ", "phoebe")
	r.answer(reviewPrompt, "42")
	r.expect("  type Enter, a number from 1 to 13, d or c")
	r.answer(reviewPrompt, "")
	r.want(`{"action":"accept","content":{"check":true,"firstLine":"It was a dark and stormy night.",` +
		`"integer":42,"legacyTitledEnum":"pet-1","name":"Ada","number":3.14,"titledMultipleSelectEnum":["fish-1"],` +
		`"titledSingleSelectEnum":"hero-1","untitledMultipleSelectEnum":["Guitar"],"untitledSingleSelectEnum":"Phoebe"}}`)
}

func TestElicitFormDeclineAndCancel(t *testing.T) {
	const ctrlD = "\x04"
	tests := []struct {
		name  string
		typed func(r *elicitRun)
		want  string
	}{
		{"decline", func(r *elicitRun) { r.answer(choicePrompt, "d") }, `{"action":"decline"}`},
		{"cancel", func(r *elicitRun) { r.answer(choicePrompt, "cancel") }, `{"action":"cancel"}`},
		{"unknown choice asked again", func(r *elicitRun) {
			r.answer(choicePrompt, "x")
			r.expect("  type Enter or the first letter of accept, decline, cancel")
			r.answer(choicePrompt, "D")
		}, `{"action":"decline"}`},
		{"ctrl-d at the choice", func(r *elicitRun) {
			r.expect(choicePrompt)
			r.master.WriteString(ctrlD)
		}, `{"action":"cancel"}`},
		{"ctrl-d in a field", func(r *elicitRun) {
			r.answer(choicePrompt, "")
			r.answer("  name: ", "Ada")
			r.expect("  check: ")
			r.master.WriteString(ctrlD)
		}, `{"action":"cancel"}`},
		{"decline at the review", func(r *elicitRun) {
			r.answer(choicePrompt, "")
			r.answer("  name: ", "Ada")
			for _, p := range everythingPrompts[1:] {
				r.answer(p, "")
			}
			r.answer(reviewPrompt, "d")
		}, `{"action":"decline"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := startElicit(t, context.Background(), everythingSchema, nil)
			tt.typed(r)
			r.want(tt.want)
		})
	}
}

func TestElicitFormWithoutFields(t *testing.T) {
	r := startElicit(t, context.Background(), `{"mode":"form","message":"Go on?","requestedSchema":{"type":"object","properties":{}}}`, nil)
	r.answer("mcpctl: Enter to accept, d to decline, c to cancel: ", "")
	r.want(`{"action":"accept","content":{}}`)
}

const urlParams = `{"mode":"url","elicitationId":"550e8400","url":"https://mcp.example.com/ui/set_api_key?x=1","message":"Please provide your API key to continue."}`

const urlPrompt = "mcpctl: press Enter when you have finished there, d to decline, c to cancel: "

func TestElicitURL(t *testing.T) {
	t.Run("enter", func(t *testing.T) {
		r := startElicit(t, context.Background(), urlParams, nil)
		r.expect("mcpctl: server everything asks: Please provide your API key to continue.")
		r.expect("mcpctl: open this address in your browser (mcpctl does not open it):")
		r.expect("    https://mcp.example.com/ui/set_api_key?x=1")
		r.expect("  host: mcp.example.com")
		r.answer(urlPrompt, "")
		r.want(`{"action":"accept"}`)
	})
	t.Run("decline", func(t *testing.T) {
		r := startElicit(t, context.Background(), urlParams, nil)
		r.answer(urlPrompt, "d")
		r.want(`{"action":"decline"}`)
	})
	t.Run("completed by the server", func(t *testing.T) {
		complete := make(chan struct{})
		r := startElicit(t, context.Background(), urlParams, complete)
		r.expect(urlPrompt)
		close(complete)
		r.expect("mcpctl: the server says it is done")
		r.want(`{"action":"accept"}`)
	})
	t.Run("warnings", func(t *testing.T) {
		r := startElicit(t, context.Background(), `{"mode":"url","elicitationId":"1","message":"Log in",
			"url":"http://accounts.example.com@xn--exmple-cua.com/login"}`, nil)
		r.expect("  host: xn--exmple-cua.com")
		r.expect("  warning: the host has punycode or non-ASCII letters: check it is the site you expect")
		r.expect("  warning: the part before @ is not the site: the site is xn--exmple-cua.com")
		r.expect("  warning: the address is http, not https")
		r.answer(urlPrompt, "c")
		r.want(`{"action":"cancel"}`)
	})
}

// When ctx ends, elicitOnTerminal returns at once, and nothing is left
// reading the terminal: the next line typed goes to whoever reads next.
func TestElicitContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := startElicit(t, ctx, everythingSchema, nil)
	r.answer(choicePrompt, "")
	r.expect("  name: ")
	cancel()
	if _, err := r.result(); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	r.master.WriteString("for the shell\n")
	if line, err := readLine(r.tty); line != "for the shell" || err != nil {
		t.Errorf("the next line read is %q, %v", line, err)
	}
}

func TestElicitRequestErrors(t *testing.T) {
	tests := []struct{ params, want string }{
		{`{"mode":"telepathy","message":"hi"}`, `server everything asks with elicitation mode "telepathy": mcpctl knows only form and url`},
		{`{"mode":"url","message":"hi","url":"/relative"}`, `server everything asks to open "/relative", which is not a full URL`},
		{`{"message":"hi","requestedSchema":{"type":"object","properties":{"a":{"type":"object"}}}}`,
			`server everything asks with a form mcpctl cannot show: property "a": type "object" cannot be asked for on a terminal`},
		{`not json`, `reading the elicitation/create request of server everything`},
	}
	for _, tt := range tests {
		r := startElicit(t, context.Background(), tt.params, nil)
		if _, err := r.result(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.params, err, tt.want)
		}
	}
}
