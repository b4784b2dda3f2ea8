package ctxio

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"
)

// A read blocked on a pipe whose writer stays open ends with the context;
// one that finishes returns its own result.
func TestUntil(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := Until(ctx, func() ([]byte, error) { return io.ReadAll(r) }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("blocked read: %v", err)
	}
	got, err := Until(context.Background(), func() (string, error) { return "done", nil })
	if got != "done" || err != nil {
		t.Errorf("finished read: %q, %v", got, err)
	}
}
