package commands

import "golang.org/x/sys/unix"

const (
	ioctlGetTermios = unix.TCGETS
	ioctlSetTermios = unix.TCSETS
	ioctlUnread     = unix.TIOCINQ // FIONREAD
	// pollReadHangup: a socket's peer shut its writing down.
	pollReadHangup = unix.POLLRDHUP
)
