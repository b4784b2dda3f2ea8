package commands

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const regenerate = "go generate . (in the repository's root; it runs go run ./internal/gendocs)"

// TestDocsFresh regenerates completions/ and man/ and fails when the
// checked-in files differ, are missing or are left over.
func TestDocsFresh(t *testing.T) {
	files, err := Docs()
	if err != nil {
		t.Fatal(err)
	}
	var stale []string
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join("..", name))
		if err != nil || !bytes.Equal(got, want) {
			stale = append(stale, name)
		}
	}
	for _, dir := range []string{"completions", "man"} {
		have, _ := filepath.Glob(filepath.Join("..", dir, "*"))
		for _, p := range have {
			name := dir + "/" + filepath.Base(p)
			if _, ok := files[name]; !ok {
				stale = append(stale, name+" (no longer generated)")
			}
		}
	}
	if len(stale) > 0 {
		sort.Strings(stale)
		t.Fatalf("generated files are stale:\n  %s\nregenerate them with: %s", strings.Join(stale, "\n  "), regenerate)
	}
}

// TestManPagesRender renders every man page with groff (or man) when the
// machine has one, and fails on any warning.
func TestManPagesRender(t *testing.T) {
	files, err := Docs()
	if err != nil {
		t.Fatal(err)
	}
	groff, gerr := exec.LookPath("groff")
	man, merr := exec.LookPath("man")
	if gerr != nil && merr != nil {
		t.Skip("neither groff nor man is installed: man pages not rendered")
	}
	dir := t.TempDir()
	for name, data := range files {
		if !strings.HasPrefix(name, "man/") {
			continue
		}
		p := filepath.Join(dir, filepath.Base(name))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var cmd *exec.Cmd
		if gerr == nil {
			cmd = exec.Command(groff, "-man", "-Tutf8", "-ww", p)
		} else {
			cmd = exec.Command(man, "-l", p)
			cmd.Env = append(os.Environ(), "MANPAGER=cat", "MANWIDTH=80")
		}
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil || errOut.Len() > 0 {
			t.Errorf("%s: %v\n%s", name, err, errOut.String())
			continue
		}
		// Bold and underline come as overstrikes: "N\bN".
		text := regexp.MustCompile(".\x08").ReplaceAllString(out.String(), "")
		for _, want := range []string{"NAME", "SYNOPSIS", "EXIT STATUS", "130"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: rendered page has no %q:\n%s", name, want, text)
			}
		}
	}
}

// TestREADMEExitCodes checks that the README's exit-code table is
// ExitCodes, the table the man pages print.
func TestREADMEExitCodes(t *testing.T) {
	section := readmeSection(t, "## Exit codes")
	row := regexp.MustCompile(`(?m)^\| (\d+) \| (.*) \|$`)
	var got []ExitCode
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		code, _ := strconv.Atoi(m[1])
		got = append(got, ExitCode{code, m[2]})
	}
	for _, e := range ExitCodes {
		if bareBar(e.Meaning) {
			t.Errorf("exit code %d: a bare | splits the README's table cell, even in a code span: %s", e.Code, e.Meaning)
		}
	}
	if len(got) != len(ExitCodes) {
		t.Errorf("README lists %d exit codes, ExitCodes (commands/exitcodes.go) %d", len(got), len(ExitCodes))
	}
	for i := range min(len(got), len(ExitCodes)) {
		if got[i] != ExitCodes[i] {
			t.Errorf("README exit code row %d is\n  | %d | %s |\nExitCodes (commands/exitcodes.go) says\n  | %d | %s |", i+1, got[i].Code, got[i].Meaning, ExitCodes[i].Code, ExitCodes[i].Meaning)
		}
	}
}

// readmeSection is the README's text under heading, up to the next one.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q section", heading)
	}
	section, _, _ = strings.Cut(section, "\n#")
	return section
}

// bareBar reports a | not written \| in Markdown table text.
func bareBar(s string) bool {
	return strings.Contains(strings.ReplaceAll(s, `\|`, ""), "|")
}

// TestREADMEEnvironment checks that the README's environment table is
// Environment, the table mcpctl(1) prints.
func TestREADMEEnvironment(t *testing.T) {
	section := readmeSection(t, "### Environment")
	row := regexp.MustCompile(`(?m)^\| (` + "`" + `.*?) \| (.*) \|$`)
	var got []EnvVar
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		got = append(got, EnvVar{m[1], m[2]})
	}
	for _, v := range Environment {
		if bareBar(v.Name + v.Meaning) {
			t.Errorf("%s: a bare | splits the README's table cell, even in a code span", v.Name)
		}
	}
	if !slices.Equal(got, Environment) {
		t.Errorf("README's environment table:\n%q\nEnvironment (commands/environment.go):\n%q", got, Environment)
	}
	page, err := Docs()
	if err != nil {
		t.Fatal(err)
	}
	if man := string(page["man/mcpctl.1"]); !strings.Contains(man, ".SH ENVIRONMENT\n.TP\n.B MCPCTL_CONFIG\n") {
		t.Errorf("mcpctl.1 has no ENVIRONMENT section")
	}
}

// TestCompletionScriptsParse checks each script's syntax with its shell:
// bash always (it is required), zsh and fish when installed.
func TestCompletionScriptsParse(t *testing.T) {
	files, err := Docs()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ shell, file string }{
		{"bash", "completions/mcpctl.bash"},
		{"zsh", "completions/_mcpctl"},
		{"fish", "completions/mcpctl.fish"},
	} {
		t.Run(c.shell, func(t *testing.T) {
			sh, err := exec.LookPath(c.shell)
			if err != nil {
				if c.shell == "bash" {
					t.Fatal("bash is not installed")
				}
				t.Skipf("%s is not installed: its completion script is not checked", c.shell)
			}
			p := filepath.Join(t.TempDir(), filepath.Base(c.file))
			if err := os.WriteFile(p, files[c.file], 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(sh, "-n", p).CombinedOutput(); err != nil {
				t.Fatalf("%s -n %s: %v\n%s", c.shell, c.file, err, out)
			}
		})
	}
}

// TestRootHelpExitCodes checks that mcpctl --help names every exit code:
// an agent that has only the binary learns them there.
func TestRootHelpExitCodes(t *testing.T) {
	help := newRootCmd(&Env{}).Description
	for _, e := range ExitCodes {
		if !regexp.MustCompile(fmt.Sprintf(`(^|[\s:;(])%d `, e.Code)).MatchString(help) {
			t.Errorf("mcpctl --help does not name exit code %d (%s)", e.Code, e.Meaning)
		}
	}
}
