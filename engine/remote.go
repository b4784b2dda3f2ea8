package engine

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK's HTTP transports must not be wrapped: the streamable one keeps
// its session state through a hook only its own connection has. So for
// remote servers mcpctl sees the messages where they cross HTTP instead,
// in a round tripper that does for them what captureConn does on stdio:
// adds what the SDK's types cannot carry, keeps raw results, routes
// progress, and adds the configured headers.
type captureRoundTripper struct {
	base    http.RoundTripper
	conn    *captureConn
	headers map[string]string
	// origins are the server's URL's origin and its https:// upgrade on
	// the same host: the configured headers go to them alone, not to a
	// host a redirect or an SSE endpoint event names. withheld is the
	// first origin they were kept from, for the error a 401 there makes.
	origins  [2]string
	withheld atomic.Pointer[string]
	log      *slog.Logger
	// abort, once done, ends every request, under way or to come: the SDK
	// sends the notifications/cancelled owed, and the DELETE that ends the
	// server's session, with contexts of their own (5 s each), which a
	// server that stopped answering took whole as the connection closed
	// or its start failed.
	abort context.Context
	// refused is the status of the last answer in the 4xx range: a server
	// that refuses streamable HTTP may speak the older SSE transport.
	refused atomic.Int32
	// onStream hears of the server's event stream (a GET): nil when it is
	// opened, the error when it breaks.
	onStream func(error)
	// streamLived, when not 0, is how long the event stream of streamable
	// HTTP must have lived for mcpctl to open it again itself when it
	// ends (sseTee.reopen). standalone is the Done channel of the context
	// it was opened on (standaloneStream).
	streamLived atomic.Int64
	standalone  atomic.Pointer[<-chan struct{}]
	// legacySSE: the connection is over the HTTP+SSE transport.
	legacySSE atomic.Bool
	// reopenWait is how long an event stream that ended may take to open
	// again before the server is degraded (0: 10 s).
	reopenWait time.Duration
	seen       eventIDs
	// warnedBadEvent: an event that is not a JSON-RPC message was logged
	// as a warning, its data through redact; the next ones are debug
	// lines.
	warnedBadEvent atomic.Bool
	redact         func(string) string
	// gate is the OAuth handler of an engine that cannot ask the user,
	// if it has one.
	gate *gate
}

func (t *captureRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	standalone := req.Method == http.MethodGet && t.standaloneStream(req)
	if standalone && !t.legacySSE.Load() {
		// Not HTTP+SSE's: its Connect reads the stream for the endpoint
		// event, and must hear its refusal.
		return t.deferStream(req)
	}
	return t.roundTripAbortable(req, false)
}

// streamHeaderWait is how long the event stream's GET may take to get its
// answer's headers before the SDK is handed a stream that waits for them.
var streamHeaderWait = time.Second

// deferStream opens the event stream (the GET after initialize). The SDK
// opens it inside Connect and waits for its headers there, on the
// connection's context: a server, or a proxy before it, that holds them
// until its first event held the start past its startupTimeout, --timeout
// and Ctrl-C. After streamHeaderWait the SDK gets a stream whose body waits
// for the server's answer: its events once it comes, nothing if it is no
// stream (a server without one, as a 405), its error if it fails.
func (t *captureRoundTripper) deferStream(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	d := &deferredStream{ready: make(chan struct{}), closed: make(chan struct{}), cancel: cancel, ctx: req.Context()}
	go func() {
		d.resp, d.err = t.roundTripAbortable(req.WithContext(ctx), true)
		close(d.ready)
	}()
	timer := time.NewTimer(streamHeaderWait)
	defer timer.Stop()
	select {
	case <-d.ready:
		if d.err != nil || d.resp.Body == nil {
			cancel()
			return d.resp, d.err
		}
		d.resp.Body = &closeThen{ReadCloser: d.resp.Body, then: cancel}
		return d.resp, nil
	case <-timer.C:
	}
	return &http.Response{Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: d, Request: req}, nil
}

// A deferredStream is the body of an event stream whose headers had not
// come: it reads the server's once they come.
type deferredStream struct {
	ctx       context.Context // the connection's: its end ends the reads
	ready     chan struct{}
	resp      *http.Response
	err       error
	closed    chan struct{}
	closeOnce sync.Once
	cancel    context.CancelFunc
}

func (d *deferredStream) Read(p []byte) (int, error) {
	select {
	case <-d.ready:
	case <-d.closed:
		return 0, io.EOF
	case <-d.ctx.Done():
		return 0, d.ctx.Err()
	}
	if d.err != nil {
		return 0, d.err
	}
	if d.resp.StatusCode/100 != 2 || !isMediaType(d.resp.Header.Get("Content-Type"), "text/event-stream") {
		// No stream after all: nothing will come on it, until the
		// connection ends (an end now would be reconnected to).
		d.resp.Body.Close()
		select {
		case <-d.closed:
			return 0, io.EOF
		case <-d.ctx.Done():
			return 0, d.ctx.Err()
		}
	}
	return d.resp.Body.Read(p)
}

// isMediaType reports whether a Content-Type is of the media type want,
// whatever its case and parameters.
func isMediaType(contentType, want string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == want
}

func (d *deferredStream) Close() error {
	d.closeOnce.Do(func() {
		close(d.closed)
		d.cancel()
		go func() {
			<-d.ready
			if d.resp != nil {
				d.resp.Body.Close()
			}
		}()
	})
	return nil
}

// roundTripAbortable is roundTrip, ended by t.abort when it has one.
func (t *captureRoundTripper) roundTripAbortable(req *http.Request, standalone bool) (*http.Response, error) {
	ctx := req.Context()
	if t.abort != nil {
		if t.abort.Err() != nil {
			return nil, errAborted
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		stop := context.AfterFunc(t.abort, cancel)
		resp, err := t.roundTrip(req.Clone(ctx), standalone)
		if err != nil || resp.Body == nil {
			stop()
			cancel()
			return resp, err
		}
		resp.Body = &closeThen{ReadCloser: resp.Body, then: func() { stop(); cancel() }}
		return resp, nil
	}
	return t.roundTrip(req.Clone(ctx), standalone)
}

// standaloneStream tells whether a GET is the connection's own event
// stream: the SDK opens it with no Last-Event-ID, on the connection's
// context, and opens it again on the same one; a GET that resumes a
// request's stream has a Last-Event-ID and the request's context. Their
// Done channels tell the contexts apart.
func (t *captureRoundTripper) standaloneStream(req *http.Request) bool {
	done := req.Context().Done()
	if req.Header.Get("Last-Event-ID") == "" {
		t.standalone.Store(&done)
		return true
	}
	p := t.standalone.Load()
	return p != nil && *p != nil && *p == done
}

// errAborted is a request to a server whose connection was given up.
var errAborted = errors.New("the connection to the server was given up")

// closeThen calls then once its body is closed: an event stream's context
// lives as long as its body is read.
type closeThen struct {
	io.ReadCloser
	then func()
	once sync.Once
}

func (c *closeThen) Close() error {
	err := c.ReadCloser.Close()
	c.once.Do(c.then)
	return err
}

func (t *captureRoundTripper) roundTrip(req *http.Request, standalone bool) (*http.Response, error) {
	if o := origin(req.URL); o == t.origins[0] || o == t.origins[1] {
		for k, v := range t.headers {
			if sdkOwned(k) && req.Header.Get(k) != "" {
				continue // the SDK's, for what it sends
			}
			req.Header.Set(k, v)
		}
	} else if len(t.headers) > 0 && t.withheld.CompareAndSwap(nil, &o) && t.log != nil {
		t.log.Info("the configured headers are not sent to another origin than the server's url's", "origin", o)
	}
	if req.Header.Get("User-Agent") == "" {
		// Not Go's: a server's logs tell mcpctl's requests apart.
		req.Header.Set("User-Agent", userAgent)
	}
	var sentID json.RawMessage // of the request posted, when it is one
	handshake := false         // the POST is the handshake's (discover, initialize, initialized)
	if req.Method == http.MethodPost && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		if msg, err := jsonrpc.DecodeMessage(body); err == nil {
			if r, ok := msg.(*jsonrpc.Request); ok {
				if r.ID.IsValid() {
					sentID, _ = json.Marshal(r.ID.Raw())
				}
				handshake = r.Method == "server/discover" || r.Method == "initialize" || r.Method == "notifications/initialized"
			}
			// A notifications/cancelled is told until its POST is
			// answered: a stop waits for that (awaitTold).
			_, told := t.conn.telling(msg)
			defer told()
			// Encoded again only when outgoing added to it (a task, a log level).
			if out := t.conn.outgoing(req.Context(), msg); out != msg {
				if data, err := jsonrpc.EncodeMessage(out); err == nil {
					body = data
				}
			}
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	cp, _ := req.Context().Value(captureKey{}).(*capture)
	if cp != nil && req.Method == http.MethodPost && sentID != nil {
		// Of this try alone; not reset by a notification sent in the
		// request's context (the SDK's notifications/cancelled for it).
		cp.mu.Lock()
		cp.httpStatus, cp.httpBody = 0, ""
		cp.mu.Unlock()
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	t.conn.httpAnswered.Store(true)
	for resent := false; resp.StatusCode == http.StatusUnauthorized && req.Method == http.MethodPost; resent = true {
		tok, ae := t.gate.refusedAgain(req)
		if tok == "" && ae == nil {
			break // Authorize's to answer
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		if ae != nil || resent {
			// The token refreshed after a 401, refused too (the
			// request sent again with it, or one sent before the
			// server took it): an authorization error, not a broken
			// connection.
			if ae == nil {
				ae = t.gate.source.refusedAgain()
			}
			t.refused.Store(http.StatusUnauthorized)
			return nil, ae
		}
		// A token saved since (a login in another terminal): the
		// request goes again with it, once.
		again := req.Clone(req.Context())
		again.Header.Set("Authorization", "Bearer "+tok)
		if req.GetBody != nil {
			if again.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
		req = again
		if resp, err = t.base.RoundTrip(req); err != nil {
			return resp, err
		}
	}
	if resp.StatusCode == http.StatusBadRequest && req.Header.Get("Mcp-Session-Id") != "" && saysSessionUnknown(resp) {
		// The spec asks for 404 here, and the SDK renews the session only
		// on 404; servers built on the TypeScript SDK's examples
		// (server-everything among them) answer 400 "No valid session ID
		// provided" once they restarted.
		resp.StatusCode, resp.Status = http.StatusNotFound, "404 Not Found"
	}
	if req.Method == http.MethodPost && t.legacySSE.Load() && !handshake && (resp.StatusCode == http.StatusNotFound ||
		resp.StatusCode == http.StatusBadRequest && saysSessionUnknown(resp)) {
		// An HTTP+SSE server that no longer knows the session in the
		// POST's URL (it restarted; a balancer sent the POST to another
		// instance): 404, or 400 "No transport found for sessionId" from
		// the TypeScript SDK's example. The request was not taken, and
		// the connection is as good as lost: as a streamable HTTP
		// server's forgotten session, it is made afresh and the request
		// sent again. Not during the handshake: there is no session to
		// forget yet, and the endpoint may be wrong.
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		return nil, fmt.Errorf("%w: HTTP %s", mcp.ErrSessionMissing, resp.Status)
	}
	if resp.StatusCode/100 == 4 {
		t.refused.Store(int32(resp.StatusCode))
	}
	if resp.StatusCode/100 == 2 {
		// The token it sent is taken: refused later, it is refreshed.
		t.gate.accepted(req)
	}
	if resp.StatusCode == http.StatusNotFound && req.Header.Get("Mcp-Session-Id") != "" {
		if cp, ok := req.Context().Value(captureKey{}).(*capture); ok {
			cp.mu.Lock()
			cp.sessionMissing = true
			cp.mu.Unlock()
		}
	}
	if resp.StatusCode/100 != 2 {
		if cp != nil && req.Method == http.MethodPost && resp.StatusCode != http.StatusNotFound {
			// What the server said, kept for the error: the SDK says
			// "rejected by transport".
			head, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
			cp.mu.Lock()
			cp.httpStatus, cp.httpBody = resp.StatusCode, string(head)
			cp.mu.Unlock()
		}
		if req.Method == http.MethodPost && !t.legacySSE.Load() && breaksConnection(resp.StatusCode) {
			return t.keepConnection(resp, sentID, "HTTP "+resp.Status), nil
		}
		if req.Method == http.MethodPost && t.legacySSE.Load() && refusesRequestAlone(resp.StatusCode) && (sentID == nil || cp != nil && cp.refuse != nil) {
			// Over HTTP+SSE the SDK takes any refused POST for its
			// connection broken, and its answer comes on the stream, where
			// none will: the POST is taken as accepted, and the request
			// ends with what the server said (one too large for it must
			// not leave the server unavailable until a restart). A
			// notification refused has no answer to wait for.
			io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
			resp.Body.Close()
			if sentID != nil {
				cp.refuse()
			}
			return &http.Response{Status: "202 Accepted", StatusCode: http.StatusAccepted, Proto: resp.Proto, ProtoMajor: resp.ProtoMajor, ProtoMinor: resp.ProtoMinor,
				Header: http.Header{}, Body: http.NoBody, Request: req}, nil
		}
		return resp, nil
	}
	switch ct := resp.Header.Get("Content-Type"); {
	case isMediaType(ct, "text/event-stream"):
		tee := &sseTee{ReadCloser: resp.Body, onData: t.streamed, legacy: t.legacySSE.Load()}
		if !tee.legacy {
			// Replays come on GETs: the events of the other streams
			// are only noted.
			tee.repeated = t.seen.repeated
			if req.Method != http.MethodGet {
				tee.repeated = t.seen.note
			}
		}
		// An HTTP+SSE stream is its session: when it breaks the
		// connection is lost, and no reconnection is to be told of.
		if standalone && t.onStream != nil && !tee.legacy {
			t.onStream(nil)
			ctx := req.Context()
			tee.onBreak = func(err error) {
				if ctx.Err() == nil { // not closed by mcpctl
					t.onStream(err)
				}
			}
			if lived := time.Duration(t.streamLived.Load()); lived > 0 {
				tee.reopen, tee.lived, tee.opened = t.reopenStream(req), lived, time.Now()
				tee.onReopen = func() { t.onStream(nil) }
				tee.endGrace = t.reopenWait
			}
		}
		resp.Body = tee
	case isMediaType(ct, "application/json"):
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxMessage+1))
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if len(body) > maxMessage {
			// Cut short, it would make the SDK give up the connection;
			// the request gets the error a stdio server's overlong
			// answer gets.
			if sentID == nil {
				return nil, fmt.Errorf("the answer was longer than %d MiB, the most mcpctl reads in one message", maxMessage>>20)
			}
			body = droppedAnswer(sentID)
		}
		t.received(body) // an answer that is not a message is the SDK's to refuse
		resp.Body = io.NopCloser(bytes.NewReader(body))
	case req.Method == http.MethodPost && sentID != nil && resp.StatusCode == http.StatusOK && !t.legacySSE.Load():
		// An answer to a request that is neither JSON nor a stream (a
		// proxy's HTML page): the request's error, not the connection's.
		// (Over HTTP+SSE answers come on the stream: a POST's own answer
		// is no message.)
		head, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if cp != nil {
			cp.mu.Lock()
			cp.httpStatus, cp.httpBody = resp.StatusCode, fmt.Sprintf("a %s answer, not JSON or an event stream: %s", ct, head)
			cp.mu.Unlock()
		}
		resp.Body = io.NopCloser(bytes.NewReader(head))
		return t.keepConnection(resp, sentID, fmt.Sprintf("a %s answer", ct)), nil
	}
	return resp, nil
}

// userAgent is what mcpctl's requests to remote servers say they are,
// unless the config's headers say otherwise.
var userAgent = "mcpctl/" + Version()

// sdkOwned reports whether a header, when the SDK sets it on a request,
// keeps the SDK's value over a configured one: it describes the request
// (what it accepts, what its body is), and configs copied from curl
// examples carry such headers. (MCP's own, such as Mcp-Session-Id, the
// config refuses.)
func sdkOwned(name string) bool {
	switch strings.ToLower(name) {
	case "accept", "content-type", "content-length", "transfer-encoding", "connection", "host":
		return true
	}
	return false
}

// errPostRefused ends a request whose POST an HTTP+SSE server refused.
var errPostRefused = errors.New("the server refused the request")

// refusesRequestAlone reports an HTTP error status on an HTTP+SSE POST that
// refuses that request alone: not 401 and 403 (authorization) nor 404 (the
// session gone), which are the connection's.
func refusesRequestAlone(status int) bool {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		return false
	}
	return status/100 == 4 || status/100 == 5
}

// breaksConnection reports an HTTP error status on a POST that the SDK
// takes for its connection broken, when no JSON-RPC error comes with it:
// every request after it fails. Not 401 and 403 (authorization), 404 (the
// session forgotten: renewed), nor 429, 500, 502, 503 and 504, which the
// SDK (v1.8.0's isTransientHTTPStatus) takes for a refusal of the request
// alone.
func breaksConnection(status int) bool {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return false
	}
	return status/100 == 4 || status/100 == 5
}

// keepConnection makes an answer the SDK would take for its connection
// broken (an HTTP error without a JSON-RPC error, content that is neither
// JSON nor a stream) the refusal of its request alone, as a JSON-RPC error
// answer to it with the code the SDK gives a refusal: one bad answer, from
// the server or a proxy before it, must not take every later request
// down. The request's error says what the server answered (the capture's
// httpStatus and httpBody). An answer to a notification is taken as
// accepted. A body that is already a JSON-RPC answer is the SDK's.
func (t *captureRoundTripper) keepConnection(resp *http.Response, sentID json.RawMessage, what string) *http.Response {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if msg, err := jsonrpc.DecodeMessage(body); err == nil {
		if r, ok := msg.(*jsonrpc.Response); ok && r.Error != nil {
			resp.Body = io.NopCloser(bytes.NewReader(body))
			return resp
		}
	}
	out := &http.Response{Status: resp.Status, StatusCode: resp.StatusCode, Proto: resp.Proto, ProtoMajor: resp.ProtoMajor, ProtoMinor: resp.ProtoMinor,
		Header: http.Header{}, Request: resp.Request}
	if sentID == nil {
		// A notification, or mcpctl's answer to a question of the
		// server's (sampling, elicitation): refused, it is lost, and
		// the server waits for it until its own timeout.
		if t.log != nil {
			t.log.Warn("the server refused a message mcpctl posted (a notification or an answer to its question)", "answer", what)
		}
		out.Status, out.StatusCode = "202 Accepted", http.StatusAccepted
		out.Body = http.NoBody
		return out
	}
	if t.log != nil {
		t.log.Info("the server answered a request with something that is not MCP; taken as that request's refusal", "answer", what)
	}
	if out.StatusCode/100 == 2 {
		// The SDK reads a JSON-RPC error only on a status it does not
		// take for transient: 400.
		out.Status, out.StatusCode = "400 Bad Request", http.StatusBadRequest
	}
	data, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", sentID, jsonrpc.Error{Code: codeRejected, Message: what}})
	out.Header.Set("Content-Type", "application/json")
	out.Body = io.NopCloser(bytes.NewReader(data))
	out.ContentLength = int64(len(data))
	return out
}

// reopenStream returns what opens the event stream req opened again, on
// the same MCP session, from the last event id its stream gave, after the
// retry delay it gave. A 409 is asked again a few times: a server may
// learn of the end of its stream later than mcpctl does. Any other
// failure is the SDK's to retry, and to tell: an OAuth token that expired
// since the stream was first opened (it goes again, as it came) gets a
// 401, and the SDK's own request a fresh token.
func (t *captureRoundTripper) reopenStream(req *http.Request) func(lastID string, retry time.Duration) io.ReadCloser {
	return func(lastID string, wait time.Duration) io.ReadCloser {
		ctx := req.Context()
		for try := 0; ; try++ {
			if wait > 0 {
				timer := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					timer.Stop()
					return nil
				case <-timer.C:
				}
			}
			if ctx.Err() != nil {
				return nil // closed by mcpctl
			}
			again := req.Clone(ctx)
			if lastID != "" {
				again.Header.Set("Last-Event-ID", lastID)
			}
			resp, err := t.base.RoundTrip(again)
			if err != nil {
				return nil
			}
			if resp.StatusCode == http.StatusConflict && try < 3 {
				resp.Body.Close()
				wait = 100 * time.Millisecond << try
				continue
			}
			if resp.StatusCode/100 != 2 || !isMediaType(resp.Header.Get("Content-Type"), "text/event-stream") {
				resp.Body.Close()
				return nil
			}
			if t.log != nil {
				t.log.Debug("the server's event stream ended; opened again", "lastEventID", lastID)
			}
			return resp.Body
		}
	}
}

// eventIDs are the events a connection was sent, the last 4096 of them,
// each by its id and a hash of its data: the spec has ids unique across a
// session's streams, but a server that counts each stream's events from 0
// would give one id to several.
type eventIDs struct {
	mu   sync.Mutex
	set  map[eventKey]struct{}
	ring []eventKey // made at the first event with an id: most servers send none
	next int
}

type eventKey struct {
	id   string
	data uint64
}

// repeated tells whether the event came before, and notes it.
func (s *eventIDs) repeated(id, data []byte) bool {
	h := fnv.New64a()
	h.Write(data)
	key := eventKey{string(id), h.Sum64()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.set[key]; ok {
		return true
	}
	if s.set == nil {
		s.set, s.ring = map[eventKey]struct{}{}, make([]eventKey, 4096)
	}
	delete(s.set, s.ring[s.next])
	s.ring[s.next], s.next = key, (s.next+1)%len(s.ring)
	s.set[key] = struct{}{}
	return false
}

// note notes the event, and passes it on: see repeated.
func (s *eventIDs) note(id, data []byte) bool {
	s.repeated(id, data)
	return false
}

// saysSessionUnknown tells whether a 400 answer's body says the session,
// which the request named, is not known (not found, invalid, expired…): a
// server that no longer knows it. The body is read no further than that
// takes, and put back.
func saysSessionUnknown(resp *http.Response) bool {
	head, err := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	if err != nil {
		return false
	}
	text := bytes.ToLower(head)
	if !bytes.Contains(text, []byte("session")) {
		return false
	}
	for _, gone := range []string{"no valid", "not found", "unknown", "invalid", "expired", "no such", "does not exist", "no transport found"} {
		if bytes.Contains(text, []byte(gone)) {
			return true
		}
	}
	return false
}

// received notes one message that arrived over HTTP; the error says it
// is not one (nor is a batch: the SDK refuses batches).
func (t *captureRoundTripper) received(data []byte) error {
	msg, err := jsonrpc.DecodeMessage(bytes.TrimSpace(data))
	if err != nil {
		return err
	}
	t.conn.incoming(msg)
	return nil
}

// streamed notes the data of one event of a stream; the error says it is
// not a JSON-RPC message, and the event is dropped.
func (t *captureRoundTripper) streamed(data []byte) error {
	err := t.received(data)
	if err != nil && t.log != nil {
		level := slog.LevelDebug
		if t.warnedBadEvent.CompareAndSwap(false, true) {
			level = slog.LevelWarn
		}
		text, why := string(data), err.Error() // which quotes the data
		if t.redact != nil {
			text, why = t.redact(text), t.redact(why)
		}
		t.log.Log(context.Background(), level, "the server sent an event that is not a JSON-RPC message; dropped", "data", truncate(text, 200), "error", truncate(why, 300))
	}
	return err
}

// remoteTransport is the SDK transport for a server reached over HTTP:
// streamable HTTP for type http, the legacy HTTP+SSE transport for type
// sse.
func remoteTransport(typ, url string, client *http.Client) (mcp.Transport, error) {
	switch typ {
	case "http":
		return &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: client, MaxEventSize: maxMessage}, nil
	case "sse":
		return &mcp.SSEClientTransport{Endpoint: url, HTTPClient: client, MaxEventSize: maxMessage}, nil
	}
	return nil, fmt.Errorf("type %s is not supported yet", typ)
}

// connectRemote connects to a server over HTTP. ctx must live as long as
// the connection: the SSE transport ties its event stream to it. A server
// whose type was implied by its url and that refuses streamable HTTP with a
// 4xx is tried with the legacy SSE transport, as the MCP spec's backwards
// compatibility section says.
func (s *server) connectRemote(ctx, abort context.Context, client *mcp.Client, conn *captureConn, opts *mcp.ClientSessionOptions) (_ *mcp.ClientSession, err error) {
	cfg := s.cfg()
	base, err := httpTransport(cfg)
	if err != nil {
		return nil, err
	}
	conn.closeIdle = base.CloseIdleConnections
	defer func() {
		if err != nil {
			base.CloseIdleConnections()
		}
	}()
	rt := &captureRoundTripper{base: base, conn: conn, headers: cfg.Headers, abort: abort, redact: cfg.Redact}
	if u, err := url.Parse(cfg.URL); err == nil {
		o := origin(u)
		rt.origins, rt.log = [2]string{o, upgraded(o)}, s.log
	}
	rt.onStream = func(err error) { s.eventStream(conn, err) }
	if cfg.Type == "http" {
		rt.streamLived.Store(int64(cmp.Or(s.e.streamLived, time.Second)))
		rt.reopenWait = s.e.streamReopenWait
	}
	rt.legacySSE.Store(cfg.Type == "sse")
	hc := &http.Client{Transport: rt, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		// A 301, 302 or 303 makes a POST a GET without its body, which
		// the server then refused for want of a message ("Bad Request").
		if last := via[len(via)-1]; last.Method == http.MethodPost && req.Method != http.MethodPost {
			return fmt.Errorf("the server redirects its POSTs (%s) to %s, and a redirect of that kind makes a POST a GET: write that address as its url", req.Response.Status, cfg.Redact(req.URL.String()))
		}
		return nil
	}}
	t, err := remoteTransport(cfg.Type, cfg.URL, hc)
	if err != nil {
		return nil, err
	}
	oauthHandled := false // an OAuth handler says what a 401 means
	if st, ok := t.(*mcp.StreamableClientTransport); ok && s.e.opts.Auth != nil && s.e.opts.Auth.Dir != "" {
		oauthHandled = true
		h, cleanup, err := s.oauthHandler(&http.Client{Transport: base})
		if err != nil {
			return nil, err
		}
		// The loopback redirect listener lives as long as the connection.
		context.AfterFunc(ctx, cleanup)
		st.OAuthHandler = h
		rt.gate, _ = h.(*gate)
	}
	cs, err := client.Connect(ctx, t, opts)
	var ae *Error
	if errors.As(err, &ae) && ae.Kind == KindAuth {
		return nil, ae // a 401 is about a token, not about the transport
	}
	overSSE := cfg.Type == "sse"
	// A server whose OAuth flow got as far as registering mcpctl speaks
	// streamable HTTP: its failure is the answer, which the SSE transport's
	// 401 hid behind a hint that auth login then refused.
	oauthTried := err != nil && strings.Contains(err.Error(), "failed to register client")
	if err != nil && cfg.TypeImplied && rt.refused.Load() != 0 && ctx.Err() == nil && !oauthTried {
		s.log.Info("the server refused streamable HTTP; trying the SSE transport", "status", rt.refused.Load())
		httpErr := err
		rt.refused.Store(0)
		rt.streamLived.Store(0) // an SSE transport's stream ends its session
		rt.legacySSE.Store(true)
		t, _ = remoteTransport("sse", cfg.URL, hc)
		cs, err = client.Connect(ctx, t, opts)
		overSSE = true
		if st := rt.refused.Load(); err != nil && (st == http.StatusNotFound || st == http.StatusMethodNotAllowed) {
			// No SSE endpoint there either: what streamable HTTP was
			// answered says more ("Method Not Allowed" hid a 403).
			s.log.Info("the SSE transport was refused too", "status", st, "error", s.said(err))
			err, overSSE = httpErr, false
		}
	}
	if err != nil && (overSSE || !oauthHandled) && rt.refused.Load() == http.StatusUnauthorized && ctx.Err() == nil {
		// No OAuth handler to say it (the SSE transport, a WebSocket, an
		// engine without Options.Auth): the SDK's error is "failed to
		// connect: Unauthorized", which read as a server not running.
		return nil, unauthorized(cfg, rt.withheld.Load())
	}
	if cp, _ := ctx.Value(captureKey{}).(*capture); err != nil && !overSSE && cp != nil {
		cp.mu.Lock()
		a := &httpAnswer{status: cp.httpStatus, body: cp.httpBody, err: err}
		cp.mu.Unlock()
		if a.status/100 == 5 || a.status == http.StatusTooManyRequests || a.status == http.StatusBadRequest {
			// The server answered its start with an HTTP error: said
			// with its words, not as a server that may not run.
			return nil, httpAnswerError(cfg, "initialize", a)
		}
	}
	if err != nil {
		return nil, err
	}
	return cs, nil
}

// unauthorized is the error of a server that answered 401 where no OAuth
// handler speaks for it (the SSE transport's).
func unauthorized(cfg *config.Server, withheld *string) *Error {
	if withheld != nil {
		return errorf(KindAuth, cfg.Name, "server %s answered 401 at %s, another origin than its url's, where mcpctl does not send its headers", cfg.Name, *withheld).
			hint("if that is the server's own address, write its url with it (%s)", cfg.Source)
	}
	if from, ok := cfg.SendsAuthorization(); ok {
		return errorf(KindAuth, cfg.Name, "server %s refused the Authorization header it is sent (%s): it answered 401", cfg.Name, from).
			hint("check the token in it, and the variable or input it comes from")
	}
	return errorf(KindAuth, cfg.Name, "server %s needs authorization: it answered 401", cfg.Name).
		hint("send it its token in headers: \"Authorization\": \"Bearer ${TOKEN}\" (%s); mcpctl auth login is for streamable HTTP servers that use OAuth", cfg.Source)
}

// eventStream marks a ready remote server degraded while its event stream
// is broken and the SDK tries to open it again, so that status tells of a
// server gone before a request fails on it; the stream opened again makes
// it ready. conn is the connection the stream belongs to.
func (s *server) eventStream(conn *captureConn, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != conn {
		return // an earlier connection's, or not yet the server's
	}
	name := s.cfg().Name
	switch {
	case err != nil && s.state == StateReady:
		s.lc.streamLost = true
		e := errorf(KindUnavailable, name, "server %s's event stream broke: %s", name, s.cfg().Redact(withoutSessionID(err.Error())))
		s.setStateNote(StateDegraded, e, "reconnecting")
	case err == nil && s.lc.streamLost:
		s.lc.streamLost = false
		if s.state == StateDegraded {
			s.setStateNote(StateReady, nil, "event stream open again")
		}
	}
}

// remoteFailure explains a failed connection to a remote server.
func remoteFailure(cfg *config.Server, err error) *Error {
	url := cfg.Redact(cfg.URL)
	e := errorf(KindUnavailable, cfg.Name, "server %s (%s): cannot connect: %s", cfg.Name, url, strings.TrimSpace(cfg.Redact(withoutSessionID(err.Error()))))
	switch {
	case strings.Contains(err.Error(), "failed to register client"):
		// auth login against a server that offers no OAuth registration.
		e.hint("server %s may not use OAuth: if it takes a fixed token, send it in its headers: \"Authorization\": \"Bearer ${TOKEN}\" (%s)", cfg.Name, cfg.Source)
	case errors.Is(err, context.DeadlineExceeded):
		e.hint("raise %s of server %s (%s) if it is just slow", cfg.FieldName("startupTimeout"), cfg.Name, cfg.Source)
	case strings.Contains(err.Error(), "x509: "):
		// It runs: its certificate is not one this system trusts.
		e.hint("if its certificate is signed by a CA of your own (or is self-signed), give that CA's certificate as caFile of server %s (%s)", cfg.Name, cfg.Source)
	default:
		e.hint("check that the server runs at %s (%s)", url, cfg.Source)
		hintOtherTransport(e, cfg, err.Error())
	}
	// Not wrapped: the cause's text holds the url as it is, secrets and all.
	return e
}

// hintOtherTransport adds to e, the failed start of a server whose type
// was written, the other type, when how the server refused the one written
// (text) says it may speak that one: a streamable HTTP POST to an SSE
// endpoint is not found, not allowed or refused; an SSE GET to a
// streamable endpoint is refused, or is no event stream with an endpoint.
func hintOtherTransport(e *Error, cfg *config.Server, text string) {
	if other := otherTransport(cfg, text); other != "" {
		e.hint("if it speaks %s, set \"type\": %q (%s), or leave type out to try both", map[string]string{"http": "streamable HTTP", "sse": "the older HTTP+SSE transport"}[other], other, cfg.Where("type"))
	}
}

func otherTransport(cfg *config.Server, text string) string {
	if cfg.TypeImplied {
		return "" // both were tried
	}
	says := func(words ...string) bool {
		return slices.ContainsFunc(words, func(w string) bool { return strings.Contains(text, w) })
	}
	// Not found at all is a wrong path more often than a wrong type, but
	// at the path each transport's servers use by custom.
	path := strings.TrimSuffix(cfg.URL, "/")
	switch cfg.Type {
	case "http":
		if says("Method Not Allowed", "sessionid must be provided", "Missing sessionId") || says("Not Found") && strings.HasSuffix(path, "/sse") {
			return "sse"
		}
	case "sse":
		if says("Bad Request", "Method Not Allowed", "Not Acceptable", "missing endpoint") || says("Not Found") && strings.HasSuffix(path, "/mcp") {
			return "http"
		}
	}
	return ""
}

// httpHeader is the header of a WebSocket handshake: the config's, with
// mcpctl's User-Agent unless they give one.
func httpHeader(m map[string]string) http.Header {
	h := http.Header{}
	for k, v := range m {
		h.Set(k, v)
	}
	if h.Get("User-Agent") == "" {
		h.Set("User-Agent", userAgent)
	}
	return h
}

// httpTransport is how mcpctl reaches a remote server: Go's default
// transport (proxies from the environment, the system's roots) with the
// server's own TLS settings.
func httpTransport(cfg *config.Server) (*http.Transport, error) {
	if strings.TrimSpace(cfg.URL) == "" {
		// Written as a variable that is set to nothing ("${URL:-}"): a
		// file loads so, and the start says it (not a transport's
		// "unsupported protocol scheme"), for every remote type.
		// Unavailable, as a start that fails: the other servers of a
		// one-shot command go on.
		return nil, errorf(KindUnavailable, cfg.Name, "server %s has no url: its url is empty (%s)", cfg.Name, cfg.Where("url")).
			hint("set the variable its url is written with, or disable the server")
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.CAFile == "" && cfg.ClientCert == "" {
		return t, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		roots, err := x509.SystemCertPool()
		if err != nil {
			roots = x509.NewCertPool()
		}
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, errorf(KindUsage, cfg.Name, "server %s: cannot read caFile: %v", cfg.Name, err).hint("fix caFile (%s)", cfg.Where("caFile"))
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, errorf(KindUsage, cfg.Name, "server %s: caFile %s holds no PEM certificate", cfg.Name, cfg.CAFile).hint("fix caFile (%s)", cfg.Where("caFile"))
		}
		tc.RootCAs = roots
	}
	if cfg.ClientCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.ClientCert, cfg.ClientKey)
		if err != nil {
			return nil, errorf(KindUsage, cfg.Name, "server %s: cannot load the client certificate: %v", cfg.Name, err).hint("fix clientCert and clientKey (%s)", cfg.Where("clientCert"))
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	t.TLSClientConfig = tc
	return t, nil
}

// upgraded is an http:// origin as https:// on the same host (a server
// that redirects to TLS), with the default port when it had it; "" else.
func upgraded(o string) string {
	rest, ok := strings.CutPrefix(o, "http://")
	if !ok {
		return ""
	}
	if host, ok := strings.CutSuffix(rest, ":80"); ok {
		rest = host + ":443"
	}
	return "https://" + rest
}

// origin is u's scheme, host and port (the default one of the scheme when
// none is written), as a browser compares origins.
func origin(u *url.URL) string {
	scheme, port := strings.ToLower(u.Scheme), u.Port()
	if port == "" {
		switch scheme {
		case "http", "ws":
			port = "80"
		case "https", "wss":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
