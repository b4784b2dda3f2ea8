package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestRotatingFile: a write that would pass the limit moves the file to
// .1 (and .1 to .2, …), keeps at most Keep old files, and never splits a
// write.
func TestRotatingFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.log")
	r, err := OpenRotating(path, 10, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		fmt.Fprintf(r, "line %d\n", i) // 7 bytes: one per file
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r.Close() // idempotent
	for name, want := range map[string]string{"x.log": "line 4\n", "x.log.1": "line 3\n", "x.log.2": "line 2\n"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := os.Stat(path + ".3"); !os.IsNotExist(err) {
		t.Errorf("x.log.3 exists: keep 2 should drop it (%v)", err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if _, err := r.Write([]byte("x")); err == nil {
		t.Error("write after Close succeeded")
	}
}

// TestRotatingFileReopen: the size of an existing file counts, and a write
// larger than the limit goes whole into a new file.
func TestRotatingFileReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	os.WriteFile(path, []byte("12345678\n"), 0o600)
	r, err := OpenRotating(path, 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	big := strings.Repeat("y", 25) + "\n"
	r.Write([]byte(big))
	if got, _ := os.ReadFile(path); string(got) != big {
		t.Errorf("x.log = %q, want the big write whole", got)
	}
	if got, _ := os.ReadFile(path + ".1"); string(got) != "12345678\n" {
		t.Errorf("x.log.1 = %q", got)
	}
}

// TestRotatingFileConcurrent: writers in parallel lose no line and mix
// none (run with -race).
func TestRotatingFileConcurrent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.log")
	r, err := OpenRotating(path, 1000, 100)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				fmt.Fprintf(r, "g%d i%03d\n", g, i)
			}
		})
	}
	wg.Wait()
	r.Close()
	files, _ := filepath.Glob(path + "*")
	lines := 0
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if len(l) != 7 {
				t.Fatalf("%s: mixed line %q", f, l)
			}
			lines++
		}
	}
	if lines != 400 {
		t.Errorf("%d lines, want 400", lines)
	}
}

// Several writers of one path, each with its file open as processes have
// (one-shot commands beside the session): the others' lines count toward
// the limit, one rotation is made where two decided on it, and no line is
// lost. Each counted only its own, and four writers made a file four times
// over the limit; then a rotation let its lock go before its renames, and
// a writer that waited on it rotated again, leaving a nearly empty file.
func TestRotatingFileSeveralWriters(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.log")
	const max = 1000
	var writers []*RotatingFile
	for range 4 {
		r, err := OpenRotating(path, max, 100)
		if err != nil {
			t.Fatal(err)
		}
		writers = append(writers, r)
	}
	var wg sync.WaitGroup
	for g, r := range writers {
		wg.Go(func() {
			for i := range 600 {
				fmt.Fprintf(r, "g%d i%03d\n", g, i%1000) // 8 bytes
			}
		})
	}
	wg.Wait()
	lines := 0
	files, _ := filepath.Glob(path + "*")
	for _, f := range files {
		data, _ := os.ReadFile(f)
		// Each writer may add up to an eighth of the limit, and a line,
		// before it looks.
		if len(data) > max+4*(max/8+8) {
			t.Errorf("%s: %d bytes, over the limit of %d", filepath.Base(f), len(data), max)
		}
		// A file rotated out was full: two rotations where one was
		// decided leave one nearly empty.
		if f != path && len(data) < max/2 {
			t.Errorf("%s: %d bytes rotated out, under half the limit of %d", filepath.Base(f), len(data), max)
		}
		lines += strings.Count(string(data), "\n")
	}
	if lines != 2400 {
		t.Errorf("%d lines in %d files, want 2400", lines, len(files))
	}
	if len(files) < 2 {
		t.Errorf("%d files: 19200 bytes with a limit of %d were not rotated", len(files), max)
	}
	for _, r := range writers {
		r.Close()
	}
}

// OnRotate hears of each new file, and the write that rotated goes to it.
func TestRotatingFileOnRotate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	r, err := OpenRotating(path, 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []string
	r.OnRotate(func(f *os.File) {
		st, _ := f.Stat()
		got = append(got, fmt.Sprintf("%s %d", filepath.Base(f.Name()), st.Size()))
	})
	for _, line := range []string{"12345678\n", "abcdefgh\n", "ABCDEFGH\n"} {
		if _, err := r.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(got, ", ") != "x.log 0, x.log 0" {
		t.Errorf("OnRotate calls = %q, want two, each with a new empty x.log", got)
	}
	if b, _ := os.ReadFile(path); string(b) != "ABCDEFGH\n" {
		t.Errorf("x.log = %q", b)
	}
}
