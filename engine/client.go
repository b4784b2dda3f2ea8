package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A Client talks to a running session over its unix socket. Its zero value
// is not usable: set Socket (or Dial).
type Client struct {
	// Socket is the session's socket path.
	Socket string
	// Dial, when set, replaces dialling Socket (tests use it).
	Dial func(ctx context.Context) (net.Conn, error)
	// OnVersionMismatch is called once, with the session's version, when
	// it differs from this build's.
	OnVersionMismatch func(sessionVersion string)
	// OnConfigError is called once, with why, when the session says its
	// config file does not load now: it runs the config it had, and what
	// was edited since has not taken effect.
	OnConfigError func(why string)
	// ExpectConfig, when set, names the config files the caller means;
	// OnConfigMismatch is then called once, with the session's own files,
	// when the session runs others.
	ExpectConfig     []string
	OnConfigMismatch func(sessionFiles []string)
	// NoWait makes its lists (Tools, Prompts, Resources, Inspect) what
	// the servers offer now, leaving out a server still starting instead
	// of waiting for it ([NoWaitHeader]): for a caller that follows the
	// lists' changes, as mcpctl serve does.
	NoWait bool
	// Unpooled makes each request on a connection of its own, dialled and
	// read on the calling goroutine and closed with the answer's body. It
	// suits a process that makes a request or two and exits, as the CLI
	// does: a pool's dialling, reading and writing goroutines each cost a
	// new thread in a fresh process (0.6 ms of a 7.5 ms warm call).
	Unpooled bool
	// MaxConns is how many requests a pooled Client has at the session at
	// once, each on a connection of its own (0: 64). More wait for one to
	// end, or for their context. A connection costs the session 50-60 KB:
	// 1000 calls at once held 60-85 MB in a session idling at 19 MB, and
	// 27 MB capped at 64, as fast (docs/performance.md). Streams (Watch,
	// a call with OnProgress, Sampling or Elicitation) and answers to a
	// server's questions are not counted: they last as long as what they
	// follow, and a question must never wait behind other calls.
	MaxConns int

	once    sync.Once
	hc      *http.Client // requests MaxConns counts
	streams *http.Client // streams and answers
	warned  atomic.Bool

	configWarned   atomic.Bool
	mismatchWarned atomic.Bool
	// sessionPID is the session's pid, as the kernel told it at the last
	// dial (0 where it does not say), for watchStopped.
	sessionPID atomic.Int64
}

// defaultMaxConns is MaxConns when it is 0.
const defaultMaxConns = 64

// http returns the HTTP client of a request: streams and answers have a
// pool of their own, uncapped.
func (c *Client) http(stream bool) *http.Client {
	c.once.Do(func() {
		given := c.Dial
		if given == nil {
			given = func(ctx context.Context) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", c.Socket)
			}
		}
		dial := func(ctx context.Context) (net.Conn, error) {
			conn, err := given(ctx)
			if err == nil {
				if _, unix := conn.(*net.UnixConn); unix {
					if pid := peerCredOf(conn).PID; pid > 0 {
						c.sessionPID.Store(int64(pid))
					}
				}
			}
			return conn, err
		}
		if c.Unpooled {
			c.hc = &http.Client{Transport: unpooledTransport{dial}}
			c.streams = c.hc
			return
		}
		max := c.MaxConns
		if max <= 0 {
			max = defaultMaxConns
		}
		// The connections a burst needed are kept for the next instead
		// of dialling each call afresh (the default keeps 2): 1000 calls
		// at once went from 2,400 to 3,100-3,500 calls/s
		// (docs/performance.md). Unused ones close after IdleConnTimeout.
		pool := func(max int) *http.Client {
			return &http.Client{Transport: &http.Transport{
				DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) },
				DisableCompression:  true,
				MaxConnsPerHost:     max,
				MaxIdleConns:        1024,
				MaxIdleConnsPerHost: 1024,
				IdleConnTimeout:     30 * time.Second,
			}}
		}
		c.hc, c.streams = pool(max), pool(0)
	})
	if stream {
		return c.streams
	}
	return c.hc
}

// Close closes the connections the Client keeps open for its next
// requests (a pooled Client holds them, each with two goroutines, until
// 30s idle). Requests under way go on; the Client may still be used, and
// dials afresh.
func (c *Client) Close() error {
	c.http(false).CloseIdleConnections()
	c.streams.CloseIdleConnections()
	return nil
}

// unpooledTransport is the transport of an Unpooled client.
type unpooledTransport struct {
	dial func(ctx context.Context) (net.Conn, error)
}

func (t unpooledTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	conn, err := t.dial(req.Context())
	if err != nil {
		if ctxErr := req.Context().Err(); ctxErr != nil {
			return nil, ctxErr // not "no session": the caller gave up
		}
		return nil, err
	}
	// A cancelled request (Ctrl-C, the end of a watch) ends by closing its
	// connection, whether it is being written or its answer read.
	stop := context.AfterFunc(req.Context(), func() { conn.Close() })
	done := func() {
		stop()
		conn.Close()
	}
	resp, err := func() (*http.Response, error) {
		if err := req.Write(conn); err != nil {
			return nil, err
		}
		return http.ReadResponse(bufio.NewReader(conn), req)
	}()
	if err != nil {
		done()
		if ctxErr := req.Context().Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, err
	}
	resp.Body = &closingBody{ReadCloser: resp.Body, close: done}
	return resp, nil
}

// A closingBody closes its connection with itself. The connection goes
// first: closing a body that is not read to its end reads it to its end,
// and a stream of events has none.
type closingBody struct {
	io.ReadCloser
	close func()
}

func (b *closingBody) Close() error {
	b.close()
	b.ReadCloser.Close() // fails: its connection is closed
	return nil
}

// send makes one request; out, when not nil, receives the JSON answer.
func (c *Client) send(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.do(ctx, method, path, body, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return errorf(KindInternal, "", "bad answer from the session to %s %s: %v", method, path, err)
	}
	if h := resp.Header.Get(PartialHeader); h != "" {
		// A list that leaves some servers out: out holds the others'.
		var unlisted Error
		if err := json.Unmarshal([]byte(h), &unlisted); err != nil || unlisted.Message == "" {
			return errorf(KindInternal, "", "bad answer from the session to %s %s: a %s header that is not an error", method, path, PartialHeader)
		}
		unlisted.startTimedOut = resp.Header.Get(partialTimedOutHeader) == "1"
		return &unlisted
	}
	return nil
}

// do makes one request and returns the response when its status is 200;
// any other status becomes the error the session sent.
func (c *Client) do(ctx context.Context, method, path string, body any, accept string) (*http.Response, error) {
	if c == nil {
		return nil, errorf(KindUsage, "", "a method of a nil *engine.Client was called").hint("make one with &engine.Client{Socket: session.Socket}")
	}
	if c.Socket == "" && c.Dial == nil {
		return nil, errorf(KindUsage, "", "the engine.Client has no Socket (nor Dial)").hint("make one with &engine.Client{Socket: session.Socket}")
	}
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(data)
	}
	// reqCtx is ctx, which watchStopped may also end; the answer's body
	// ends it when closed.
	reqCtx, cancel := context.WithCancelCause(ctx)
	req, err := http.NewRequestWithContext(reqCtx, method, "http://mcpctl"+path, rd)
	if err != nil {
		cancel(nil)
		return nil, err
	}
	req.Header.Set(VersionHeader, Version())
	if len(c.ExpectConfig) > 0 {
		want, _ := json.Marshal(c.ExpectConfig)
		req.Header.Set(ExpectConfigHeader, string(want))
	}
	if id := RequestID(ctx); id != "" {
		req.Header.Set(RequestIDHeader, id)
	}
	if c.NoWait && method == http.MethodGet {
		req.Header.Set(NoWaitHeader, "1")
	}
	req.Header.Set("Accept", accept)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	stopWatch := c.watchStopped(cancel)
	resp, err := c.http(accept == ndjsonType || path == "/"+APIVersion+"/answer").Do(req)
	if err != nil || accept != ndjsonType {
		// An answer is whole once its head is in; a stream is watched
		// until its body is closed.
		stopWatch()
		stopWatch = func() {}
	}
	if err != nil {
		var stopped *Error
		if errors.As(context.Cause(reqCtx), &stopped) && ctx.Err() == nil {
			return nil, stopped
		}
		cancel(nil)
		if isDialError(err) && (errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)) {
			// A socket there that we may not reach is not "no session":
			// it is another user's, or its modes were changed.
			return nil, errorf(KindUsage, "", "cannot connect to the session's socket %s: permission denied", c.Socket).
				hint("the socket or its directory belongs to another user; run mcpctl as that user, or use a session of your own (unset MCPCTL_RUNTIME_DIR, or point it at a directory of yours)").wrap(err)
		}
		if isDialError(err) {
			return nil, &Error{Kind: KindNoSession, Message: fmt.Sprintf("no session is running (socket %s)", c.Socket), err: err}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		why := err
		var ue *url.Error
		if errors.As(err, &ue) {
			why = ue.Err // not `Post "http://mcpctl/v1/…"`: the socket's HTTP is ours
		}
		return nil, errorf(KindUnavailable, "", "the session stopped answering (was it stopped or killed?): %v", why).
			hint("see whether it runs with: mcpctl status; start it again with: mcpctl up").wrap(err)
	}
	if v := resp.Header.Get(VersionHeader); v != Version() && c.OnVersionMismatch != nil && c.warned.CompareAndSwap(false, true) {
		c.OnVersionMismatch(v)
	}
	if msg := resp.Header.Get(ConfigErrorHeader); msg != "" && c.OnConfigError != nil && c.configWarned.CompareAndSwap(false, true) {
		c.OnConfigError(msg)
	}
	if runs := resp.Header.Get(ConfigRunsHeader); runs != "" && c.OnConfigMismatch != nil && c.mismatchWarned.CompareAndSwap(false, true) {
		var files []string
		json.Unmarshal([]byte(runs), &files)
		c.OnConfigMismatch(files)
	}
	if resp.StatusCode != http.StatusOK {
		defer cancel(nil)
		defer stopWatch()
		defer resp.Body.Close()
		var wire wireError
		if json.NewDecoder(resp.Body).Decode(&wire) == nil && wire.Error != nil {
			return nil, wire.error()
		}
		return nil, errorf(KindInternal, "", "the session answered %s %s with %s", method, path, resp.Status)
	}
	resp.Body = &cancellingBody{ReadCloser: resp.Body, ctx: reqCtx, cancel: cancel, stopWatch: stopWatch}
	return resp, nil
}

func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// Status returns the session's state. Stable.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	var st Status
	if err := c.send(ctx, http.MethodGet, "/"+APIVersion+"/status", nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Tools lists tools: filter is "", a server, or server.tool. Stable.
func (c *Client) Tools(ctx context.Context, filter string) ([]*Tool, error) {
	var tools []*Tool
	path := "/" + APIVersion + "/tools"
	if filter != "" {
		path += "?filter=" + url.QueryEscape(filter)
	}
	err := c.send(ctx, http.MethodGet, path, nil, &tools)
	return tools, err // tools with an error: a partial list (see Engine.Tools)
}

// CallTool calls a tool through the session. Stable.
func (c *Client) CallTool(ctx context.Context, req *CallRequest) (*CallResult, error) {
	if req == nil {
		return nil, nilRequest("CallTool", "CallRequest")
	}
	res, err := c.callTool(ctx, req)
	if err != nil {
		server, _, _ := SplitName(req.Name)
		return nil, deadlineError(err, server, "the call to "+req.Name)
	}
	return res, nil
}

func (c *Client) callTool(ctx context.Context, req *CallRequest) (*CallResult, error) {
	if req.OnProgress != nil || req.Sampling != nil || req.Elicitation != nil {
		return c.callStreaming(ctx, req)
	}
	path := "/" + APIVersion + "/tools/call"
	resp, err := c.do(ctx, http.MethodPost, path, req, "application/json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if n := resp.ContentLength; n > 0 && n <= 2*maxMessage {
		body.Grow(int(n))
	}
	if _, err := body.ReadFrom(resp.Body); err != nil {
		return nil, errorf(KindUnavailable, "", "the session stopped answering (was it stopped or killed?): %v", err).wrap(err)
	}
	res, err := parseCallResult(body.Bytes())
	if err != nil {
		return nil, errorf(KindInternal, "", "bad answer from the session to POST %s: %v", path, err)
	}
	return res, nil
}

// parseCallResult reads a CallResult as the session writes it
// ([CallResult.appendJSON]). Its result stays a part of data, neither
// copied nor checked again (the session checked it as it came from the
// server): encoding/json would read a result of megabytes twice.
func parseCallResult(data []byte) (*CallResult, error) {
	ms, err := members(data)
	if err != nil {
		return nil, err
	}
	var r CallResult
	for _, m := range ms {
		switch m.key {
		case "server":
			err = json.Unmarshal(m.value, &r.Server)
		case "tool":
			err = json.Unmarshal(m.value, &r.Tool)
		case "result":
			r.Result = json.RawMessage(m.value)
		case "isError":
			err = json.Unmarshal(m.value, &r.IsError)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.key, err)
		}
	}
	return &r, nil
}

// Shutdown stops every server and then the session; it returns the final
// state once the servers are stopped. Stable.
func (c *Client) Shutdown(ctx context.Context) (*Status, error) {
	var st Status
	if err := c.send(ctx, http.MethodPost, "/"+APIVersion+"/shutdown", nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}
