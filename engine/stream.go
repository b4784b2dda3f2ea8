package engine

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
)

// ndjsonType is the media type of the session's streams: one JSON object
// per line, flushed as it is written.
const ndjsonType = "application/x-ndjson"

func wantsStream(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), ndjsonType)
}

// An ndjson writes a stream of JSON lines. The status is always 200 once the
// stream started; a failure is its last line: {"error": Error}.
type ndjson struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	started bool
	closed  bool // the handler returned: w must not be touched
}

// errStreamClosed is what writing to a stream whose request ended gives.
var errStreamClosed = errors.New("the stream has ended")

// close ends the stream for late writers (a question's goroutine): once
// the handler returns, its ResponseWriter must not be used.
func (s *ndjson) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

func newNDJSON(w http.ResponseWriter) *ndjson { return &ndjson{w: w} }

func (s *ndjson) line(v any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errStreamClosed
	}
	if !s.started {
		s.w.Header().Set("Content-Type", ndjsonType)
		s.w.WriteHeader(http.StatusOK)
		s.started = true
	}
	var data []byte
	if raw, ok := v.(rawLine); ok {
		data = raw
	} else {
		var err error
		if data, err = marshalVerbatim(v); err != nil {
			return err
		}
	}
	if _, err := s.w.Write(append(data, '\n')); err != nil {
		return err
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}

// A rawLine is a line written as it is, already JSON.
type rawLine []byte

// end writes the last line: {"result": v} or {"error": e}.
func (s *ndjson) end(v any, err error) {
	if err != nil {
		s.line(newWireError(sessionError(err), err))
		return
	}
	if res, ok := v.(*CallResult); ok && res != nil {
		b := append(make([]byte, 0, len(res.Result)+140), `{"result":`...)
		s.line(rawLine(append(res.appendJSON(b), '}')))
		return
	}
	s.line(map[string]any{"result": v})
}

func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return errorf(KindInternal, "", "%v", err)
}

// serveEvents streams a watch as JSON lines until the client goes away.
func (d *Daemon) serveEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := &WatchRequest{
		Filter:          EventFilter{Servers: q["server"], Types: q["type"], Stderr: q.Get("stderr") == "1"},
		Subscribe:       q["subscribe"],
		SubscribeServer: q.Get("subscribeServer"),
		LogLevel:        q.Get("logLevel"),
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-d.stopped:
			cancel()
		case <-ctx.Done():
		}
	}()
	stream := newNDJSON(w)
	defer stream.close()
	err := d.engine.Watch(ctx, req, func(ev Event) error { return stream.line(ev) })
	if err != nil && ctx.Err() == nil {
		if stream.started {
			stream.end(nil, err)
		} else {
			writeError(w, err)
		}
	}
}
