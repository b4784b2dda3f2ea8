package engine

import (
	"context"
	"slices"
	"strings"
)

// A WatchRequest is what a watch follows.
type WatchRequest struct {
	Filter EventFilter
	// Subscribe holds resource URIs to subscribe to for the life of the
	// watch, routed as reads are, or to SubscribeServer. A watch with
	// subscriptions is sent the updates of those URIs only, not those of
	// other watches' subscriptions.
	Subscribe       []string
	SubscribeServer string
	// LogLevel, when set, is held on the watched servers that log for the
	// watch's life: each is set to the most verbose level its live watches
	// hold, and log messages below LogLevel are not passed to this watch.
	// A server not running when the watch begins is set when it starts.
	LogLevel string
}

// Watch follows events until ctx ends or fn returns an error (which Watch
// then returns); the events it holds when ctx ends, which came before,
// are handed to fn first. It returns nil too when the engine is closed under it:
// ctx.Err() tells that from ctx's end. It first holds the subscriptions and sets the log level,
// then calls fn with an [EventReady] event, then with each event. A nil
// req follows every event, as a zero WatchRequest does. A server or an
// event type in req.Filter that does not exist is an error.
func (e *Engine) Watch(ctx context.Context, req *WatchRequest, fn func(Event) error) error {
	if req == nil {
		req = &WatchRequest{}
	}
	return e.WatchFrom(ctx, e.Events(req.Filter), req, fn)
}

// checkServers refuses a name that is not a server: what it asks of that
// server would silently not happen.
func (e *Engine) checkServers(names []string) error {
	for _, name := range names {
		if _, err := e.lookup(name); err != nil {
			return err
		}
	}
	return nil
}

// WatchFrom is [Engine.Watch] on a subscription taken earlier, so that a
// watch can begin with events from before it was set up, such as those of
// the servers' start (subscribe, [Engine.Start], then WatchFrom).
// req.Filter is not applied again. WatchFrom closes sub.
func (e *Engine) WatchFrom(ctx context.Context, sub *Subscription, req *WatchRequest, fn func(Event) error) error {
	if sub == nil {
		return errorf(KindUsage, "", "WatchFrom was called with a nil *Subscription").hint("take one with Engine.Events")
	}
	if fn == nil {
		sub.Close()
		return errorf(KindUsage, "", "Watch was called with a nil func(Event) error").hint("pass the function each event is handed to")
	}
	defer sub.Close()
	if req == nil {
		req = &WatchRequest{}
	}
	// A server or an event type that is not there would be watched in
	// silence.
	if err := e.checkServers(req.Filter.Servers); err != nil {
		return err
	}
	if err := CheckEventTypes(req.Filter.Types); err != nil {
		return err
	}
	for _, uri := range req.Subscribe {
		release, err := e.SubscribeResource(ctx, uri, req.SubscribeServer)
		if err != nil {
			return err
		}
		defer release()
	}
	if req.LogLevel != "" {
		release, err := e.holdLogLevel(ctx, req.LogLevel, req.Filter.Servers...)
		if err != nil {
			return err
		}
		defer release()
	}
	// Stamped with when the subscription began, not now: the events it
	// holds from before this line (a start's, without a session) are later.
	if err := fn(Event{Time: sub.since, Type: EventReady}); err != nil {
		return err
	}
	deliver := func(ev Event) error {
		if ev.Type == EventLog && req.LogLevel != "" && below(ev.Level, req.LogLevel) {
			return nil // for another watch, which asked for more
		}
		if ev.Type == EventResourceUpdated && len(req.Subscribe) > 0 && !req.follows(ev) {
			return nil // another watch's subscription
		}
		return fn(ev)
	}
	for {
		select {
		case <-ctx.Done():
			// What the subscription holds came before ctx ended, and
			// is handed on: the last events of a start that failed, for
			// a watch its failure ends.
			for n := len(sub.C); n > 0; n-- {
				if err := deliver(<-sub.C); err != nil {
					return err
				}
			}
			return nil
		case ev, ok := <-sub.C:
			if !ok {
				return nil
			}
			if err := deliver(ev); err != nil {
				return err
			}
		}
	}
}

// follows reports whether the update ev is of a resource the watch
// subscribed to, or of a sub-resource of one (the spec lets a server say
// file:///dir/a.txt changed to a client that subscribed to file:///dir).
func (req *WatchRequest) follows(ev Event) bool {
	if req.SubscribeServer != "" && ev.Server != req.SubscribeServer {
		return false
	}
	return slices.ContainsFunc(req.Subscribe, func(uri string) bool {
		rest, under := strings.CutPrefix(ev.URI, uri)
		return under && (rest == "" || strings.HasSuffix(uri, "/") || strings.ContainsRune("/#?", rune(rest[0])))
	})
}
