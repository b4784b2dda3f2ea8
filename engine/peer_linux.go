package engine

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// peerCredOf asks the kernel who is at the other end of c.
func peerCredOf(c net.Conn) peerCred {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return peerCred{UID: -1, Err: fmt.Errorf("not a unix socket connection (%T)", c)}
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return peerCred{UID: -1, Err: err}
	}
	pc := peerCred{UID: -1}
	cerr := raw.Control(func(fd uintptr) {
		cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err != nil {
			pc.Err = fmt.Errorf("SO_PEERCRED: %w", err)
			return
		}
		pc.UID, pc.PID = int(cred.Uid), int(cred.Pid)
	})
	if cerr != nil {
		pc.Err = cerr
	}
	return pc
}
