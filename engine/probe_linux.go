package engine

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// unreadBytes is how much of what was written to w (a pipe) its reader has
// yet to read; known is false when that cannot be told.
func unreadBytes(w io.Writer) (n int, known bool) {
	f, ok := w.(*os.File)
	if !ok {
		return 0, false
	}
	sc, err := f.SyscallConn()
	if err != nil {
		return 0, false
	}
	var ioErr error
	if err := sc.Control(func(fd uintptr) { n, ioErr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil || ioErr != nil {
		return 0, false
	}
	return n, true
}
