package commands

import (
	"context"
	"fmt"
	"sync"

	"github.com/mcpctl/mcpctl/engine"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serve relays resource subscriptions: while any client is subscribed to a
// URI, a watch of the host holds the subscription on the server that has
// the resource (routed as reads are), and each update it reports is sent
// to the subscribed clients. The SDK server keeps which client follows
// which URI; the hub counts them per URI, so that the server is told once.

// A relay is one URI's watch and the clients subscribed to it.
type relay struct {
	clients map[*mcp.ServerSession]bool
	cancel  context.CancelFunc // ends the watch, and with it the subscription
	ready   chan struct{}      // closed once the watch holds it, or failed
	err     error              // why it failed, set before ready closes
}

// subscriptions is the hub's relays, by URI, and the clients it follows to
// their end (the SDK forgets a client's subscriptions when it goes, without
// an unsubscribe).
type subscriptions struct {
	mu       sync.Mutex
	relays   map[string]*relay
	followed map[*mcp.ServerSession]bool
	running  sync.WaitGroup // relays' watches, waited for when serve stops
}

// subscribe is the SDK server's SubscribeHandler.
func (hb *hub) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri, client := req.Params.URI, req.Session
	if _, hidden := hb.subscribeServer(uri); hidden {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("no server serve offers has the resource %s", uri)}
	}
	subs := &hb.subs
	subs.mu.Lock()
	if subs.relays == nil {
		subs.relays, subs.followed = map[string]*relay{}, map[*mcp.ServerSession]bool{}
	}
	r := subs.relays[uri]
	if r == nil {
		r = &relay{clients: map[*mcp.ServerSession]bool{}, ready: make(chan struct{})}
		subs.relays[uri] = r
		var wctx context.Context
		wctx, r.cancel = context.WithCancel(hb.ctx)
		subs.running.Go(func() { hb.relay(wctx, uri, r) })
	}
	r.clients[client] = true
	if !subs.followed[client] {
		subs.followed[client] = true
		go func() {
			client.Wait()
			hb.forget(client)
		}()
	}
	subs.mu.Unlock()
	select {
	case <-r.ready:
	case <-ctx.Done():
		hb.drop(uri, r, client)
		return ctx.Err()
	}
	if r.err != nil {
		return rpcError(r.err) // the relay is gone already
	}
	return nil
}

// unsubscribe is the SDK server's UnsubscribeHandler.
func (hb *hub) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	hb.leave(req.Params.URI, req.Session)
	return nil
}

// leave takes client off uri's relay.
func (hb *hub) leave(uri string, client *mcp.ServerSession) {
	hb.subs.mu.Lock()
	r := hb.subs.relays[uri]
	hb.subs.mu.Unlock()
	if r != nil {
		hb.drop(uri, r, client)
	}
}

// drop takes client off r, uri's relay if it still is, and ends r when
// no client is left on it.
func (hb *hub) drop(uri string, r *relay, client *mcp.ServerSession) {
	subs := &hb.subs
	subs.mu.Lock()
	defer subs.mu.Unlock()
	if subs.relays[uri] != r {
		return
	}
	delete(r.clients, client)
	if len(r.clients) == 0 {
		delete(subs.relays, uri)
		r.cancel()
	}
}

// forget takes a client that went off every relay.
func (hb *hub) forget(client *mcp.ServerSession) {
	subs := &hb.subs
	subs.mu.Lock()
	delete(subs.followed, client)
	var uris []string
	for uri, r := range subs.relays {
		if r.clients[client] {
			uris = append(uris, uri)
		}
	}
	subs.mu.Unlock()
	for _, uri := range uris {
		hb.leave(uri, client)
	}
}

// relay holds the subscription to uri through a watch until ctx ends, and
// sends each of its updates to the clients subscribed. Events the watch
// lost (its reader fell behind) may have held one: an update is sent for
// them, as one too many does no harm. A watch that ends takes the relay
// with it: its clients get no more updates (serve is ending: its host is
// gone), and a later subscriber starts another.
func (hb *hub) relay(ctx context.Context, uri string, r *relay) {
	// On the server serve reads it from: two may list it, or have a
	// template that matches it.
	server, _ := hb.subscribeServer(uri)
	req := &engine.WatchRequest{Filter: engine.EventFilter{Types: []string{engine.EventResourceUpdated}}, Subscribe: []string{uri}, SubscribeServer: server}
	readied := false
	updated := func() { hb.srv.ResourceUpdated(hb.ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}) }
	err := hb.h.Watch(ctx, req, func(ev engine.Event) error {
		switch {
		case ev.Type == engine.EventReady:
			readied = true
			close(r.ready)
		case ev.Type == engine.EventResourceUpdated && ev.URI == uri, ev.Type == engine.EventDropped:
			updated()
		}
		return nil
	})
	r.cancel()
	hb.subs.mu.Lock()
	if hb.subs.relays[uri] == r {
		delete(hb.subs.relays, uri)
	}
	hb.subs.mu.Unlock()
	if readied {
		return
	}
	// It never held the subscription: those waiting get why.
	switch {
	case err != nil:
		r.err = err
	case ctx.Err() != nil:
		r.err = ctx.Err()
	default:
		r.err = sessionEnded(nil)
	}
	close(r.ready)
}
