package engine

import (
	"bytes"
	"cmp"
	"errors"
	"io"
	"strconv"
	"sync"
	"time"
)

// An sseTee passes a server-sent event stream on an event at a time, and
// hands the data of each message event to onData as it does; one whose
// data onData refuses (not a JSON-RPC message) goes on without its data
// (over HTTP+SSE, not at all), where the SDK would give the connection up. An event longer than
// maxMessage is not passed on, as the SDK would give up the whole stream
// over it: in its place goes, when it answers a request (whose id is read
// from the first and last bytes of its data), the error a stdio server's
// overlong answer gets.
type sseTee struct {
	io.ReadCloser
	onData func([]byte) error
	// onBreak, when set, hears of a read that failed other than at the
	// stream's end, and of an end that reopen could not mend.
	onBreak func(error)
	// reopen, when set, opens the stream again once it has ended (at its
	// end or a failed read) after it was open for lived: its body, or nil
	// when that failed. The SDK counts each end of a stream whose last
	// event id did not move as a reconnection without progress, and gives
	// the whole connection up after six (go-sdk #1175); a proxy's idle
	// timeout ends a stream without ids every minute or so. The SDK sees
	// one stream that goes on; a stream that ends soon after it opens is
	// left to the SDK's retries.
	reopen func(lastID string, retry time.Duration) io.ReadCloser
	lived  time.Duration
	opened time.Time
	// onReopen hears of the stream open again; breakGrace and endGrace
	// are how long a stream that broke or ended may take to be, after the
	// retry delay (0: a second, ten), before onBreak hears of it.
	onReopen             func()
	breakGrace, endGrace time.Duration
	// lastID and retry are the stream's last event id and retry delay,
	// from the events dispatched (and dropped: an overlong notification's
	// id counts, which the SDK does not see).
	lastID string
	retry  time.Duration
	// legacy: the stream is the HTTP+SSE transport's, whose SDK client
	// takes every event after the endpoint as a message, whatever its
	// name, and fails on one with no data.
	legacy bool
	// repeated, when set, tells whether an event (by its id and data)
	// came before on the connection, and notes it: a server that replays
	// more than the stream it resumes (server-everything replays every
	// stream's) would have progress told twice and a question asked twice.
	repeated func(id, data []byte) bool
	out      []byte // events checked, not yet read by the SDK
	ended    error  // the read that ended the stream, once out is read
	err      error  // the stream's, given once out is read
	ev       sseEvent
}

// An sseEvent is the event under way.
type sseEvent struct {
	raw  []byte // its lines as they came; the last may be unfinished
	line int    // where in raw the line under way starts
	// long: the event is over maxMessage and is dropped; raw holds only
	// the line under way. longLine: so is that line, and it is not kept
	// at all (longData: it is a data line).
	long, longLine, longData bool
	dataLines                int
	head, tail               []byte // the first and last bytes of its data
	fields                   []byte // a dropped event's id, event and retry lines
	id, retry, name          []byte // its id, retry and event fields' values
}

var (
	dataKey    = []byte("data:")
	idField    = []byte("id:")
	retryField = []byte("retry:")
	eventField = []byte("event:")
)

// decided is how much of a line is read before an overlong event's line
// under way is judged (data or not): a read may end inside "data:".
const decided = 16

func (s *sseTee) Read(p []byte) (int, error) {
	for len(s.out) == 0 && s.err == nil && len(p) > 0 {
		if s.ended != nil {
			s.end()
			continue
		}
		// p is lent to read into: feed keeps what it needs.
		n, err := s.ReadCloser.Read(p)
		s.feed(p[:n])
		s.ended = err
	}
	n := copy(p, s.out)
	if s.out = s.out[n:]; len(s.out) > 0 {
		return n, nil
	}
	s.out = nil
	return n, s.err
}

// end takes the stream's end, once the events before it are read: a
// stream that lived is opened again in its place, and the event the end
// cut off is dropped (as an EventSource drops it: "da" of a cut line,
// passed on, would be a malformed line to the SDK); else the end goes to
// the SDK, which dispatches an event cut off at EOF. A stream that broke (a
// failed read: a proxy's timeout may end it so) is told when it is not
// open again within a second, so that the server is degraded while it is
// not; one that ended, within ten seconds (endGrace), or when it could not
// be opened again.
func (s *sseTee) end() {
	err := s.ended
	s.ended = nil
	if s.reopen != nil && time.Since(s.opened) >= s.lived {
		var mu sync.Mutex
		settled := false
		tell := func(err error) {
			mu.Lock()
			defer mu.Unlock()
			if !settled {
				settled = true
				s.broke(err)
			}
		}
		// A stream that broke may be open again within a second, one
		// that ended within ten (a proxy may hold the headers until the
		// first event), each after the server's retry delay.
		grace, why := cmp.Or(s.endGrace, 10*time.Second), errNotReopened
		if err != io.EOF {
			grace, why = cmp.Or(s.breakGrace, time.Second), err
		}
		timer := time.AfterFunc(s.retry+grace, func() { tell(why) })
		defer timer.Stop()
		s.ReadCloser.Close()
		body := s.reopen(s.lastID, s.retry)
		if body != nil {
			mu.Lock()
			settled = true // a break told meanwhile stays told: onReopen mends it
			mu.Unlock()
			if s.onReopen != nil {
				s.onReopen()
			}
			s.ReadCloser, s.opened, s.ev = body, time.Now(), sseEvent{}
			return
		}
		tell(why)
	} else if err != io.EOF {
		s.broke(err)
	}
	if err == io.EOF {
		s.finish()
	}
	s.err = err
}

// errNotReopened is an event stream that ended and is not open again.
var errNotReopened = errors.New("it ended, and is not open again")

func (s *sseTee) broke(err error) {
	if s.onBreak != nil {
		s.onBreak(err)
	}
}

func (s *sseTee) feed(b []byte) {
	e := &s.ev
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i+1]
		}
		b = b[len(chunk):]
		ended := i >= 0
		switch {
		case e.longLine:
			if e.longData {
				e.noteData(trimEOL(chunk))
			}
			e.longLine = !ended
			continue
		case len(e.raw)+len(chunk) > maxMessage && (ended || len(e.raw)-e.line+len(chunk) >= decided):
			s.overflow(chunk, ended)
			if !ended {
				continue
			}
		default:
			e.raw = append(e.raw, chunk...)
		}
		if ended {
			s.endLine()
		}
	}
}

// overflow takes chunk, which takes the event over maxMessage (the SDK
// counts every byte of it, the blank line that ends it too): the event is
// dropped. What is kept of it: the first and last bytes of its data (noted
// line by line), its id, event and retry lines, and the line under way
// when chunk ends it, for endLine.
func (s *sseTee) overflow(chunk []byte, ended bool) {
	e := &s.ev
	if !e.long {
		e.long = true
		for line := range bytes.Lines(e.raw[:e.line]) {
			e.keepField(line)
		}
	}
	line := append(e.raw[e.line:len(e.raw):len(e.raw)], chunk...)
	e.raw, e.line = nil, 0
	if ended {
		e.raw = line
		return
	}
	e.longLine, e.longData = true, bytes.HasPrefix(line, dataKey)
	if e.longData {
		e.noteDataLine(line)
	}
}

// keepField keeps an id, event or retry line of a dropped event, for the
// event sent in its place: the SDK's last event id moves on past it, and
// an event the SDK would not take as a message stays one it does not.
func (e *sseEvent) keepField(line []byte) {
	for _, key := range []string{"id:", "event:", "retry:"} {
		if bytes.HasPrefix(line, []byte(key)) && len(line) <= 1024 {
			e.fields = append(append(e.fields, trimEOL(line)...), '\n')
			return
		}
	}
}

// endLine takes the line that has just ended the event's raw bytes.
func (s *sseTee) endLine() {
	e := &s.ev
	line := trimEOL(e.raw[e.line:])
	if len(line) == 0 {
		s.dispatch()
		return
	}
	if string(line) == "data" {
		// A field with no colon has no value (the SSE spec); the SDK
		// calls the line malformed and gives the connection up.
		e.raw = append(e.raw[:e.line], "data:\n"...)
		line = e.raw[e.line : len(e.raw)-1]
	}
	if bytes.IndexByte(line, ':') < 0 || bytes.HasPrefix(line, idField) && !headerValue(line) {
		// Any other field without a colon means nothing here, and an
		// id with a NUL is ignored (the SSE spec); one with another
		// control byte cannot be sent as a Last-Event-ID. The SDK
		// would give the connection up over the first, and fail to
		// reconnect with the others. Dropped.
		if e.long {
			e.raw, e.line = e.raw[:0], 0
		} else {
			e.raw = e.raw[:e.line]
		}
		return
	}
	switch {
	case bytes.HasPrefix(line, dataKey):
		e.noteDataLine(line)
	case bytes.HasPrefix(line, idField):
		e.id = append(e.id[:0], bytes.TrimSpace(line[len(idField):])...)
	case bytes.HasPrefix(line, retryField):
		e.retry = append(e.retry[:0], bytes.TrimSpace(line[len(retryField):])...)
	case bytes.HasPrefix(line, eventField):
		e.name = append(e.name[:0], bytes.TrimSpace(line[len(eventField):])...)
	}
	if e.long {
		e.keepField(line)
		e.raw, e.line = e.raw[:0], 0
	} else {
		e.line = len(e.raw)
	}
}

// headerValue tells whether b can go in an HTTP header (net/http's
// rule: no control byte but a tab).
func headerValue(b []byte) bool {
	for _, c := range b {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// finish ends the stream's last line and event, as the SDK dispatches an
// event whose last line has no newline at EOF; the newlines count towards
// maxMessage as any other byte.
func (s *sseTee) finish() {
	e := &s.ev
	if e.longLine || len(e.raw) > e.line {
		s.feed([]byte{'\n'})
	}
	if e.long || len(e.raw) > 0 {
		s.feed([]byte{'\n'})
	}
}

func (s *sseTee) dispatch() {
	e := &s.ev
	if len(e.id) > 0 {
		s.lastID = string(e.id)
	}
	if ms, err := strconv.ParseInt(string(e.retry), 10, 64); err == nil {
		s.retry = time.Duration(ms) * time.Millisecond
	}
	if e.long {
		if id := cutResponseID(e.head, e.tail); id != nil {
			answer := droppedAnswer(id)
			s.onData(answer)
			s.out = append(s.out, e.fields...)
			s.out = append(s.out, "data: "...)
			s.out = append(s.out, answer...)
			s.out = append(s.out, "\n\n"...)
		}
	} else {
		data := eventData(e.raw)
		if len(e.id) > 0 && s.repeated != nil && s.repeated(e.id, data) {
			// Sent before: what it says of the stream goes on.
			s.out = append(s.out, e.streamFields()...)
			s.ev = sseEvent{}
			return
		}
		if s.legacy && len(data) == 0 && s.isMessage(e) {
			s.ev = sseEvent{} // nothing that client could decode
			return
		}
		if len(data) > 0 && s.isMessage(e) && s.onData(data) != nil {
			// Not a JSON-RPC message (server-everything replays a
			// stream's priming events as "{}"): the SDK would give the
			// whole connection up over it ("failed to decode event").
			// What the event says of the stream goes on, where the SDK
			// keeps it.
			if !s.legacy {
				s.out = append(s.out, e.streamFields()...)
			}
			s.ev = sseEvent{}
			return
		}
		if len(s.out) == 0 {
			s.out = e.raw // no copy of an event that may be tens of MiB
		} else {
			s.out = append(s.out, e.raw...)
		}
	}
	s.ev = sseEvent{}
}

// isMessage tells whether the SDK takes the event's data as a JSON-RPC
// message: over streamable HTTP, its name is message or it has none; over
// HTTP+SSE, every event but the endpoint.
func (s *sseTee) isMessage(e *sseEvent) bool {
	if s.legacy {
		return string(e.name) != "endpoint"
	}
	return len(e.name) == 0 || string(e.name) == "message"
}

// streamFields is the event without its data: its id and retry, which
// the SDK keeps for the stream, or nothing when it has neither.
func (e *sseEvent) streamFields() []byte {
	var b []byte
	if len(e.id) > 0 {
		b = append(append(append(b, idField...), e.id...), '\n')
	}
	if len(e.retry) > 0 {
		b = append(append(append(b, retryField...), e.retry...), '\n')
	}
	if b == nil {
		return nil
	}
	return append(b, '\n')
}

func (e *sseEvent) noteDataLine(line []byte) {
	if e.dataLines++; e.dataLines > 1 {
		e.noteData([]byte{'\n'})
	}
	e.noteData(bytes.TrimLeft(line[len(dataKey):], " "))
}

// noteData keeps the first and last 256 bytes of the event's data.
func (e *sseEvent) noteData(p []byte) {
	const keep = 256
	if len(e.head) < keep {
		e.head = append(e.head, p[:min(len(p), keep-len(e.head))]...)
	}
	if len(p) >= keep {
		e.tail = append(e.tail[:0], p[len(p)-keep:]...)
	} else if e.tail = append(e.tail, p...); len(e.tail) > keep {
		e.tail = append(e.tail[:0], e.tail[len(e.tail)-keep:]...)
	}
}

// eventData is the data of an event: its data lines' values, one a line.
func eventData(raw []byte) []byte {
	var data []byte
	n := 0
	for line := range bytes.Lines(raw) {
		line = trimEOL(line)
		if !bytes.HasPrefix(line, dataKey) {
			continue
		}
		v := bytes.TrimLeft(line[len(dataKey):], " ")
		switch n++; n {
		case 1:
			data = v
		case 2:
			data = append(append(append([]byte(nil), data...), '\n'), v...)
		default:
			data = append(append(data, '\n'), v...)
		}
	}
	return data
}

func trimEOL(line []byte) []byte {
	return bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
}
