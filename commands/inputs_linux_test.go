package commands

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the test types on master what mcpctl
// reads from the terminal end.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return master, tty
}

// A terminal reader that waits for text.
type screen struct {
	t   *testing.T
	buf bytes.Buffer
	ch  chan []byte
}

func newScreen(t *testing.T, master *os.File) *screen {
	s := &screen{t: t, ch: make(chan []byte, 100)}
	go func() {
		for {
			b := make([]byte, 4096)
			n, err := master.Read(b)
			if n > 0 {
				s.ch <- b[:n]
			}
			if err != nil {
				close(s.ch)
				return
			}
		}
	}()
	return s
}

func (s *screen) waitFor(text string) {
	s.t.Helper()
	deadline := time.After(10 * time.Second)
	for !strings.Contains(s.buf.String(), text) {
		select {
		case b, ok := <-s.ch:
			if !ok {
				s.t.Fatalf("terminal closed before %q; it shows:\n%s", text, s.buf.String())
			}
			s.buf.Write(b)
		case <-deadline:
			s.t.Fatalf("no %q on the terminal; it shows:\n%s", text, s.buf.String())
		}
	}
}

func TestInputsAskedOnTerminal(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "mcp.json"), []byte(`{
  "inputs": [
    {"id": "region", "type": "pickString", "description": "Region", "options": ["eu", "us"], "default": "eu"},
    {"id": "name", "type": "promptString", "description": "Your name"},
    {"id": "api-key", "type": "promptString", "description": "API key", "password": true}
  ],
  "servers": {"s": {"command": "sh", "args": ["--region=${input:region}", "--name=${input:name}"],
    "env": {"TOKEN": "Bearer ${input:api-key}"}}}
}`), 0o644)
	master, tty := openPTY(t)
	scr := newScreen(t, master)
	var stdout bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- Main(context.Background(), []string{"mcpctl", "-c", filepath.Join(dir, "mcp.json"), "config", "show", "--resolved", "--show-secrets"}, tty, &stdout, tty)
	}()
	scr.waitFor("2) us")
	scr.waitFor("mcpctl: choose [eu]: ")
	// A mistake is said, and asked again; spaces around a choice are not.
	master.WriteString("eu-west\n")
	scr.waitFor(`mcpctl: "eu-west" is not one of the choices; type its number or its name`)
	scr.waitFor("mcpctl: choose [eu]: ")
	master.WriteString("3\n")
	scr.waitFor(`mcpctl: "3" is not one of the choices`)
	master.WriteString(" us \n")
	scr.waitFor("mcpctl: Your name (name): ")
	master.WriteString("\n")
	scr.waitFor("mcpctl: nothing was entered; type a value, or Ctrl-C to stop")
	master.WriteString("Ada\n")
	scr.waitFor("mcpctl: API key (api-key): ")
	master.WriteString("s3cret-k3y\n")
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit %d; terminal:\n%s", c, scr.buf.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("mcpctl did not finish")
	}
	out := stdout.String()
	for _, want := range []string{`"--region=us"`, `"--name=Ada"`, `"TOKEN":"Bearer s3cret-k3y"`} {
		if !strings.Contains(out, want) {
			t.Errorf("result lacks %s: %s", want, out)
		}
	}
	// What was typed shows on the terminal, except the password.
	time.Sleep(100 * time.Millisecond)
	for len(scr.ch) > 0 {
		scr.buf.Write(<-scr.ch)
	}
	if shown := scr.buf.String(); !strings.Contains(shown, "Ada") || strings.Contains(shown, "s3cret") {
		t.Errorf("terminal shows:\n%s", shown)
	}
}

// Commands that only look (status, config show as written) ask for no
// input on a terminal; status says which command would.
func TestLookingCommandsAskNothing(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "mcp.json"), []byte(`{
  "inputs": [{"id": "api-key", "type": "promptString", "password": true}],
  "servers": {"s": {"command": "sh", "env": {"TOKEN": "${input:api-key}"}}}
}`), 0o644)
	t.Setenv("MCPCTL_RUNTIME_DIR", filepath.Join(dir, "run"))
	t.Setenv("MCPCTL_STATE_DIR", filepath.Join(dir, "state"))
	for _, args := range [][]string{{"config", "show"}, {"status"}} {
		master, tty := openPTY(t)
		scr := newScreen(t, master)
		var stdout bytes.Buffer
		code := make(chan int, 1)
		go func() {
			code <- Main(context.Background(), append([]string{"mcpctl", "-c", filepath.Join(dir, "mcp.json")}, args...), tty, &stdout, tty)
		}()
		select {
		case c := <-code:
			if c != 0 {
				t.Fatalf("%s: exit %d; terminal:\n%s", args, c, scr.buf.String())
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not finish (did it ask?); terminal:\n%s", args, scr.buf.String())
		}
		if args[0] == "status" && !strings.Contains(stdout.String(), "run a command that starts the servers (mcpctl up), which asks for it") {
			t.Errorf("status: %s", stdout.String())
		}
	}
}

// Three wrong answers end the command (exit 2), naming the input.
func TestInputWrongThriceEnds(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "mcp.json"), []byte(`{
  "inputs": [{"id": "region", "type": "pickString", "options": ["eu", "us"]}, {"id": "name", "type": "promptString"}],
  "servers": {"s": {"command": "sh", "args": ["${input:region}", "${input:name}"]}}
}`), 0o644)
	master, tty := openPTY(t)
	scr := newScreen(t, master)
	var stdout bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- Main(context.Background(), []string{"mcpctl", "-c", filepath.Join(dir, "mcp.json"), "config", "show", "--resolved", "--show-secrets"}, tty, &stdout, tty)
	}()
	for _, typed := range []string{"a", "b", "c"} {
		scr.waitFor("mcpctl: choose: ")
		scr.buf.Reset()
		master.WriteString(typed + "\n")
	}
	select {
	case c := <-code:
		scr.waitFor(`${input:region} has no value: \"c\" is not one of the choices`)
		// Nor is the next input asked: the command fails already.
		if strings.Contains(scr.buf.String(), "(name)") || strings.Contains(scr.buf.String(), "name: ") {
			t.Errorf("an input after the one that failed was asked:\n%s", scr.buf.String())
		}
		if c != 2 || stdout.Len() > 0 {
			t.Fatalf("exit %d, stdout %q; terminal:\n%s", c, stdout.String(), scr.buf.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("mcpctl did not finish; terminal:\n%s", scr.buf.String())
	}
}
