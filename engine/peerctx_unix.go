//go:build linux || darwin

package engine

import (
	"context"
	"net"
)

type peerKey struct{}

// withPeer keeps, in a connection's context, the uid of the process at its
// other end, for the audit log.
func withPeer(ctx context.Context, c net.Conn) context.Context {
	ctx = context.WithValue(ctx, connKey{}, c)
	if pc := peerCredOf(c); pc.Err == nil && pc.UID >= 0 {
		return context.WithValue(ctx, peerKey{}, pc.UID)
	}
	return ctx
}

// connKey keeps a request's connection, for hungUp.
type connKey struct{}

// peerUID returns the uid withPeer kept, or nil.
func peerUID(ctx context.Context) *int {
	if uid, ok := ctx.Value(peerKey{}).(int); ok {
		return &uid
	}
	return nil
}
