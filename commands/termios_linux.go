package commands

import "golang.org/x/sys/unix"

const (
	ioctlGetTermios = unix.TCGETS
	ioctlSetTermios = unix.TCSETS
	ioctlUnread     = unix.TIOCINQ // FIONREAD
)
