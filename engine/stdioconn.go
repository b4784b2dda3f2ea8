package engine

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// stdioConn is the connection to a stdio server: one JSON-RPC message per
// line each way. It stands in for the SDK's IOTransport, which decodes each
// incoming message four times (once to find its end, once as a possible
// batch, once as a message, once more for its method), three of them with a
// fresh 32 KiB buffer: most of a session's garbage under load. Here each
// line is decoded once, by [jsonLines.next].
type stdioConn struct {
	lines *jsonLines
	stdin io.WriteCloser

	// A goroutine reads, so that Read can give up when its context ends or
	// the connection closes, as the SDK's connections do.
	incoming chan lineMsgs
	closed   chan struct{}
	queue    []jsonrpc.Message // the rest of a batch; only Read's goroutine

	// writing holds the one write under way: a write waits for it only as
	// long as its context lets it.
	writing   chan struct{}
	closeOnce sync.Once
	closeErr  error

	// probe watches the server/discover the SDK opens with (probe.go);
	// probing: one was written, so that reads look for its answer.
	probe   discoverProbe
	probing atomic.Bool
	// probeOff: no stand-in, the server's answer is waited for (it once
	// answered after one); set before the connection is used.
	probeOff bool
}

type lineMsgs struct {
	msgs []jsonrpc.Message
	err  error
}

func newStdioConn(lines *jsonLines, stdin io.WriteCloser) *stdioConn {
	c := &stdioConn{lines: lines, stdin: stdin, incoming: make(chan lineMsgs), closed: make(chan struct{}), writing: make(chan struct{}, 1)}
	go c.readLoop()
	return c
}

func (c *stdioConn) readLoop() {
	defer c.lines.end() // nothing more is read: see awaitStdout
	for {
		var in lineMsgs
		in.msgs, in.err = c.lines.next()
		select {
		case c.incoming <- in:
		case <-c.closed:
			return
		}
		if in.err != nil {
			return
		}
	}
}

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.read(ctx)
		if err != nil || !c.probing.Load() {
			return msg, err
		}
		drop, settled := c.probe.drop(msg)
		if settled {
			// Answered in time, or its late answer dropped: the
			// connection's other reads are left alone.
			c.probing.Store(false)
		}
		if !drop {
			return msg, nil
		}
	}
}

func (c *stdioConn) read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		msg := c.queue[0]
		c.queue = c.queue[1:]
		return msg, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case in := <-c.incoming:
		if in.err != nil {
			select {
			case <-c.closed:
				// Closed here: the read loop's error is the close's
				// doing (a closed pipe), and the end is EOF.
				return nil, io.EOF
			default:
			}
			return nil, in.err
		}
		c.queue = in.msgs[1:]
		return in.msgs[0], nil
	}
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "server/discover" || !req.IsCall() || c.probeOff {
		return c.write(ctx, msg)
	}
	answered := c.probe.arm(req.ID)
	c.probing.Store(true)
	err := c.write(ctx, msg)
	if err == nil {
		c.probe.watch(req.ID, answered, c.stdin, c.closed, func(answer jsonrpc.Message) bool {
			select {
			case c.incoming <- lineMsgs{msgs: []jsonrpc.Message{answer}}:
				return true
			case <-c.closed:
				return false
			}
		})
	}
	return err
}

func (c *stdioConn) write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	select {
	case c.writing <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err() // another's write is under way; this one never began
	case <-c.closed:
		return io.ErrClosedPipe
	}
	dw, ok := c.stdin.(interface{ SetWriteDeadline(time.Time) error })
	if !ok || ctx.Done() == nil {
		_, err = c.stdin.Write(data)
		<-c.writing
		return err
	}
	// A write blocks while the server does not read its stdin; the caller
	// may give up on it then. Its message is not cut short, which would
	// end the connection for every other caller: the rest of it is written
	// in the background, and later writes wait for that.
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		dw.SetWriteDeadline(time.Now())
		close(fired)
	})
	n, err := c.stdin.Write(data)
	if stop() {
		<-c.writing
		return err
	}
	<-fired
	dw.SetWriteDeadline(time.Time{}) // for the writes after this one
	switch {
	case !errors.Is(err, os.ErrDeadlineExceeded):
		<-c.writing
		return err // written whole, or failed for its own reason
	case n == 0:
		<-c.writing
		return ctx.Err() // nothing of it went: it is not sent at all
	}
	go func() {
		c.stdin.Write(data[n:])
		<-c.writing
	}()
	return ctx.Err()
}

// Close closes the server's stdin (asking it to exit) and stdout.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		// Marked closed first: a Read that meets the read loop's error
		// (the closed pipe) tells it apart as the close's, and ends with
		// EOF (it gave the pipe's error when it came before the mark).
		close(c.closed)
		c.closeErr = errors.Join(c.lines.Close(), c.stdin.Close())
	})
	return c.closeErr
}

func (c *stdioConn) SessionID() string { return "" }
