package engine

import (
	"context"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// hungUp reports whether the client of the request whose context is ctx
// has closed its end of the connection (known is false where that cannot
// be told). It polls without reading, so the server's own reader is left
// alone.
func hungUp(ctx context.Context) (gone, known bool) {
	c, ok := ctx.Value(connKey{}).(net.Conn)
	if !ok {
		return false, false
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false, false
	}
	cerr := raw.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		if n, err := unix.Poll(fds, 0); err == nil && n > 0 {
			gone = fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0
		}
		known = true
	})
	return gone, cerr == nil && known
}
