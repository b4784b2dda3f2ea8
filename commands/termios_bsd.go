//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package commands

import "golang.org/x/sys/unix"

const (
	ioctlGetTermios = unix.TIOCGETA
	ioctlSetTermios = unix.TIOCSETA
	ioctlUnread     = 0x4004667f // FIONREAD, _IOR('f', 127, int), which x/sys/unix lacks here
	pollReadHangup  = 0          // no POLLRDHUP: a socket's half-close is not seen
)
