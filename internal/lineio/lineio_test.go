package lineio

import (
	"bufio"
	"strings"
	"testing"
)

func TestReadLineTail(t *testing.T) {
	for _, c := range []struct {
		in         string
		max, tmax  int
		line, tail string
		cut        bool
	}{
		{"abc\nrest", 3, 2, "abc", "", false},
		{"abcd\nrest", 3, 2, "abc", "d", true},
		{"abcdefgh\nrest", 3, 2, "abc", "gh", true},
		{"abcdefgh", 3, 0, "abc", "", true},
		{"ab", 3, 2, "ab", "", false},
	} {
		// A small buffer, so lines span several reads.
		br := bufio.NewReaderSize(strings.NewReader(c.in), 16)
		line, tail, cut, _ := ReadLineTail(br, c.max, c.tmax)
		if string(line) != c.line || string(tail) != c.tail || cut != c.cut {
			t.Errorf("%q: got %q %q %v, want %q %q %v", c.in, line, tail, cut, c.line, c.tail, c.cut)
		}
	}
}
