//go:build integration

package main

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestIntegrationBenchRun runs `bench/run --quick` (every measurement of
// bench/run, a few times each) and checks what issue 9 asks of its output:
// every figure printed, with its target beside it and the verdict its
// figure earns. The figures themselves are not judged: CI shares its
// machine. Only what must hold on any machine is: no answer lost or
// mismatched, no server process left behind.
func TestIntegrationBenchRun(t *testing.T) {
	cmd := exec.Command("bash", "bench/run", "--quick")
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("bench/run --quick: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
	lines := strings.Split(string(out), "\n")
	lt := func(limit float64) func(float64) bool { return func(v float64) bool { return v < limit } }
	le := func(limit float64) func(float64) bool { return func(v float64) bool { return v <= limit } }
	ge := func(limit float64) func(float64) bool { return func(v float64) bool { return v >= limit } }
	targets := []struct {
		label, unit, target string
		met                 func(float64) bool
		mustMeet            bool // holds on any machine
	}{
		{"mcpctl --version (process start)", "ms", "< 5 ms", lt(5), false},
		{"warm call, server-everything (median)", "ms", "< 5 ms", lt(5), false},
		{"tools through the session (median)", "ms", "< 5 ms", lt(5), false},
		{"Ctrl-C during a long call, until exit", "ms", "< 1 s", lt(1000), false},
		{"warm call, Go server (median)", "ms", "< 5 ms", lt(5), false},
		{"1000 calls at once, 10 go-sdk servers", "calls/s", ">= 5000 calls/s", ge(5000), false},
		{"session RSS, 10 go-sdk servers idle", "MB", "< 30 MB", lt(30), false},
		{"session RSS, 10 go-sdk servers under load (peak)", "MB", "< 30 MB", lt(30), false},
		{"1000 calls at once, 10 minimal Go servers", "calls/s", ">= 5000 calls/s", ge(5000), false},
		{"session RSS, 10 minimal Go servers idle", "MB", "< 30 MB", lt(30), false},
		{"session RSS, 10 minimal Go servers under load (peak)", "MB", "< 30 MB", lt(30), false},
		{"routing + socket hop", "µs", "< 200 µs", lt(200), false},
		{"up, 10 servers / the slowest alone", "x", "<= 1.2x", le(1.2), false},
		{"one-shot call / raw client (", "x", "<= 1.05x", le(1.05), false},
		{"  the same, median of the 3 rounds' ratios", "x", "<= 1.05x", le(1.05), false},
		{"server processes left after the runs", "", "0", func(v float64) bool { return v == 0 }, true},
		{"server processes left after all clients", "", "0", func(v float64) bool { return v == 0 }, true},
	}
	for _, want := range targets {
		fig, target, verdict, found := benchLine(t, lines, want.label, want.unit)
		if !found {
			continue
		}
		if target != want.target {
			t.Errorf("%q: target %q, want %q", want.label, target, want.target)
		}
		wantVerdict := "NOT MET"
		if want.met(fig) {
			wantVerdict = "met"
		}
		if verdict != wantVerdict {
			t.Errorf("%q: figure %v %s says %q, want %q", want.label, fig, want.unit, verdict, wantVerdict)
		}
		if want.mustMeet && verdict != "met" {
			t.Errorf("%q: %v, want 0", want.label, fig)
		}
	}
	// Figures printed for the record or as a floor, without a target of
	// their own.
	floor := regexp.MustCompile(`^mcpctl \d+\.\d\dx$`)
	ratio := regexp.MustCompile(`^\d+\.\dx mcpctl's time$`)
	for _, want := range []struct {
		label, unit string
		verdict     *regexp.Regexp
	}{
		{"  a Go program that prints a line (the floor)", "ms", floor},
		{"  the same call by bench/rawsession (the floor)", "ms", floor},
		{"  the same on 1000 connections at once", "calls/s", nil},
		{"  session RSS so (peak)", "MB", regexp.MustCompile(`^\(a connection each\)$`)},
		{"call, bare go-sdk client (median)", "µs", nil},
		{"routing overhead, engine - go-sdk (median)", "µs", nil},
		{"socket hop, session - engine (median)", "µs", nil},
		{"tools through the session, in process", "µs", nil},
		{"one-shot call, server-everything (median)", "ms", nil},
		{"MCP Inspector CLI 2.12.0, same call", "ms", ratio},
		{"mcporter 0.12.3, same call", "ms", ratio},
	} {
		_, _, verdict, found := benchLine(t, lines, want.label, want.unit)
		if found && (want.verdict == nil && verdict != "" || want.verdict != nil && !want.verdict.MatchString(verdict)) {
			t.Errorf("%q: printed %q after its figure", want.label, verdict)
		}
	}
	if n := strings.Count(string(out), "; 0 failed, 0 mismatched)"); n != 2 {
		t.Errorf("%d throughput runs say 0 failed, 0 mismatched; want 2\n%s", n, out)
	}
}

// benchLine finds the line of bench/run's output that starts with label
// and returns its figure (in unit), its target and what follows; found is
// false, and the test failed, if there is no such line or it has no figure.
func benchLine(t *testing.T, lines []string, label, unit string) (fig float64, target, rest string, found bool) {
	t.Helper()
	for _, l := range lines {
		if !strings.HasPrefix(l, label) {
			continue
		}
		before, after, ok := strings.Cut(l, "   target ")
		if !ok {
			t.Errorf("%q: no target on %q", label, l)
			return 0, "", "", false
		}
		f := strings.Fields(before)
		num := f[len(f)-1]
		if unit != "x" && unit != "" {
			if num != unit || len(f) < 2 {
				t.Errorf("%q: figure not in %s on %q", label, unit, l)
				return 0, "", "", false
			}
			num = f[len(f)-2]
		}
		v, err := strconv.ParseFloat(strings.TrimSuffix(num, unit), 64)
		if err != nil {
			t.Errorf("%q: no figure on %q", label, l)
			return 0, "", "", false
		}
		// The target is printed in 18 columns, then a space.
		if len(after) < 18 {
			return v, strings.TrimSpace(after), "", true
		}
		return v, strings.TrimSpace(after[:18]), strings.TrimSpace(after[18:]), true
	}
	t.Errorf("no line %q in bench/run's output", label)
	return 0, "", "", false
}
