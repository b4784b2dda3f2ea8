//go:build !linux

package engine

import "context"

// hungUp: without POLLRDHUP, unlessGone waits for the server to notice.
func hungUp(context.Context) (gone, known bool) { return false, false }
