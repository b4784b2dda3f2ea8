package engine

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/mcpctl/mcpctl/schemas"
)

// route finds the server for a resource URI: the one named, else the one
// that lists the URI, else the one with a template that matches it (see
// Engine.offers for servers that cannot answer).
func (e *Engine) route(ctx context.Context, uri, name string) (*server, error) {
	if uri == "" {
		return nil, errorf(KindUsage, name, "the resource URI is empty").hint("see the resources with: mcpctl resources")
	}
	if name != "" {
		s, err := e.lookup(name)
		if err != nil {
			return nil, err
		}
		// Only a URI with a brace can be a template as written: a read
		// through a named server (serve's every read) looks no further.
		if !strings.Contains(uri, "{") {
			return s, nil
		}
		if sn := s.lastOffer(); sn != nil {
			for _, t := range sn.templates {
				if t.URITemplate == uri {
					// Sent as it is, its braces escaped, it would read nothing.
					return nil, errorf(KindUsage, name, "%s is a template of server %s, not a resource URI", uri, name).
						hint("fill in %s, e.g. with: mcpctl complete '%s' %s ''", braced(t.variables()), uri, firstOr(t.variables(), "NAME"))
				}
			}
		}
		return s, nil
	}
	offers := e.offers(ctx)
	listed := offers.matching(func(sn *snapshot) bool {
		return slices.ContainsFunc(sn.resources, func(r *Resource) bool { return r.URI == uri })
	})
	templated := offers.matching(func(sn *snapshot) bool {
		return slices.ContainsFunc(sn.templates, func(t *Template) bool { return t.Match(uri) })
	})
	candidates := firstOf(listed, templated)
	switch len(candidates) {
	case 1:
		return candidates[0], nil
	case 0:
		err := errorf(KindUsage, "", "no server lists resource %s or has a template that matches it", uri)
		var uris []string
		for _, o := range offers.offers {
			for _, r := range o.sn.resources {
				if !slices.Contains(uris, r.URI) { // two servers may list it
					uris = append(uris, r.URI)
				}
			}
			for _, t := range o.sn.templates {
				if t.URITemplate == uri {
					err.hint("it is a template of server %s: fill in %s", o.s.cfg().Name, braced(t.variables()))
				}
			}
			for _, f := range o.sn.failures(listResources) {
				err.hint("%s; name it to read from it: --server %s", f.Message, o.s.cfg().Name)
			}
		}
		if near := schemas.Closest(uri, uris); len(near) > 0 {
			err.Candidates = near
			err.hint("did you mean %s?", strings.Join(near, " or "))
		}
		return nil, offers.notFound(err.hint("see the resources with: mcpctl resources; or name the server: --server SERVER"))
	}
	return nil, ambiguous(candidates, "resource %s is offered by several servers", uri)
}

// firstOr is the first of list, or def.
func firstOr(list []string, def string) string {
	if len(list) > 0 {
		return list[0]
	}
	return def
}

// braced is a template's variables as written in it: {a}, {b}.
func braced(vars []string) string {
	out := make([]string, len(vars))
	for i, v := range vars {
		out[i] = "{" + v + "}"
	}
	return strings.Join(out, ", ")
}

// An offered is what a server offers for routing, read once per request.
type offered struct {
	s  *server
	sn *snapshot
}

// An offerList is what the servers offer, and why those that start on use
// and could not start offer nothing.
type offerList struct {
	offers []offered
	failed map[*server]error
}

// notFound is err, a request that no server's lists match, with a hint
// for each server that could not start to say what it offers.
func (l offerList) notFound(err *Error) *Error {
	failed := slices.SortedFunc(maps.Keys(l.failed), func(a, b *server) int { return strings.Compare(a.cfg().Name, b.cfg().Name) })
	if len(failed) > 0 {
		// Not known, rather than not there: a server that could not
		// start may offer it (a script may try again, exit 3).
		err.Kind = KindUnavailable
	}
	for _, s := range failed {
		why := l.failed[s].Error()
		if e := (*Error)(nil); errors.As(l.failed[s], &e) {
			why = e.Message // its stderr lines are for its own error
		}
		err.hint("server %s could not start to say what it offers: %s", s.cfg().Name, why)
	}
	return err
}

// offers reads what every server offers for routing a request: what it
// lists now, or for one that cannot answer (unavailable, stopped by hand)
// what it listed last. A server that starts on use and was
// never listed is started to list it first (until ctx ends), as resources
// does, so that a lazy or transient server is found, and a URI two
// servers offer is found ambiguous, whether or not something listed them
// before.
func (e *Engine) offers(ctx context.Context) offerList {
	servers := e.all()
	out := offerList{failed: knowAll(ctx, servers)}
	for _, s := range servers {
		sn := s.lastOffer()
		if sn == nil && s.awaitRestart(ctx) {
			// One a reload replaced (new settings) offers nothing until
			// its start lists it: a read or a subscription meanwhile was
			// told that no server lists its URI.
			sn = s.lastOffer()
		}
		if sn != nil {
			out.offers = append(out.offers, offered{s, sn})
		} else if _, ok := out.failed[s]; !ok && s.failedUnlisted() {
			// Its start failed before it listed anything (one-shot, the
			// others started): what it offers is not known.
			s.mu.Lock()
			out.failed[s] = s.unavailableLocked()
			s.mu.Unlock()
		}
	}
	return out
}

// matching returns the servers whose lists match, in the config's order.
// One that cannot answer counts as its last lists say: which server a
// request goes to, or whether it is ambiguous, does not change with the
// servers' health; routed to one that cannot answer, a request fails with
// that server's own error and hint, not with "no server offers it".
func (l offerList) matching(match func(*snapshot) bool) []*server {
	var out []*server
	for _, o := range l.offers {
		if match(o.sn) {
			out = append(out, o.s)
		}
	}
	return out
}

// firstOf returns the first of lists that is not empty.
func firstOf(lists ...[]*server) []*server {
	for _, l := range lists {
		if len(l) > 0 {
			return l
		}
	}
	return nil
}

// ambiguous is the error for a request that several servers match: what
// (a format and its args) is followed by their names, which --server
// chooses from.
func ambiguous(servers []*server, format string, args ...any) *Error {
	names := make([]string, len(servers))
	for i, s := range servers {
		names[i] = s.cfg().Name
	}
	err := errorf(KindUsage, "", format+": %s", append(args, strings.Join(names, ", "))...)
	err.Candidates = names
	return err.hint("name the server: --server %s", names[0])
}

// templateServer finds the server that has a resource template (see
// Engine.offers for servers that cannot answer).
func (e *Engine) templateServer(ctx context.Context, tmpl, name string) (*server, error) {
	if name != "" {
		return e.lookup(name)
	}
	offers := e.offers(ctx)
	found := offers.matching(func(sn *snapshot) bool {
		return slices.ContainsFunc(sn.templates, func(t *Template) bool { return t.URITemplate == tmpl })
	})
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, offers.notFound(errorf(KindUsage, "", "no server has the resource template %s", tmpl).
			hint("see the templates with: mcpctl resources"))
	}
	return nil, ambiguous(found, "several servers have the resource template %s", tmpl)
}
