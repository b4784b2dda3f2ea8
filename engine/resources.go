package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/mcpctl/mcpctl/schemas"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ReadResource reads a resource from the server that lists its URI, or whose
// template matches it, or from req.Server. Answers come from the cache when
// fresh, even when the server is down (not once [Engine.Stop] stopped it:
// that drops them).
func (e *Engine) ReadResource(ctx context.Context, req *ResourceRequest) (*ResourceResult, error) {
	if req == nil {
		return nil, nilRequest("ReadResource", "ResourceRequest")
	}
	if err := badRequest("ReadResource", "ResourceRequest", req.TimeoutMs, 0); err != nil {
		return nil, err
	}
	if err := e.open(); err != nil {
		return nil, err // a cached answer too: the engine holds nothing after Close
	}
	s, err := e.route(ctx, req.URI, req.Server)
	if err != nil {
		return nil, err
	}
	var res *ResourceResult
	err = e.retrying(ctx, readTries(req.TimeoutMs), s, func(ctx context.Context) (err error) {
		res, err = e.readOnce(ctx, s, req)
		return err
	})
	if err != nil && req.Server != "" {
		nearURIs(s, req.URI, err)
	}
	return res, deadlineError(err, s.cfg().Name, "reading "+req.URI)
}

// nearURIs adds a did-you-mean to err, server s's refusal of a read of uri
// it was named for, when s lists no such URI and has no template matching
// it: without --server, routing would have said so.
func nearURIs(s *server, uri string, err error) {
	var me *Error
	var werr *jsonrpc.Error
	if !errors.As(err, &me) || me.Kind != KindProtocol || !errors.As(err, &werr) {
		return
	}
	sn := s.lastOffer()
	if sn == nil || slices.ContainsFunc(sn.templates, func(t *Template) bool { return t.Match(uri) }) {
		return
	}
	uris := make([]string, 0, len(sn.resources))
	for _, r := range sn.resources {
		if r.URI == uri {
			return
		}
		uris = append(uris, r.URI)
	}
	if near := schemas.Closest(uri, uris); len(near) > 0 {
		me.Candidates = near
		me.hint("did you mean %s?", strings.Join(near, " or "))
	}
	me.hint("see its resources with: mcpctl resources %s", s.cfg().Name)
}

func (e *Engine) readOnce(ctx context.Context, s *server, req *ResourceRequest) (*ResourceResult, error) {
	params := &mcp.ReadResourceParams{URI: req.URI}
	key := cacheKey(s.cfg().Name, "resources/read", params)
	// A fresh answer is given whatever the server's state (see promptOnce).
	if !req.NoCache {
		if raw, ok := e.cache.get(key); ok {
			return &ResourceResult{Server: s.cfg().Name, URI: req.URI, Result: raw, Cached: true}, nil
		}
	}
	h, err := s.acquireWithin(ctx, req.TimeoutMs)
	if err != nil {
		return nil, err
	}
	s = h.s // the server a reload put in its place, perhaps
	defer h.release()
	defer s.askers.add(h.reader(req.Caller))()
	unanswered := s.unanswered.Load()
	raw, err := h.doFor(ctx, "resources/read", "reading "+req.URI, req.TimeoutMs, func(ctx context.Context) (any, error) {
		return h.cs.ReadResource(ctx, params)
	})
	if err != nil {
		return nil, err
	}
	if !hasArray(raw, "contents") { // see promptOnce
		return nil, brokenResult(s.cfg().Name, "resources/read", "contents")
	}
	if s.unanswered.Load() == unanswered { // see promptOnce
		e.cache.put(key, s.cfg().Name, "resources/read", req.URI, raw, readTTL(raw, s.cfg().CacheTTL, newProtocol(h.cs)))
	}
	return &ResourceResult{Server: s.cfg().Name, URI: req.URI, Result: raw}, nil
}

// readTTL is how long a read's answer raw is kept: the config's cacheTTL,
// or less when a server of 2026-07-28 or later says in its ttlMs that the
// answer is fresh for less (0: not at all). Before that version ttlMs
// means nothing (the go-sdk's servers send 0 whatever they mean).
func readTTL(raw json.RawMessage, cacheTTL time.Duration, modern bool) time.Duration {
	if !modern {
		return cacheTTL
	}
	ms, err := members(raw)
	if err != nil {
		return cacheTTL
	}
	for _, m := range slices.Backward(ms) { // the last, as hasArray and a decoder read
		var n float64
		if m.key == "ttlMs" && json.Unmarshal(m.value, &n) == nil && n >= 0 {
			if n >= float64(cacheTTL.Milliseconds()) {
				return cacheTTL // and no overflow of a huge one
			}
			return time.Duration(n * float64(time.Millisecond))
		}
	}
	return cacheTTL
}
