//go:build linux || darwin

package engine

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"time"
)

// peerCred is what the kernel says about the process at the other end of
// a connection to the session's socket.
type peerCred struct {
	UID int   // -1 when unknown
	PID int   // 0 when unknown (macOS does not say)
	Err error // why the kernel could not say
}

// checkPeer lets in only the session's owner: a connection whose peer is of
// another uid, or whose uid cannot be told, is refused with an error that
// says why and what to do.
func checkPeer(c peerCred, owner int) error {
	switch {
	case c.Err != nil:
		return fmt.Errorf("refused a connection: cannot tell which user made it (%v); this session serves only uid %d", c.Err, owner)
	case c.UID != owner:
		who := fmt.Sprintf("uid %d", c.UID)
		if c.PID > 0 {
			who += fmt.Sprintf(" (pid %d)", c.PID)
		}
		return fmt.Errorf("refused a connection from %s: this session belongs to uid %d and serves no other user", who, owner)
	}
	return nil
}

// refuse answers a connection checkPeer refused with the reason, as an
// HTTP 403 carrying the API's error object, and closes it. It reads the
// request first (briefly), so the answer is not lost to a reset.
func refuse(c net.Conn, why error, owner int) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	http.ReadRequest(bufio.NewReader(c))
	body, _ := json.Marshal(map[string]*Error{"error": {
		Kind:    KindUsage,
		Message: why.Error(),
		Hint: []string{
			fmt.Sprintf("run mcpctl as the user who started the session (uid %d)", owner),
			"or use a session of your own: unset MCPCTL_RUNTIME_DIR, or point it at a directory of yours",
		},
	}})
	fmt.Fprintf(c, "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n%s: %s\r\n\r\n%s",
		len(body), VersionHeader, Version(), body)
}
