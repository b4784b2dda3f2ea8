package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/mcpctl/mcpctl/config"
	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// canAsk says whether inputs may be asked for: stdin and stderr are a
// terminal, so a person is there to answer.
func (env *Env) canAsk() bool {
	f, ok := env.In.(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) && isTerminal(env.ErrOut)
}

// askInput asks for the value of a VS Code input on the terminal: a
// password without echo, a pickString as a numbered choice. The value is
// kept in memory only. An answer that will not do is said, and asked
// again, up to inputTries times: a typo need not end the command.
func (env *Env) askInput(in config.Input) (string, error) {
	if env.inputFailed != "" {
		// The command fails already: no more questions to answer for it.
		return "", fmt.Errorf("not asked, as ${input:%s} has no value", env.inputFailed)
	}
	label := in.Description
	if label == "" {
		label = in.ID
	} else {
		label = fmt.Sprintf("%s (%s)", label, in.ID)
	}
	if len(in.Options) > 0 {
		fmt.Fprintf(env.ErrOut, "mcpctl: %s\n", label)
		for i, o := range in.Options {
			fmt.Fprintf(env.ErrOut, "  %d) %s\n", i+1, o)
		}
		label = "choose"
	}
	if in.Default != "" && !in.Password {
		label += fmt.Sprintf(" [%s]", in.Default)
	}
	for try := 1; ; try++ {
		answer, err := env.askOnce(in, label)
		if err == nil {
			return answer, nil
		}
		var bad badAnswer
		if !errors.As(err, &bad) || try == inputTries {
			env.inputFailed = in.ID
			return "", err
		}
		fmt.Fprintf(env.ErrOut, "mcpctl: %s; %s\n", bad.why, bad.what)
	}
}

// inputTries is how often an input is asked before its wrong answers
// end the command.
const inputTries = 3

// A badAnswer is an answer to an input that will not do: why, and what
// would.
type badAnswer struct{ why, what string }

func (b badAnswer) Error() string { return b.why }

// askOnce asks for in once, under label.
func (env *Env) askOnce(in config.Input, label string) (string, error) {
	stdin := env.In.(*os.File)
	prompt := func() { fmt.Fprintf(env.ErrOut, "mcpctl: %s: ", label) }
	var answer string
	var err error
	if in.Password {
		answer, err = readPassword(stdin, prompt)
		fmt.Fprintln(env.ErrOut)
	} else {
		prompt()
		answer, err = readLine(stdin)
	}
	if err != nil {
		return "", err
	}
	if answer == "" {
		answer = in.Default
	}
	if len(in.Options) > 0 {
		answer = strings.TrimSpace(answer) // " small " is the choice small
		if n, err := strconv.Atoi(answer); err == nil && n >= 1 && n <= len(in.Options) {
			answer = in.Options[n-1]
		}
		if slices.Contains(in.Options, answer) {
			return answer, nil
		}
		return "", badAnswer{fmt.Sprintf("%q is not one of the choices", answer), "type its number or its name"}
	}
	if answer == "" {
		return "", badAnswer{"nothing was entered", "type a value, or Ctrl-C to stop"}
	}
	return answer, nil
}

// readLine reads one line a byte at a time, so nothing after it is taken
// from stdin.
func readLine(r io.Reader) (string, error) {
	var b strings.Builder
	buf := make([]byte, 1)
	for {
		n, err := r.Read(buf)
		if n == 1 {
			if buf[0] == '\n' {
				return strings.TrimSuffix(b.String(), "\r"), nil
			}
			b.WriteByte(buf[0])
		}
		if err == io.EOF && b.Len() > 0 {
			return b.String(), nil
		}
		if err != nil {
			return "", err
		}
	}
}

// readPassword turns echo off, then prompts and reads a line: in that
// order, so an answer typed as soon as the prompt shows is not echoed.
// Ctrl-C restores the terminal before mcpctl exits, so the shell is not
// left without echo.
func readPassword(f *os.File, prompt func()) (string, error) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return "", err
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	quiet.Lflag |= unix.ICANON | unix.ISIG
	quiet.Iflag |= unix.ICRNL
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &quiet); err != nil {
		return "", err
	}
	restore := func() { unix.IoctlSetTermios(fd, ioctlSetTermios, old) }
	defer restore()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	prompt()
	type read struct {
		s   string
		err error
	}
	got := make(chan read, 1)
	go func() {
		s, err := readLine(f)
		got <- read{s, err}
	}()
	select {
	case r := <-got:
		return r.s, r.err
	case <-sig:
		restore()
		return "", context.Canceled
	}
}
