package commands

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mcpctl/mcpctl/internal/lineio"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// serve's stdin is read a line at a time before the SDK sees it: one line
// the SDK cannot decode (garbage, an empty batch, a message that is not
// JSON-RPC 2.0) ends its connection, and with it every request in flight.
// Such a line is answered here instead, as JSON-RPC asks (-32700 for what
// is not JSON, -32600 for what is not a request), and reading goes on.

// maxServeLine is the longest line serve reads from its client (a
// variable for tests).
var maxServeLine = 64 << 20

// A lockedWriter makes each Write one whole line on the shared stdout:
// the SDK's messages and the errors of the line filter. Once abandoned,
// its writes fail at once, the one under way included (it is left to end
// on its own): a client that stopped reading stdout, its pipe full, must
// not keep serve from ending.
type lockedWriter struct {
	w       io.Writer
	turn    chan struct{} // holds a token while a write is under way
	gone    chan struct{} // closed by abandon
	once    sync.Once
	dropped atomic.Int64 // writes under way or queued when abandoned
}

func newLockedWriter(w io.Writer) *lockedWriter {
	return &lockedWriter{w: w, turn: make(chan struct{}, 1), gone: make(chan struct{})}
}

var errOutputAbandoned = errors.New("serve's output was given up on: its client had stopped reading it")

func (l *lockedWriter) Write(p []byte) (int, error) {
	select {
	case <-l.gone:
		// Begun after: the connection is ending, not this write's
		// fault, and not counted.
		return 0, errOutputAbandoned
	default:
	}
	select {
	case <-l.gone:
		l.dropped.Add(1) // queued behind a write that did not end
		return 0, errOutputAbandoned
	case l.turn <- struct{}{}:
	}
	type written struct {
		n   int
		err error
	}
	// The write has a goroutine of its own, as a blocked write(2) cannot
	// be cut short. p is not used after the write, as io.Writer asks,
	// unless the write is abandoned: then the client reads no more.
	done := make(chan written, 1)
	go func() {
		n, err := l.w.Write(p)
		<-l.turn
		done <- written{n, err}
	}()
	select {
	case w := <-done:
		return w.n, w.err
	case <-l.gone:
		select {
		case w := <-done: // written after all
			return w.n, w.err
		default:
		}
		l.dropped.Add(1)
		return 0, errOutputAbandoned
	}
}

// abandon makes every write from now on, and the one under way, fail.
func (l *lockedWriter) abandon() { l.once.Do(func() { close(l.gone) }) }

func (l *lockedWriter) Close() error { return nil }

// filterLines passes the JSON-RPC lines of in to the reader it returns and
// answers the others on out. Closing the reader closes in.
func filterLines(in io.ReadCloser, out io.Writer) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(in, 64<<10)
		for {
			line, tooLong, err := lineio.ReadLine(br, maxServeLine)
			// A message written over several lines (pretty-printed,
			// which MCP forbids and the SDK's decoder took) is read to
			// its end.
			for !tooLong && err == nil && incomplete(line) {
				var more []byte
				more, tooLong, err = lineio.ReadLine(br, maxServeLine-len(line)-1)
				line = append(append(line, '\n'), more...)
			}
			if t := bytes.TrimSpace(line); len(t) > 0 || tooLong {
				if reply, _ := badLineReply(t, tooLong); reply != nil {
					out.Write(reply)
				} else if _, werr := pw.Write(append(t, '\n')); werr != nil {
					in.Close()
					return
				}
			}
			if err != nil {
				pw.CloseWithError(err) // io.EOF: the end of input
				return
			}
		}
	}()
	return &filteredReader{pr: pr, in: in}
}

type filteredReader struct {
	pr *io.PipeReader
	in io.Closer
}

func (f *filteredReader) Read(p []byte) (int, error) { return f.pr.Read(p) }

func (f *filteredReader) Close() error {
	f.pr.Close()
	return f.in.Close()
}

// incomplete reports whether line is the start of a JSON value that goes
// on past its end.
func incomplete(line []byte) bool {
	t := bytes.TrimSpace(line)
	if len(t) == 0 || (t[0] != '{' && t[0] != '[') || json.Valid(t) {
		return false
	}
	var v json.RawMessage
	return errors.Is(json.NewDecoder(bytes.NewReader(t)).Decode(&v), io.ErrUnexpectedEOF)
}

// messageProblem is what makes a message the SDK decodes unusable, or "":
// an id it would read as another (7.5 as 7; past int64, as the least
// int64), which the answer would then carry; or an id with neither a
// method nor a result or error, which it would drop unanswered.
func messageProblem(msg []byte) string {
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(msg, &head) != nil || len(head.ID) == 0 {
		return ""
	}
	if string(head.ID) == "null" {
		if head.Method != nil {
			// The SDK takes it for a notification and answers nothing;
			// MCP says an id is never null.
			return "a request's id is a string or an integer, never null"
		}
		return ""
	}
	if c := head.ID[0]; c == '-' || c >= '0' && c <= '9' {
		if _, err := strconv.ParseInt(string(head.ID), 10, 64); err != nil {
			return fmt.Sprintf("the id %s is not a string or an integer of 64 bits", head.ID)
		}
	}
	if head.Method == nil && head.Result == nil && head.Error == nil {
		return "a message with an id needs a method (a request), or a result or an error (an answer)"
	}
	return ""
}

// paramsProblem is what the SDK would refuse in a request's params in Go's
// words (a prompt argument that is not a string: "cannot unmarshal … into
// Go struct field"), or "".
func paramsProblem(msg []byte) string {
	if !bytes.Contains(msg, []byte(`"prompts/get"`)) {
		return "" // spares the decoding of every other message
	}
	var req struct {
		Method string `json:"method"`
		Params struct {
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &req) != nil || req.Method != "prompts/get" || len(req.Params.Arguments) == 0 || string(req.Params.Arguments) == "null" {
		return ""
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(req.Params.Arguments, &args) != nil {
		return "a prompt's arguments are an object of names and strings, e.g. {\"who\": \"Ada\"}"
	}
	for _, name := range slices.Sorted(maps.Keys(args)) {
		if v := args[name]; v[0] != '"' && string(v) != "null" {
			return fmt.Sprintf("a prompt's arguments are strings: %s is %s; send it as the string %s", strconv.Quote(name), jsonKind(v), strconv.Quote(string(v)))
		}
	}
	return ""
}

// jsonKind names the JSON type of v, valid JSON that is not a string.
func jsonKind(v json.RawMessage) string {
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

// badLineReply is the error answering line when the SDK would not take it
// as JSON-RPC, or nil, and the error's JSON-RPC code.
func badLineReply(line []byte, tooLong bool) (reply []byte, code int64) {
	why := ""
	switch {
	case tooLong:
		code, why = jsonrpc.CodeInvalidRequest, fmt.Sprintf("the message is longer than %d MiB", maxServeLine>>20)
	case !json.Valid(line):
		code, why = jsonrpc.CodeParseError, "not JSON"
	case line[0] == '[':
		var batch []json.RawMessage
		json.Unmarshal(line, &batch)
		if len(batch) == 0 {
			code, why = jsonrpc.CodeInvalidRequest, "an empty batch"
		}
		ids := map[jsonrpc.ID]bool{}
		for _, m := range batch {
			msg, err := jsonrpc.DecodeMessage(m)
			if err != nil {
				code, why = jsonrpc.CodeInvalidRequest, err.Error()
				continue
			}
			if p := messageProblem(m); p != "" {
				code, why = jsonrpc.CodeInvalidRequest, p
				continue
			}
			// The SDK ends the connection over a batch that uses an id twice.
			if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
				if ids[req.ID] {
					code, why = jsonrpc.CodeInvalidRequest, fmt.Sprintf("the batch uses the id %v twice", req.ID.Raw())
				}
				ids[req.ID] = true
			}
		}
	default:
		if _, err := jsonrpc.DecodeMessage(line); err != nil {
			code, why = jsonrpc.CodeInvalidRequest, err.Error()
		} else if p := messageProblem(line); p != "" {
			code, why = jsonrpc.CodeInvalidRequest, p
		} else if p := paramsProblem(line); p != "" {
			code, why = jsonrpc.CodeInvalidParams, p
		}
	}
	if code == 0 {
		return nil, 0
	}
	// The request's id when one can be read, else null.
	var head struct {
		ID json.RawMessage `json:"id"`
	}
	id := json.RawMessage("null")
	if json.Unmarshal(line, &head) == nil && len(head.ID) > 0 && (head.ID[0] == '"' || head.ID[0] == '-' || head.ID[0] >= '0' && head.ID[0] <= '9') {
		id = head.ID
	}
	msg := "Invalid Request: " + why
	switch code {
	case jsonrpc.CodeParseError:
		msg = "Parse error: the line is " + why
	case jsonrpc.CodeInvalidParams:
		msg = "Invalid params: " + why
	}
	return errorLine(id, code, msg), code
}

// errorLine is the JSON-RPC error answer to the request with id (raw JSON,
// null when it has none), as a line.
func errorLine(id json.RawMessage, code int64, msg string) []byte {
	type wireError struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}
	reply, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   wireError       `json:"error"`
	}{"2.0", id, wireError{code, msg}})
	return append(reply, '\n')
}

// checkedBodies answers a POST whose JSON the SDK would misread (an id it
// takes for another, 7.5 for 7, or a request's null id for a
// notification's) or refuse in words for a person with its JSON-RPC error
// and 400, as serve over stdio answers such a line; what is not JSON, and
// every other request, goes on to next with its body as it came.
func checkedBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		// As much as the SDK takes (it answers a longer body 413).
		body, err := io.ReadAll(io.LimitReader(r.Body, int64(maxServeLine)+1))
		if t := bytes.TrimSpace(body); err == nil && len(body) <= maxServeLine && json.Valid(t) {
			if reply, code := badLineReply(t, false); reply != nil {
				status := http.StatusBadRequest
				if code == jsonrpc.CodeInvalidParams {
					// A request the server takes, refused for its params, as
					// the SDK answers such: 200 and the JSON-RPC error.
					status = http.StatusOK
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				w.Write(reply)
				return
			}
		}
		r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		pw := &plainRefusals{ResponseWriter: w, body: body}
		next.ServeHTTP(pw, r)
		pw.finish()
	})
}

// plainRefusals puts the SDK's plain-text refusals of a POST (400: a
// method it does not handle, a request it finds invalid, a body that is
// not JSON, a batch) in JSON-RPC's terms, as serve over stdio answers such
// a line: a client reads a JSON-RPC error, not a transport failure. A
// method not handled is a request's error (200, -32601), and a notification
// of one is taken (202), as stdio ignores it.
type plainRefusals struct {
	http.ResponseWriter
	body  []byte
	held  *bytes.Buffer // the SDK's text, while it is being refused
	begun bool          // an answer of another kind is under way
}

func (p *plainRefusals) WriteHeader(code int) {
	if !p.begun && p.held == nil && code == http.StatusBadRequest && strings.HasPrefix(p.Header().Get("Content-Type"), "text/plain") {
		p.held = new(bytes.Buffer)
		return
	}
	p.begun = true
	p.ResponseWriter.WriteHeader(code)
}

func (p *plainRefusals) Write(b []byte) (int, error) {
	if p.held != nil {
		return p.held.Write(b)
	}
	p.begun = true
	return p.ResponseWriter.Write(b)
}

func (p *plainRefusals) Flush() {
	if f, ok := p.ResponseWriter.(http.Flusher); ok && p.held == nil {
		f.Flush()
	}
}

func (p *plainRefusals) Unwrap() http.ResponseWriter { return p.ResponseWriter }

func (p *plainRefusals) finish() {
	if p.held == nil {
		return
	}
	text := strings.TrimSpace(p.held.String())
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	single := json.Unmarshal(bytes.TrimSpace(p.body), &msg) == nil
	id := json.RawMessage("null")
	if single && len(msg.ID) > 0 && string(msg.ID) != "null" {
		id = msg.ID
	}
	status, code, message := http.StatusBadRequest, int64(jsonrpc.CodeInvalidRequest), "Invalid Request: "+text
	switch {
	case strings.HasPrefix(text, "JSON RPC not handled") && single:
		if string(id) == "null" {
			p.Header().Del("Content-Type")
			p.Header().Del("X-Content-Type-Options")
			p.ResponseWriter.WriteHeader(http.StatusAccepted)
			return
		}
		status, code, message = http.StatusOK, jsonrpc.CodeMethodNotFound, fmt.Sprintf("method not found: %q", msg.Method)
	case strings.HasPrefix(text, "malformed payload"):
		code, message = jsonrpc.CodeParseError, "Parse error: "+text
	case strings.HasPrefix(text, "invalid request: "):
		message = "Invalid Request: " + strings.TrimPrefix(text, "invalid request: ")
	}
	reply := errorLine(id, code, message)
	h := p.Header()
	h.Del("X-Content-Type-Options")
	h.Set("Content-Type", "application/json")
	p.ResponseWriter.WriteHeader(status)
	p.ResponseWriter.Write(reply)
}

type readCloser struct {
	io.Reader
	io.Closer
}
