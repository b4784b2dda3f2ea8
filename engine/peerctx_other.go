//go:build !linux && !darwin

package engine

import (
	"context"
	"net"
)

func withPeer(ctx context.Context, _ net.Conn) context.Context { return ctx }

func peerUID(context.Context) *int { return nil }
