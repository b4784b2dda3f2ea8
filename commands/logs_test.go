package commands

import (
	"context"
	"fmt"
	"github.com/mcpctl/mcpctl/internal/testutil"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/engine"
)

// TestFollowAcrossRotation: -f loses no line when the file it follows is
// rotated under it (once between two looks, as tail -F), and prints a line
// only once it is whole.
func TestFollowAcrossRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "session.log")
	w, err := engine.OpenRotating(path, 200, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var out testutil.Buffer
	lf := &lineFilter{emit: plainLines(&out), keep: func([]byte) bool { return true }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- lf.follow(ctx, path) }()
	var want strings.Builder
	for i := range 30 {
		line := fmt.Sprintf(`{"time":"2026-01-01T00:00:00Z","n":%02d}`, i) // 39 bytes: 5 a file
		w.Write([]byte(line[:10]))
		w.Write([]byte(line[10:] + "\n"))
		want.WriteString(line + "\n")
		if i%3 == 0 {
			time.Sleep(2 * followPoll)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for out.String() != want.String() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if out.String() != want.String() {
		t.Errorf("followed:\n%s\nwant:\n%s", out.String(), want.String())
	}
}

// TestLineFilterSince: a line's time is its JSON "time" or its leading
// time; a line without one goes with the line before it.
func TestLineFilterSince(t *testing.T) {
	var out strings.Builder
	lf := &lineFilter{emit: plainLines(&out), since: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC), keep: func([]byte) bool { return true }}
	for _, l := range []string{
		`{"time":"2026-01-01T11:00:00Z","msg":"old"}`,
		`trace of old`,
		`{"time":"2026-01-01T12:30:00+00:00","msg":"new"}`,
		`trace of new`,
		`2026-01-01T11:59:59.999Z stderr old`,
		`2026-01-01T13:00:00.000+01:00 stderr at noon UTC`,
	} {
		lf.line([]byte(l))
	}
	want := "{\"time\":\"2026-01-01T12:30:00+00:00\",\"msg\":\"new\"}\ntrace of new\n2026-01-01T13:00:00.000+01:00 stderr at noon UTC\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	if got, _ := parseSince("10m", now); !got.Equal(now.Add(-10 * time.Minute)) {
		t.Errorf("parseSince 10m = %v", got)
	}
	if _, err := parseSince("-5m", now); err == nil || err.Error() != "--since -5m is a duration below zero: it counts back from now, e.g. --since 5m0s" {
		t.Errorf("parseSince -5m: %v", err)
	}
}
