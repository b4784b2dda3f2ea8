package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/schemas"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The lists a server offers, by the name list_changed uses for them.
const (
	listTools     = "tools"
	listPrompts   = "prompts"
	listResources = "resources" // resources and resource templates
)

// A snapshot is what one server offers. It is never changed once built; a
// refresh builds a new one.
type snapshot struct {
	tools        []*Tool
	toolByName   map[string]*Tool
	hiddenTools  map[string]string // tool name → why the config hides it
	prompts      []*Prompt
	promptByName map[string]*Prompt
	resources    []*Resource
	templates    []*Template
	// unlisted are the lists not asked for yet (Options.LazyLists): fill
	// lists them on first use.
	unlisted []string
	// failed are the lists (by method: "prompts/list") the server answered
	// with an error: its tools and other lists still serve, and a list
	// that leaves them out says why.
	failed map[string]*Error
}

// failures returns why the server could not give list ("" for any), in
// the order of its methods.
func (sn *snapshot) failures(list string) []*Error {
	var out []*Error
	for _, m := range []string{"prompts/list", "resources/list", "resources/templates/list"} {
		if e := sn.failed[m]; e != nil && (list == "" || listOf(m) == list) {
			out = append(out, e)
		}
	}
	return out
}

// unlistedFailed is sn with each list it has yet to list failed with err,
// and still to list: a lazy listing that timed out or lost its server says
// so, where it listed nothing.
func (sn *snapshot) unlistedFailed(ctx context.Context, name string, timeout time.Duration, err error) *snapshot {
	c := *sn
	c.failed = maps.Clone(sn.failed)
	if c.failed == nil {
		c.failed = map[string]*Error{}
	}
	for _, l := range sn.unlisted {
		method := l + "/list"
		var e *Error
		switch {
		case ctx.Err() == context.DeadlineExceeded:
			e = errorf(KindTimeout, name, "server %s did not answer %s within %s", name, method, timeout).
				hint("it may be busy or stuck; its log may say more: mcpctl logs %s", name)
		case errors.As(err, &e):
			e = e.clone()
		default:
			e = errorf(KindUnavailable, name, "server %s could not list its %s: %v", name, l, err).
				hint("its log may say more: mcpctl logs %s", name)
		}
		c.failed[method] = e.wrap(err)
	}
	return &c
}

// listOf names the list a list method gives.
func listOf(method string) string {
	if method == "prompts/list" {
		return listPrompts
	}
	return listResources
}

// listFailed records a list's error answer in sn, and reports whether it
// did: only an error the server answered with is kept (its other lists
// serve); a broken connection or a caller gone fails the whole listing.
func (s *server) listFailed(ctx context.Context, sn *snapshot, method string, err error) bool {
	var werr *jsonrpc.Error
	var perr *pagingError
	name := s.cfg().Name
	switch {
	case ctx.Err() != nil:
		return false
	case errors.As(err, &perr):
		sn.failed[method] = errorf(KindProtocol, name, "%s", perr.msg).
			hint("its pagination is broken (tell its authors); its tools and its other lists still serve")
	case errors.As(err, &werr):
		what := strings.TrimSuffix(strings.ReplaceAll(method, "/", " "), " list")
		if what == "resources templates" {
			what = "resource templates"
		}
		sn.failed[method] = errorf(KindProtocol, name, "server %s could not list its %s: it answered %s with error %d: %s", name, what, method, werr.Code, s.cfg().Redact(werr.Message)).
			hint("its tools and its other lists still serve; its log may say more: mcpctl logs %s", name).wrap(err)
	default:
		return false
	}
	s.log.Warn("listing failed", "method", method, "error", sn.failed[method].Message)
	return true
}

// listed records that method answered in sn: an earlier failure is gone.
func (sn *snapshot) listed(method string) { delete(sn.failed, method) }

func (sn *snapshot) toolCount() int {
	if sn == nil {
		return 0
	}
	return len(sn.tools)
}

func (sn *snapshot) names(list string) []string {
	var out []string
	switch list {
	case listTools:
		for _, t := range sn.tools {
			out = append(out, t.Name())
		}
	case listPrompts:
		for _, p := range sn.prompts {
			out = append(out, p.Name())
		}
	case listResources:
		for _, r := range sn.resources {
			out = append(out, r.URI)
		}
		for _, t := range sn.templates {
			out = append(out, t.URITemplate)
		}
	}
	return out
}

// hidden says why the config hides a tool of the server, or "" when it
// offers it: includeTools keeps only the tools matching one of its globs,
// then excludeTools drops those matching one of its.
func (s *server) hidden(tool string) string {
	match := func(globs []string) string {
		for _, g := range globs {
			if ok, _ := path.Match(g, tool); ok {
				return g
			}
		}
		return ""
	}
	if len(s.cfg().IncludeTools) > 0 && match(s.cfg().IncludeTools) == "" {
		return fmt.Sprintf("matches no glob of %s (%s)", s.cfg().FieldName("includeTools"), s.cfg().Where("includeTools"))
	}
	if g := match(s.cfg().ExcludeTools); g != "" {
		return fmt.Sprintf("matches %q of %s (%s)", s.cfg().Redact(g), s.cfg().FieldName("excludeTools"), s.cfg().Where("excludeTools"))
	}
	return ""
}

// unknownTool explains a tool name the server does not offer: hidden by the
// config, or unknown.
func unknownTool(cfg *config.Server, sn *snapshot, server, tool string) *Error {
	if why, ok := sn.hiddenTools[tool]; ok {
		e := errorf(KindUsage, server, "tool %s.%s is hidden by the config: it %s", server, tool, why).
			hint("%s to use it", changeFilters(cfg, server))
		e.TellsHidden = true
		return e
	}
	e := unknownName("tool", server+"."+tool, server, sn.names(listTools))
	if len(e.Candidates) == 0 {
		// A near name the config hides is the likelier meaning.
		hidden := slices.Sorted(maps.Keys(sn.hiddenTools))
		switch near := schemas.Closest(tool, hidden); {
		case len(near) > 0:
			e.Hint = []string{fmt.Sprintf("%s.%s is near, but hidden by the config: it %s; %s to use it",
				server, near[0], sn.hiddenTools[near[0]], changeFilters(cfg, server))}
			e.TellsHidden = true
		case len(hidden) > 0 && len(sn.names(listTools)) == 0:
			// Not "offers no tools": it offers them, and the config hides them.
			e.Hint = []string{fmt.Sprintf("the config hides every tool of server %s (%d): %s to use them",
				server, len(hidden), changeFilters(cfg, server))}
			e.TellsHidden = true
		}
	}
	return e
}

// TellsHidden reports whether err tells of tools the config hides (a name
// it hides, or one near it): the config's author's business, which a
// proxy keeps from its clients.
func TellsHidden(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.TellsHidden
}

// changeFilters is the advice to change the server's tool filters, in its
// file's own field names.
func changeFilters(cfg *config.Server, server string) string {
	return fmt.Sprintf("change %s/%s of server %s", cfg.FieldName("includeTools"), cfg.FieldName("excludeTools"), server)
}

// list lists every page of each list the server has the capability for,
// starting from base; only lists named in only are listed again (all when
// only is empty). Callers hold s.refreshMu, or have the server to
// themselves (while it starts).
func (s *server) list(ctx context.Context, cs *mcp.ClientSession, conn *captureConn, base *snapshot, only ...string) (*snapshot, error) {
	caps := &mcp.ServerCapabilities{}
	if ir := cs.InitializeResult(); ir != nil && ir.Capabilities != nil {
		caps = ir.Capabilities
	}
	want := func(list string) bool { return len(only) == 0 || slices.Contains(only, list) }
	sn := *base
	sn.unlisted = slices.DeleteFunc(slices.Clone(sn.unlisted), want)
	sn.failed = maps.Clone(base.failed)
	if sn.failed == nil {
		sn.failed = map[string]*Error{}
	}
	cctx, cp := withCapture(ctx)
	defer conn.release(cp)
	if want(listTools) && caps.Tools != nil {
		var keys []string
		for t, err := range paged(cctx, s.cfg(), "tools/list", func(ctx context.Context, c string) (*mcp.ListToolsResult, error) {
			return cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: c})
		}, func(r *mcp.ListToolsResult) ([]*mcp.Tool, string) { return r.Tools, r.NextCursor }) {
			if err != nil {
				return nil, &listError{"tools/list", err}
			}
			keys = append(keys, t.Name)
		}
		raws := s.rawList(cp, "tools/list", "tools", "name", keys)
		sn.tools, sn.toolByName, sn.hiddenTools = nil, map[string]*Tool{}, map[string]string{}
		for _, raw := range raws {
			t, err := newTool(s.cfg().Name, raw)
			if err != nil {
				continue
			}
			if why := s.hidden(t.Tool); why != "" {
				sn.hiddenTools[t.Tool] = why
				continue
			}
			sn.tools = append(sn.tools, t)
			sn.toolByName[t.Tool] = t
		}
	}
	// each gathers one list's keys; false: the list failed, and is kept
	// as it was (none, at a start) with why.
	each := func(method string, items iter.Seq2[string, error]) (keys []string, ok bool, err error) {
		var lerr error
		for k, err := range items {
			if err != nil {
				lerr = err
				break
			}
			keys = append(keys, k)
		}
		var werr *jsonrpc.Error
		if method == "resources/templates/list" && errors.As(lerr, &werr) && werr.Code == jsonrpc.CodeMethodNotFound {
			lerr = nil // a server with resources and no templates may not answer it
		}
		if lerr == nil {
			sn.listed(method)
			return keys, true, nil
		}
		if s.listFailed(ctx, &sn, method, lerr) {
			// Asked again at the next listing: the failure may pass. Not
			// pages that never end, which would cost up to maxPages at
			// every listing: their failure stays until the list changes
			// (list_changed) or the server starts again.
			var paging *pagingError
			if l := listOf(method); !slices.Contains(sn.unlisted, l) && !errors.As(lerr, &paging) {
				sn.unlisted = append(sn.unlisted, l)
			}
			return nil, false, nil
		}
		return nil, false, &listError{method, lerr}
	}
	if want(listPrompts) && caps.Prompts != nil {
		keys, ok, err := each("prompts/list", keysOf(paged(cctx, s.cfg(), "prompts/list", func(ctx context.Context, c string) (*mcp.ListPromptsResult, error) {
			return cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: c})
		}, func(r *mcp.ListPromptsResult) ([]*mcp.Prompt, string) { return r.Prompts, r.NextCursor }), func(p *mcp.Prompt) string { return p.Name }))
		if err != nil {
			return nil, err
		}
		if ok {
			sn.prompts, sn.promptByName = nil, map[string]*Prompt{}
			for _, raw := range s.rawList(cp, "prompts/list", "prompts", "name", keys) {
				if p, err := newItem(s.cfg().Name, raw, "name", func(server, name string, raw json.RawMessage) *Prompt {
					return &Prompt{Server: server, Prompt: name, raw: raw}
				}); err == nil {
					sn.prompts = append(sn.prompts, p)
					sn.promptByName[p.Prompt] = p
				}
			}
		}
	}
	if want(listResources) && caps.Resources != nil {
		keys, ok, err := each("resources/list", keysOf(paged(cctx, s.cfg(), "resources/list", func(ctx context.Context, c string) (*mcp.ListResourcesResult, error) {
			return cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: c})
		}, func(r *mcp.ListResourcesResult) ([]*mcp.Resource, string) { return r.Resources, r.NextCursor }), func(r *mcp.Resource) string { return r.URI }))
		if err != nil {
			return nil, err
		}
		if ok {
			sn.resources = nil
			for _, raw := range s.rawList(cp, "resources/list", "resources", "uri", keys) {
				if r, err := newItem(s.cfg().Name, raw, "uri", func(server, uri string, raw json.RawMessage) *Resource {
					return &Resource{Server: server, URI: uri, raw: raw}
				}); err == nil {
					sn.resources = append(sn.resources, r)
				}
			}
		}
		keys, ok, err = each("resources/templates/list", keysOf(paged(cctx, s.cfg(), "resources/templates/list", func(ctx context.Context, c string) (*mcp.ListResourceTemplatesResult, error) {
			return cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: c})
		}, func(r *mcp.ListResourceTemplatesResult) ([]*mcp.ResourceTemplate, string) {
			return r.ResourceTemplates, r.NextCursor
		}), func(t *mcp.ResourceTemplate) string { return t.URITemplate }))
		if err != nil {
			return nil, err
		}
		if ok {
			sn.templates = nil
			for _, raw := range s.rawList(cp, "resources/templates/list", "resourceTemplates", "uriTemplate", keys) {
				if t, err := newItem(s.cfg().Name, raw, "uriTemplate", func(server, tmpl string, raw json.RawMessage) *Template {
					return &Template{Server: server, URITemplate: tmpl, raw: raw}
				}); err == nil {
					sn.templates = append(sn.templates, t)
				}
			}
		}
	}
	return &sn, nil
}

// A listError is a list that failed a whole listing (a start): the
// method tells what the server did not answer.
type listError struct {
	method string
	err    error
}

func (e *listError) Error() string { return e.err.Error() }
func (e *listError) Unwrap() error { return e.err }

// maxPages bounds the pages of one list: a server whose cursors never end
// (a new one each time) must not hold a start or a listing for good.
const maxPages = 1000

// A pagingError is a list whose pages never end: a server gave a cursor
// it had given before, or more than maxPages pages.
type pagingError struct{ msg string }

func (e *pagingError) Error() string { return e.msg }

// paged is every item of a list, page after page, as the SDK's iterators
// give them, but stopped with a pagingError where those loop for good.
func paged[R any, T any](ctx context.Context, cfg *config.Server, method string, list func(context.Context, string) (R, error), page func(R) ([]T, string)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		seen := map[string]int{}
		cursor := ""
		for n := 1; ; n++ {
			res, err := list(ctx, cursor)
			if err != nil {
				yield(zero, err)
				return
			}
			items, next := page(res)
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			if first, ok := seen[next]; ok {
				yield(zero, &pagingError{fmt.Sprintf("server %s's %s never ends: page %d gave the cursor page %d gave (%q)", cfg.Name, method, n, first, truncate(cfg.Redact(next), 40))})
				return
			}
			if n == maxPages {
				yield(zero, &pagingError{fmt.Sprintf("server %s's %s did not end within %d pages", cfg.Name, method, maxPages)})
				return
			}
			seen[next], cursor = n, next
		}
	}
}

// keysOf is a list's items as their keys, and its error.
func keysOf[T any](items iter.Seq2[T, error], key func(T) string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for it, err := range items {
			k := ""
			if err == nil {
				k = key(it)
			}
			if !yield(k, err) {
				return
			}
		}
	}
}

// rawList returns the raw objects for keys, in order. They come from the
// pages just captured, or, when the SDK answered from its cache (2026-07-28
// servers), from the pages seen last time. A key the server listed twice
// or more is given once, as it listed it first (what a call or get by that
// name reaches), and a key that is empty (an item without its name or URI)
// is dropped: either is logged, once for the list.
func (s *server) rawList(cp *capture, method, list, key string, keys []string) []json.RawMessage {
	seen := s.rawItems[method]
	if seen == nil {
		seen = map[string]json.RawMessage{}
		s.rawItems[method] = seen
	}
	// The first object of each key in these pages, which replaces what
	// earlier pages had for it.
	fresh := map[string]json.RawMessage{}
	for _, page := range cp.all(method) {
		var p map[string]json.RawMessage
		var items []json.RawMessage
		if json.Unmarshal(page.result, &p) != nil || json.Unmarshal(p[list], &items) != nil {
			continue
		}
		for _, raw := range items {
			if k := stringField(raw, key); k != "" && fresh[k] == nil {
				fresh[k] = append(json.RawMessage(nil), raw...)
			}
		}
	}
	maps.Copy(seen, fresh)
	out := make([]json.RawMessage, 0, len(keys))
	given := make(map[string]int, len(keys)) // times listed
	var twice []string
	nameless := 0
	for _, k := range keys {
		if k == "" {
			nameless++
			continue
		}
		switch given[k]++; given[k] {
		case 1:
			if raw := seen[k]; raw != nil {
				out = append(out, raw)
			}
		case 2:
			twice = append(twice, k)
		}
	}
	s.listedBadly(method, key, twice, nameless)
	return out
}

// listedBadly logs what rawList left out of a list: the keys it listed
// more than once (the first kept), and the count of items without a key.
func (s *server) listedBadly(method, key string, twice []string, nameless int) {
	if len(twice) > 0 {
		redacted := make([]string, len(twice))
		for i, k := range twice {
			redacted[i] = s.cfg().Redact(k)
		}
		s.log.Warn("listed more than once, the first kept", "list", method, key+"s", redacted)
	}
	if nameless > 0 {
		s.log.Warn("listed without a key, dropped", "list", method, "key", key, "count", nameless)
	}
}

// A refreshKey names a list of one connection to a server (a restarted
// server's new connection queues anew).
type refreshKey struct {
	cs   *mcp.ClientSession
	list string
}

// listChanged refreshes one list after the server said it changed, then
// tells watchers what came and went. It returns at once: it is called on
// the connection's read loop.
func (s *server) listChanged(list string) {
	s.mu.Lock()
	cs, conn, life := s.cs, s.conn, s.life
	s.mu.Unlock()
	if cs == nil {
		return
	}
	switch list {
	case listPrompts:
		s.e.cache.invalidate(s.cfg().Name, "prompts/get")
	case listResources:
		s.e.cache.invalidate(s.cfg().Name, "resources/read")
	}
	// While a refresh of this list is queued and not yet begun, a
	// list_changed is covered by it: a storm of notifications costs a
	// refresh or two, not one each (and listings, which wait for
	// refreshes, are not held up by thousands).
	key := refreshKey{cs, list}
	s.mu.Lock()
	if s.queued[key] {
		s.mu.Unlock()
		return
	}
	if s.queued == nil {
		s.queued = map[refreshKey]bool{}
	}
	s.queued[key] = true
	if s.refreshing == 0 {
		s.settled = make(chan struct{})
	}
	s.refreshing++
	s.mu.Unlock()
	go func() {
		defer func() {
			s.mu.Lock()
			if s.refreshing--; s.refreshing == 0 {
				close(s.settled)
			}
			s.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(life, s.requestTimeout(0))
		defer cancel()
		// Refreshes take turns, each from the snapshot the last one left,
		// so two lists changing at once do not undo each other.
		s.refreshMu.Lock()
		defer s.refreshMu.Unlock()
		// From here on a new notification may say more than this
		// refresh will see: it queues another.
		s.mu.Lock()
		delete(s.queued, key)
		prev := s.snap
		s.mu.Unlock()
		if prev == nil {
			return
		}
		sn, err := s.list(ctx, cs, conn, prev, list)
		if err != nil {
			s.log.Warn("refreshing a changed list failed", "list", list, "error", err)
			return
		}
		s.mu.Lock()
		if s.cs != cs {
			s.mu.Unlock()
			return
		}
		s.snap = sn
		s.mu.Unlock()
		added, removed := diff(prev.names(list), sn.names(list))
		s.log.Info("list changed", "list", list, "added", len(added), "removed", len(removed))
		s.e.bus.publish(Event{Type: EventListChanged, Server: s.cfg().Name, List: list, Added: added, Removed: removed})
	}()
}

func diff(before, after []string) (added, removed []string) {
	for _, n := range after {
		if !slices.Contains(before, n) {
			added = append(added, n)
		}
	}
	for _, n := range before {
		if !slices.Contains(after, n) {
			removed = append(removed, n)
		}
	}
	return added, removed
}

// fill lists what a server started with Options.LazyLists has not listed
// yet, and returns its snapshot.
func (s *server) fill() *snapshot {
	s.mu.Lock()
	sn, cs, conn, life := s.snap, s.cs, s.conn, s.life
	s.mu.Unlock()
	if sn == nil || len(sn.unlisted) == 0 || cs == nil {
		return sn
	}
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	s.mu.Lock()
	sn = s.snap // filled or refreshed meanwhile, perhaps
	s.mu.Unlock()
	if sn == nil || len(sn.unlisted) == 0 || s.cs != cs {
		return sn
	}
	ctx, cancel := context.WithTimeout(life, s.requestTimeout(0))
	defer cancel()
	next, err := s.list(ctx, cs, conn, sn, sn.unlisted...)
	if err != nil {
		s.log.Warn("listing failed", "lists", sn.unlisted, "error", err)
		// Said, not listed as empty; asked again at the next listing.
		next = sn.unlistedFailed(ctx, s.cfg().Name, s.requestTimeout(0), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cs == cs {
		s.snap = next
	}
	return next
}

// offer returns the server's snapshot for listing: current when it is ready,
// its last known one marked stale when it is unavailable.
func (s *server) offer() (sn *snapshot, stale bool, err error) {
	s.fill()
	s.mu.Lock()
	if s.refreshing > 0 {
		ch := s.settled
		s.mu.Unlock()
		waitDone(ch, s.requestTimeout(0))
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	switch {
	case s.state == StateReady || s.state == StateDegraded:
		return s.snap, false, nil
	case s.state == StateUnavailable && s.snap != nil:
		return s.snap, true, nil
	case s.snap != nil && s.lc.idled:
		// Stopped for want of use: what it offered is what it offers.
		return s.snap, false, nil
	case !s.lc.held && (s.state == StateStarting || s.state == StateStopping) && (s.snap != nil || s.offered != nil):
		// Starting again (for a request, after an idle stop, by hand) or
		// stopping not by hand: what it offered is still what it offers,
		// not a gap in the lists.
		if s.snap != nil {
			return s.snap, false, nil
		}
		return s.offered, false, nil
	}
	return nil, false, s.unavailableLocked()
}

// lastOffer is offer for routing a request: when the server cannot
// answer (unavailable, stopped by hand), it returns what it offered last,
// so that a request for it meets the server's own error rather than "no
// server offers it".
func (s *server) lastOffer() *snapshot {
	if sn, _, err := s.offer(); err == nil {
		return sn
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.snap != nil {
		return s.snap
	}
	return s.offered
}

// unknown reports whether a server that starts on use has never been
// listed: a lazy or transient server not yet started.
func (s *server) unknown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.snap != nil || !s.startsOnUseLocked() {
		return false
	}
	// A transient server is started for each request, one whose last
	// start failed too (see acquire): a listing tries it again as well.
	return s.state == StateStopped || s.state == StateUnavailable && s.transientRetriesLocked()
}

// known starts such a server (and a transient one stops again) so that
// its lists are known, and returns why it could not start.
func (s *server) known() error {
	h, err := s.acquire(context.Background())
	if err != nil {
		return err
	}
	// Lists left for later (Options.LazyLists) are asked now: a transient
	// server stops at release, and they would be lost.
	s.fill()
	h.release()
	return nil
}

// knowAll makes known, in parallel, those of servers that start on use
// and were never listed (see known), and returns the errors of those that
// could not start. It waits until ctx ends at most: a start, which its
// first caller runs whatever its context, goes on to be known later.
func knowAll(ctx context.Context, servers []*server) map[*server]error {
	type started struct {
		s   *server
		err error
	}
	done := make(chan started, len(servers))
	n := 0
	for _, s := range servers {
		if s.unknown() {
			n++
			go func() { done <- started{s, s.known()} }()
		}
	}
	failed := map[*server]error{}
	for ; n > 0; n-- {
		select {
		case r := <-done:
			if r.err != nil {
				failed[r.s] = r.err
			}
		case <-ctx.Done():
			return failed // the caller gave up: no news of the others
		}
	}
	return failed
}

// stale returns copies of items marked stale, or items as they are.
func stale[T any](items []*T, isStale bool, mark func(*T)) []*T {
	if !isStale {
		return items
	}
	out := make([]*T, len(items))
	for i, it := range items {
		c := *it
		mark(&c)
		out[i] = &c
	}
	return out
}

// each runs fn on the snapshot of every server that has one (for "") or of
// the named server, in config order. For "", unlisted says which servers
// could not start to say what they offer, never listed (nil when none):
// the caller returns what the others offer with it.
func (e *Engine) each(name string, wait bool, fn func(s *server, sn *snapshot, stale bool)) (unlisted *Error, err error) {
	if err := e.open(); err != nil {
		return nil, err
	}
	if name != "" {
		s, err := e.lookup(name)
		if err != nil {
			return nil, err
		}
		if s.unknown() {
			s.known()
		}
		if wait {
			s.settle()
		}
		sn, isStale, err := s.offer()
		if err != nil {
			return nil, err
		}
		fn(s, sn, isStale)
		return nil, nil
	}
	servers := e.all()
	failed := knowAll(context.Background(), servers)
	for _, s := range servers {
		if wait {
			s.settle()
		}
	}
	waiting := 0
	for _, s := range servers {
		sn, isStale, err := s.offer()
		if err == nil {
			fn(s, sn, isStale)
		} else if _, ok := failed[s]; !ok && s.failedUnlisted() {
			failed[s] = err // its start failed before: said again, not tried again
		} else if s.autoStarts() && s.currentState() == StateStopped {
			waiting++
		}
	}
	if waiting > 0 && !e.started.Load() {
		// A Go program that lists before it starts would see nothing
		// of those servers (only of those that start on use), and no
		// error.
		return nil, errorf(KindUsage, "", "no server is started: Engine.Start was never called, and servers start on use only with activation lazy or transient").
			hint("call Engine.Start before listing what the servers offer")
	}
	return unlistedError(servers, failed), nil
}

// settle waits for a start under way of a server that has offered nothing
// yet: one a Start, a restart or a reload is about to make (the server is
// stopped or unavailable, say behind its dependencies), or its first
// start. A listing then has its items, or its failure, instead of leaving
// it out in silence. The wait is bounded by what the start may take (its
// tries, each within startupTimeout, and a stop before them): a listing
// has no context to end it.
func (s *server) settle() {
	s.mu.Lock()
	var ch chan struct{}
	switch {
	case (s.state == StateStopped || s.state == StateUnavailable) && s.lc.byHandRestart != nil && s.snap == nil && s.offered == nil:
		ch = s.lc.byHandRestart
	case s.state == StateStarting && s.snap == nil && s.offered == nil:
		ch = s.starting
	}
	bound := time.Duration(retryTries)*(s.startupTimeout()+backoff(retryTries)) + s.shutdownTimeout()
	s.mu.Unlock()
	if ch != nil {
		waitDone(ch, bound)
	}
}

// failedUnlisted reports whether a server failed to start and has no
// lists to show: it offers nothing, for want of a start (one that starts
// on use, one a reload added, one a command without a session could not
// start, one started again by hand after a stop, which let its lists go).
func (s *server) failedUnlisted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snap == nil && s.state == StateUnavailable
}

// unlistedError says which of servers (in their order) failed to start to
// be listed, or is nil.
func unlistedError(servers []*server, failed map[*server]error) *Error {
	var names []string
	var errs []error
	var remote bool // of the one left out
	for _, s := range servers {
		if err, ok := failed[s]; ok {
			names = append(names, s.cfg().Name)
			errs = append(errs, err)
			remote = !s.cfg().IsStdio()
		}
	}
	switch len(names) {
	case 0:
		return nil
	case 1:
		// Its start's error as a command naming the server gets it: the
		// server's last words in stderr and stdout, not in the message.
		why := errs[0].Error()
		var start *Error
		if errors.As(errs[0], &start) {
			why = start.Message
		}
		e := errorf(KindUnavailable, names[0], "the list leaves out server %s: it could not start: %s", names[0], why)
		if start != nil {
			e.Stderr, e.Stdout = start.Stderr, start.Stdout
			e.startTimedOut = StartTimedOut(errs[0])
		}
		if remote && start != nil {
			// It has no log (no stderr): what its start said to do.
			e.Hint = slices.Clone(start.Hint)
			return e.hint("the other servers' items are listed")
		}
		return e.hint("the other servers' items are listed; see the server's state and log with: mcpctl status; mcpctl logs %s", names[0])
	}
	e := errorf(KindUnavailable, "", "the list leaves out servers %s: they could not start", strings.Join(names, ", "))
	for i, n := range names {
		e.hint("%s: %s", n, errs[i].Error())
	}
	return e.hint("the other servers' items are listed; see their states with: mcpctl status")
}

// withFailures is the error of a list that leaves out, besides the servers
// that could not start (unlisted), lists servers answered with an error.
func withFailures(unlisted *Error, failures []*Error) *Error {
	switch {
	case len(failures) == 0:
		return unlisted
	case unlisted != nil:
		for _, f := range failures {
			unlisted.hint("%s", f.Message)
		}
		return unlisted
	case len(failures) == 1:
		return failures[0].clone() // the snapshot's own is not changed
	}
	var servers []string
	for _, f := range failures {
		if !slices.Contains(servers, f.Server) {
			servers = append(servers, f.Server)
		}
	}
	var e *Error
	if len(servers) == 1 {
		e = errorf(KindProtocol, servers[0], "%d lists of server %s are left out: it answered them with an error", len(failures), servers[0])
	} else {
		e = errorf(KindProtocol, "", "%d lists of servers %s are left out: they answered them with an error", len(failures), strings.Join(servers, ", "))
	}
	for _, f := range failures {
		e.hint("%s", f.Message)
	}
	if len(servers) == 1 {
		return e.hint("its tools and other lists still serve; see its log with: mcpctl logs %s", servers[0])
	}
	return e.hint("their tools and other lists still serve; see their logs with: mcpctl logs SERVER")
}

// partial is out with unlisted, the error of a list some servers are left
// out of (see [Engine.Tools]); nil stays an untyped nil error.
func partial[T any](out T, unlisted *Error) (T, error) {
	if unlisted != nil {
		return out, unlisted
	}
	return out, nil
}

// Tools lists tools: filter is "" for every server's, a server name for its
// tools, or server.tool for one tool. The tools of an unavailable server
// are its last known ones, marked stale. When a server that was never
// listed could not start (one that starts on use, one a reload added),
// Tools returns the others' with an error ([KindUnavailable]) that names
// it: a non-nil list with an error is a partial one. A server whose start
// is under way and that has listed nothing yet ([Engine.StartAsync], a
// restart, a reload) is waited for. Before [Engine.Start] it returns a
// usage error that says so, unless every server starts on use. Prompts,
// Resources and Inspect do the same. The items are the
// engine's own, shared with every caller and not copied: read them, do
// not change them (nor the bytes Raw returns).
func (e *Engine) Tools(filter string) ([]*Tool, error) { return e.tools(filter, true) }

// tools is Tools; with wait, a server whose start is under way is waited
// for (see settle).
func (e *Engine) tools(filter string, wait bool) ([]*Tool, error) {
	srvName, toolName, oneTool, err := splitFilter(filter, "tool")
	if err != nil {
		return nil, err
	}
	out := []*Tool{}
	unlisted, err := e.each(srvName, wait, func(s *server, sn *snapshot, isStale bool) {
		tools := sn.tools
		if oneTool {
			tools = nil
			if t := sn.toolByName[toolName]; t != nil {
				tools = []*Tool{t}
			}
		}
		out = append(out, stale(tools, isStale, func(t *Tool) { t.Stale = true })...)
	})
	if err != nil {
		return nil, err
	}
	if oneTool && len(out) == 0 {
		s, _ := e.lookup(srvName)
		sn, _, _ := s.offer()
		return nil, unknownTool(s.cfg(), sn, srvName, toolName)
	}
	return partial(out, unlisted)
}

// Prompts lists prompts: filter is "", a server, or server.prompt.
func (e *Engine) Prompts(filter string) ([]*Prompt, error) { return e.prompts(filter, true) }

// prompts is Prompts; with wait, a server whose start is under way is waited
// for (see settle).
func (e *Engine) prompts(filter string, wait bool) ([]*Prompt, error) {
	srvName, promptName, onePrompt, err := splitFilter(filter, "prompt")
	if err != nil {
		return nil, err
	}
	out := []*Prompt{}
	var failures []*Error
	unlisted, err := e.each(srvName, wait, func(s *server, sn *snapshot, isStale bool) {
		failures = append(failures, sn.failures(listPrompts)...)
		prompts := sn.prompts
		if onePrompt {
			prompts = nil
			if p := sn.promptByName[promptName]; p != nil {
				prompts = []*Prompt{p}
			}
		}
		out = append(out, stale(prompts, isStale, func(p *Prompt) { p.Stale = true })...)
	})
	if err != nil {
		return nil, err
	}
	if onePrompt && len(out) == 0 {
		if len(failures) > 0 {
			return nil, failures[0].clone() // the prompt may be there, unlisted
		}
		s, _ := e.lookup(srvName)
		sn, _, _ := s.offer()
		return nil, unknownName("prompt", filter, srvName, sn.names(listPrompts))
	}
	return partial(out, withFailures(unlisted, failures))
}

// Resources is the resources and resource templates of the servers.
type Resources struct {
	Resources []*Resource `json:"resources"`
	Templates []*Template `json:"resourceTemplates"`
}

// Resources lists the resources and templates of every server, or of one.
func (e *Engine) Resources(name string) (*Resources, error) { return e.resources(name, true) }

// resources is Resources; with wait, a server whose start is under way is waited
// for (see settle).
func (e *Engine) resources(name string, wait bool) (*Resources, error) {
	out := &Resources{Resources: []*Resource{}, Templates: []*Template{}}
	var failures []*Error
	unlisted, err := e.each(name, wait, func(s *server, sn *snapshot, isStale bool) {
		failures = append(failures, sn.failures(listResources)...)
		out.Resources = append(out.Resources, stale(sn.resources, isStale, func(r *Resource) { r.Stale = true })...)
		for _, t := range sn.templates {
			if isStale {
				t = &Template{Server: t.Server, URITemplate: t.URITemplate, Stale: true, raw: t.raw}
			}
			out.Templates = append(out.Templates, t)
		}
	})
	if err != nil {
		return nil, err
	}
	return partial(out, withFailures(unlisted, failures))
}

// An Inspection is everything one server declared.
type Inspection struct {
	Name            string          `json:"name"`
	State           State           `json:"state"`
	Stale           bool            `json:"stale,omitempty"`
	ProtocolVersion string          `json:"protocolVersion,omitempty"`
	ServerInfo      json.RawMessage `json:"serverInfo,omitempty"`
	Capabilities    json.RawMessage `json:"capabilities,omitempty"`
	Instructions    string          `json:"instructions,omitempty"`
	Tools           []*Tool         `json:"tools"`
	Prompts         []*Prompt       `json:"prompts"`
	Resources       []*Resource     `json:"resources"`
	Templates       []*Template     `json:"resourceTemplates"`
	// ListErrors are the lists the server answered with an error, by
	// method ("prompts/list"): their items above are none, not known.
	ListErrors map[string]string `json:"listErrors,omitempty"`
}

// Inspect reports everything each server (or the named one) declared: its
// info, the protocol version, its capabilities and instructions as sent,
// and its lists.
func (e *Engine) Inspect(name string) ([]*Inspection, error) { return e.inspect(name, true) }

// inspect is Inspect; with wait, a server whose start is under way is waited
// for (see settle).
func (e *Engine) inspect(name string, wait bool) ([]*Inspection, error) {
	out := []*Inspection{}
	var failures []*Error
	unlisted, err := e.each(name, wait, func(s *server, sn *snapshot, isStale bool) {
		failures = append(failures, sn.failures("")...)
		out = append(out, s.inspection(sn, isStale))
	})
	if err != nil {
		return nil, err
	}
	return partial(out, withFailures(unlisted, failures))
}

// Listed is [Engine.Inspect] of every server that has listed what it
// offers, as it last did: it starts no server, so one that starts on use
// and never ran is left out. For lookups that must not start anything,
// such as completing a word at a shell's TAB.
func (e *Engine) Listed() ([]*Inspection, error) {
	if err := e.open(); err != nil {
		return nil, err
	}
	out := []*Inspection{}
	for _, s := range e.all() {
		if s.unknown() {
			continue
		}
		if sn, isStale, err := s.offer(); err == nil {
			out = append(out, s.inspection(sn, isStale))
		}
	}
	return out, nil
}

// inspection is what server s declared, with sn, what it offers.
func (s *server) inspection(sn *snapshot, isStale bool) *Inspection {
	s.mu.Lock()
	in := &Inspection{Name: s.cfg().Name, State: s.state, Stale: isStale, ProtocolVersion: s.protocol}
	var init map[string]json.RawMessage
	json.Unmarshal(s.initRaw, &init)
	in.Capabilities = init["capabilities"]
	in.ServerInfo = init["serverInfo"]
	json.Unmarshal(init["instructions"], &in.Instructions)
	if cs := s.cs; cs != nil && cs.InitializeResult() != nil {
		ir := cs.InitializeResult()
		if in.ServerInfo == nil && ir.ServerInfo != nil {
			in.ServerInfo, _ = marshalVerbatim(ir.ServerInfo)
		}
		if in.Capabilities == nil && ir.Capabilities != nil {
			in.Capabilities, _ = marshalVerbatim(ir.Capabilities)
		}
		if in.Instructions == "" {
			in.Instructions = ir.Instructions
		}
	}
	s.mu.Unlock()
	in.Tools = append([]*Tool{}, stale(sn.tools, isStale, func(t *Tool) { t.Stale = true })...)
	in.Prompts = append([]*Prompt{}, stale(sn.prompts, isStale, func(p *Prompt) { p.Stale = true })...)
	in.Resources = append([]*Resource{}, stale(sn.resources, isStale, func(r *Resource) { r.Stale = true })...)
	for _, f := range sn.failures("") {
		if in.ListErrors == nil {
			in.ListErrors = map[string]string{}
		}
		for m, e := range sn.failed {
			if e == f {
				in.ListErrors[m] = f.Message
			}
		}
	}
	in.Templates = []*Template{}
	for _, t := range sn.templates {
		if isStale {
			t = &Template{Server: t.Server, URITemplate: t.URITemplate, Stale: true, raw: t.raw}
		}
		in.Templates = append(in.Templates, t)
	}
	return in
}
