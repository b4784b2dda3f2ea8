// Package testutil holds what the tests of several packages share.
package testutil

import (
	"bytes"
	"sync"
)

// A Buffer is a bytes.Buffer that goroutines may write while a test reads
// it: a process's stderr, a daemon's log.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
