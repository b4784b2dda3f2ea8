package commands

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Over HTTP, a client can go without a DELETE (killed, its machine gone),
// and the SDK never notices: it runs its calls on (a dropped request is
// not a cancelled one), holds the questions they ask it, and keeps its
// subscriptions until an idle timeout that an open event stream does not
// even pause. serve follows each client's requests instead. A call whose
// own POST dropped is cancelled at once (below). One whose last open
// request ended because its connection dropped (an event stream, a call
// in flight) gets clientGoneGrace to come back, as a live client's event
// stream reconnects at once; after it, what it still has under way is
// cancelled and its MCP session closed. One that went idle otherwise,
// with no request or stream open, is closed after clientIdle. A client
// closed so gets 404 on its next request, on which the spec has it start
// a new session.
//
// A call whose own HTTP request dropped is cancelled at once, whether or
// not its client is still there: serve keeps no event store, so the
// stream cannot be resumed and the result has nowhere to go (the SDK
// rejects it). MCP 2026-07-28 makes a dropped stream the cancellation.
const (
	clientGoneGrace = 30 * time.Second
	clientIdle      = time.Hour
)

// presence follows serve's HTTP clients by MCP session.
type presence struct {
	grace, idle time.Duration
	closing     func(client, why string) // told of each session closed here

	mu       sync.Mutex
	clients  map[string]*httpClient // by Mcp-Session-Id
	posts    map[string]bool        // HTTP POSTs under way, by their postHeader
	lastPost uint64
}

// postHeader tells track which HTTP POST brought a request: the SDK hands
// a request's handler its HTTP request's header, and nothing else of it.
// serve sets it on every POST, over any value the client sent.
const postHeader = "Mcpctl-Serve-Post"

// httpClient is one MCP session of serve over HTTP.
type httpClient struct {
	ss     *mcp.ServerSession
	open   int // HTTP requests under way: calls, event streams
	closed bool
	timer  *time.Timer
	armed  int                            // which arming of timer is current
	why    string                         // what the armed timer would close it for
	calls  map[*context.CancelFunc]string // the requests under way, with the POST each came by
}

// cancelCalls cancels the session's requests under way (p.mu held).
func (c *httpClient) cancelCalls() {
	for cancel := range c.calls {
		(*cancel)()
	}
}

func newPresence(grace, idle time.Duration, closing func(client, why string)) *presence {
	return &presence{grace: grace, idle: idle, closing: closing, clients: map[string]*httpClient{}, posts: map[string]bool{}}
}

// track is the SDK server's receiving middleware: it learns each session
// of an HTTP client at its first message and makes its requests
// cancellable.
func (p *presence) track(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if ss == nil || ss.ID() == "" { // stdio: its client's end is end of input
			return next(ctx, method, req)
		}
		var post string
		if extra := req.GetExtra(); extra != nil && extra.Header != nil && !strings.HasPrefix(method, "notifications/") {
			// A notification's POST is answered before it is handled.
			post = extra.Header.Get(postHeader)
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if !p.begin(ss, &cancel, post) {
			return nil, errors.New("mcpctl serve closed this MCP session: its client had gone")
		}
		defer p.end(ss.ID(), &cancel)
		return next(ctx, method, req)
	}
}

// begin registers a request of ss that came by post, learning ss if it
// is new; false if ss was closed as gone. A request whose POST already
// ended is cancelled: a POST with a request in it ends before the
// request's answer only when its connection drops.
func (p *presence) begin(ss *mcp.ServerSession, cancel *context.CancelFunc, post string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	id := ss.ID()
	c := p.clients[id]
	if c == nil {
		c = &httpClient{ss: ss, calls: map[*context.CancelFunc]string{}}
		p.clients[id] = c
		go func() {
			ss.Wait()
			p.forget(id, c)
		}()
	}
	if c.closed {
		return false
	}
	c.calls[cancel] = post
	if post != "" && !p.posts[post] {
		(*cancel)()
	}
	return true
}

func (p *presence) end(id string, cancel *context.CancelFunc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.clients[id]; c != nil {
		delete(c.calls, cancel)
	}
}

// forget drops a session that closed (a DELETE, or closed here).
func (p *presence) forget(id string, c *httpClient) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.clients[id] == c {
		delete(p.clients, id)
	}
	if c.timer != nil {
		c.timer.Stop()
	}
}

// handler counts each session's HTTP requests on their way through next,
// and starts a session's clock when its last one ends.
func (p *presence) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		post := ""
		if r.Method == http.MethodPost {
			post = p.postBegins()
			r.Header.Set(postHeader, post)
		}
		id := r.Header.Get("Mcp-Session-Id")
		if id != "" {
			p.opened(id, r.Method == http.MethodDelete)
		}
		next.ServeHTTP(w, r)
		// The server's context is not the request's: a request whose
		// context ended before the handler returned lost its client. A
		// POST lost it only if a request of it was still unanswered: a
		// client may close its connection as soon as it has read the
		// last answer, and it is no less there for that.
		dropped := r.Context().Err() != nil
		if post != "" {
			dropped = p.postEnds(post, dropped)
		}
		if id == "" {
			// A new session's first request: it has its id now.
			if id = w.Header().Get("Mcp-Session-Id"); id == "" {
				return
			}
			p.opened(id, false)
		}
		p.closedRequest(id, dropped)
	})
}

func (p *presence) postBegins() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastPost++
	post := strconv.FormatUint(p.lastPost, 10)
	p.posts[post] = true
	return post
}

// postEnds forgets a POST; one that dropped has its requests under way
// cancelled. It reports whether there were any: a POST whose requests
// were all answered lost nothing when its connection closed.
func (p *presence) postEnds(post string, dropped bool) (cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.posts, post)
	if !dropped {
		return false
	}
	for _, c := range p.clients {
		for cancel, of := range c.calls {
			if of == post {
				(*cancel)()
				cut = true
			}
		}
	}
	return cut
}

// opened counts a request of session id (one not seen, or not served by
// serve, is not counted: a made-up id must not take memory). A DELETE
// ends the session, which waits for its calls: they are cancelled, as
// their results have nowhere to go.
func (p *presence) opened(id string, ending bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.clients[id]
	if c == nil {
		return
	}
	c.open++
	c.armed++
	if c.timer != nil {
		c.timer.Stop()
	}
	if ending {
		c.cancelCalls()
	}
}

func (p *presence) closedRequest(id string, dropped bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.clients[id]
	if c == nil || c.open == 0 {
		return
	}
	if c.open--; c.open > 0 || c.closed {
		return
	}
	wait := p.idle
	c.why = fmt.Sprintf("no request for %v", wait)
	if dropped {
		wait = p.grace
		c.why = fmt.Sprintf("its connection dropped and it did not come back within %v", wait)
	}
	c.armed++
	armed := c.armed
	c.timer = time.AfterFunc(wait, func() { p.expire(id, c, armed) })
}

// expire closes c, session id, unless a request came since it was armed:
// its requests are cancelled first (closing waits for them).
func (p *presence) expire(id string, c *httpClient, armed int) {
	p.mu.Lock()
	if p.clients[id] != c || c.armed != armed || c.open > 0 || c.closed {
		p.mu.Unlock()
		return
	}
	c.closed = true
	c.cancelCalls()
	why := c.why
	p.mu.Unlock()
	name := "a client"
	if ip := c.ss.InitializeParams(); ip != nil && ip.ClientInfo != nil && ip.ClientInfo.Name != "" {
		name = ip.ClientInfo.Name
	}
	c.ss.Close()
	p.closing(name, why)
}
