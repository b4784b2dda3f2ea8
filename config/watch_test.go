package config

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestWatchSeesEditsAndReplacements(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mcp.json")
	os.WriteFile(file, []byte(`{"servers": {}}`), 0o644)
	changes := make(chan struct{}, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := Watch(ctx, func() []string { return []string{file} }, 50*time.Millisecond, func() { changes <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	expect := func(what string) { t.Helper(); expectChange(t, changes, what) }
	// A write in place.
	os.WriteFile(file, []byte(`{"servers": {"a": {"command": "x"}}}`), 0o644)
	expect("a write")
	// An editor's save: a new file renamed over the old one, in a burst
	// that is reported once.
	tmp := filepath.Join(dir, ".mcp.json.swp")
	os.WriteFile(tmp, []byte(`{"servers": {}}`), 0o644)
	os.Rename(tmp, file)
	os.WriteFile(file, []byte(`{"servers": {"b": {"command": "x"}}}`), 0o644)
	expect("a rename over the file")
	// Removal, and the file coming back.
	os.Remove(file)
	expect("a removal")
	os.WriteFile(file, []byte(`{"servers": {}}`), 0o644)
	expect("a re-creation")
	// Other files of the directory, and chmod, are not changes.
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644)
	os.Chmod(file, 0o600)
	select {
	case <-changes:
		t.Error("a change reported for another file or a chmod")
	case <-time.After(300 * time.Millisecond):
	}
}

// The files are asked again after each change: an envFile an edit names,
// in another directory, is watched from then on (it never was), also when
// one named before it is in a directory that cannot be watched.
func TestWatchFollowsTheFilesAChangeNames(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	file, env := filepath.Join(dir, "mcp.json"), filepath.Join(other, "s.env")
	os.WriteFile(file, []byte(`{"servers": {}}`), 0o644)
	os.WriteFile(env, []byte("V=1\n"), 0o644)
	files := fileList{files: []string{file}}
	changes := make(chan struct{}, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := Watch(ctx, files.get, 50*time.Millisecond, func() {
		files.set(file, filepath.Join(other, "no-such-dir", "x.env"), env) // the edit named them
		changes <- struct{}{}
	})
	if err != nil {
		t.Fatal(err)
	}
	expect := func(what string) { t.Helper(); expectChange(t, changes, what) }
	os.WriteFile(file, []byte(`{"servers": {"a": {"command": "x", "envFile": "s.env"}}}`), 0o644)
	expect("the edit")
	time.Sleep(100 * time.Millisecond) // the envFile's directory is watched after onChange
	os.WriteFile(env, []byte("V=2\n"), 0o644)
	expect("a write of the envFile the edit named")
}

// A fileList is the files a test's Watch follows, which a reload (of the
// watch's making or not) changes.
type fileList struct {
	mu    sync.Mutex
	files []string
}

func (l *fileList) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.files
}

func (l *fileList) set(files ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.files = files
}

// expectChange waits for a change to be reported after what was done.
func expectChange(t *testing.T, changes <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-changes:
	case <-time.After(10 * time.Second):
		t.Fatalf("no change reported after %s", what)
	}
}

// Files named by a reload not of the watch's making (mcpctl reload) are
// followed within refollowEvery, and a file named anew counts as changed:
// also one whose directory was made since, written while nobody watched.
func TestWatchFollowsFilesNamedElsewhere(t *testing.T) {
	dir, file, later, files := laterFileSetup(t)
	changes := make(chan struct{}, 10)
	watchFor(t, files, func() { changes <- struct{}{} })
	// Named in a directory not there yet: a change once named, then the
	// file written in the directory made since, before the watch saw it.
	files.set(file, later)
	expectChange(t, changes, "a file named anew, its directory missing")
	made := filepath.Join(dir, ".later.tmp")
	os.MkdirAll(made, 0o755)
	os.WriteFile(filepath.Join(made, "x.env"), []byte("V=1\n"), 0o644)
	os.Rename(made, filepath.Dir(later)) // the file there before its directory is watched
	expectChange(t, changes, "a file in a directory made since")
	// Named by a reload elsewhere: followed from then on.
	other := filepath.Join(t.TempDir(), "y.env")
	os.WriteFile(other, []byte("V=1\n"), 0o644)
	files.set(file, later, other)
	expectChange(t, changes, "a file named anew")
	os.WriteFile(other, []byte("V=2\n"), 0o644)
	expectChange(t, changes, "a write of a file named elsewhere")
}

// A directory made (its file in it) just after a reload looked, before
// the watch names it again, is a change: the reload did not see the file.
func TestWatchDirMadeAsItReloads(t *testing.T) {
	_, file, later, files := laterFileSetup(t)
	changes := make(chan struct{}, 10)
	var reloads atomic.Int32
	watchFor(t, files, func() {
		if reloads.Add(1) == 1 {
			// The reload looked; then the directory comes, file and all.
			os.MkdirAll(filepath.Dir(later), 0o755)
			os.WriteFile(later, []byte("V=1\n"), 0o644)
		}
		changes <- struct{}{}
	})
	files.set(file, later)
	expectChange(t, changes, "a file named anew, its directory missing")
	expectChange(t, changes, "its directory made as the reload ended")
}

// laterFileSetup is a config file watched alone, and the path of a file
// in a directory not made yet (dir/later/x.env) for a reload to name.
func laterFileSetup(t *testing.T) (dir, file, later string, files *fileList) {
	dir = t.TempDir()
	file = filepath.Join(dir, "mcp.json")
	later = filepath.Join(dir, "later", "x.env")
	os.WriteFile(file, []byte(`{"servers": {}}`), 0o644)
	return dir, file, later, &fileList{files: []string{file}}
}

// watchFor watches files (50ms debounce) until the test ends.
func watchFor(t *testing.T, files *fileList, onChange func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := Watch(ctx, files.get, 50*time.Millisecond, onChange); err != nil {
		t.Fatal(err)
	}
}
