// Package ctxio gives up on a blocking read when a context ends: a pipe
// whose writer has not closed it, a FIFO nobody opened, which no deadline
// reaches.
package ctxio

import "context"

// Until runs read and returns what it returns, or ctx's error as soon as
// ctx ends; the read is then left blocked, to the process's end.
func Until[T any](ctx context.Context, read func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := read()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
