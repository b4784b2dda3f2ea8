// Package lineio reads lines of bounded length: a server's stdout and
// stderr in the engine, a client's stdin in serve.
package lineio

import (
	"bufio"
	"bytes"
)

// ReadLine reads one line of at most max bytes (newline excluded). The rest
// of a longer line is read and dropped, and cut is set.
func ReadLine(br *bufio.Reader, max int) (line []byte, cut bool, err error) {
	line, _, cut, err = ReadLineTail(br, max, 0)
	return line, cut, err
}

// ReadLineTail is ReadLine that also returns up to tailMax bytes from the
// end of what it dropped of a cut line.
func ReadLineTail(br *bufio.Reader, max, tailMax int) (line, tail []byte, cut bool, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		if !cut {
			n := len(frag)
			// max bytes fit, and a newline after them.
			if room := max - len(line); n > room && !(n == room+1 && frag[room] == '\n') {
				n, cut = room, true
			}
			line = append(line, frag[:n]...)
			frag = frag[n:]
		}
		if cut && tailMax > 0 {
			tail = append(tail, bytes.TrimSuffix(frag, []byte("\n"))...)
			if len(tail) > tailMax {
				tail = append(tail[:0], tail[len(tail)-tailMax:]...)
			}
		}
		if err != bufio.ErrBufferFull {
			return bytes.TrimSuffix(line, []byte("\n")), tail, cut, err
		}
	}
}
