package config

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WatchFiles are the files a session watches for [Watch]: the config files
// and the envFiles they name.
func (c *Config) WatchFiles() []string {
	files := append([]string(nil), c.Paths...)
	for _, s := range c.Servers {
		if s != nil && s.EnvFile != "" { // nil: built in Go, refused by Validate
			files = append(files, s.EnvFile)
		}
	}
	return files
}

// refollowEvery is how often Watch asks for the files again between
// changes: a reload not of its making (mcpctl reload, SIGHUP) may name
// files it does not follow yet.
const refollowEvery = 2 * time.Second

// Watch starts watching the files and returns: from then until ctx ends,
// onChange is called once the files have been quiet for debounce after one
// of them was written, created, replaced or removed. The error is one of
// setting the watch up. It watches their directories, not the files:
// editors that save by writing a new file and renaming it over the old one
// replace the inode a file watch would follow. onChange runs on a
// goroutine of Watch's, one call at a time. files is asked again after
// each onChange, on a change in a watched directory to a file it did not
// name, and every few seconds: a reload may name an envFile the config did
// not. A file it names anew counts as changed (it may have been written
// while nobody watched).
func Watch(ctx context.Context, files func() []string, debounce time.Duration, onChange func()) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	names := map[string]bool{}
	dirs := map[string]bool{}
	// follow watches the files' directories, and reports whether it named
	// a file it did not before; one directory that cannot be watched
	// (gone, or the inotify limit reached) leaves its files unwatched, and
	// the others go on. A directory removed is watched again when a file
	// names it again.
	follow := func() (added, dirAdded bool, err error) {
		next := map[string]bool{}
		var errs []error
		for _, f := range files() {
			f = filepath.Clean(f)
			next[f] = true
			added = added || !names[f]
			if d := filepath.Dir(f); !dirs[d] {
				if err := w.Add(d); err != nil {
					errs = append(errs, err)
					continue
				}
				// Watched only now (made since, or back): its file may
				// have been written while nobody watched.
				dirs[d], added, dirAdded = true, true, true
			}
		}
		names = next
		return added, dirAdded, errors.Join(errs...)
	}
	if _, _, err := follow(); err != nil {
		w.Close()
		return err
	}
	go func() {
		defer w.Close()
		timer := time.NewTimer(debounce)
		timer.Stop()
		refollow := time.NewTicker(refollowEvery)
		defer refollow.Stop()
		for {
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				name := filepath.Clean(ev.Name)
				if !names[name] && dirs[filepath.Dir(name)] {
					if added, _, _ := follow(); added {
						timer.Reset(debounce)
					}
				}
				if names[name] && ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Remove|fsnotify.Rename) != 0 {
					timer.Reset(debounce)
				}
				if dirs[name] && ev.Op&(fsnotify.Remove|fsnotify.Rename) != 0 {
					delete(dirs, name) // watched again once it is back
					w.Remove(name)
				}
			case _, ok := <-w.Errors:
				// An overflow loses events, not the watch: reload to be
				// sure nothing was missed.
				if !ok {
					return
				}
				timer.Reset(debounce)
			case <-refollow.C:
				if added, _, _ := follow(); added {
					timer.Reset(debounce)
				}
			case <-timer.C:
				onChange()
				// The files onChange's reload names were read by it; but a
				// directory that could be watched only now may have been
				// made (its files in it) after the reload looked.
				if _, dirAdded, _ := follow(); dirAdded {
					timer.Reset(debounce)
				}
			}
		}
	}()
	return nil
}
