package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// RequestIDHeader carries a request's correlation id. A client may send
// one; otherwise the daemon makes one. The daemon answers with it, and it
// is on every log line and audit entry about the request.
const RequestIDHeader = "Mcpctl-Request-Id"

type requestIDKey struct{}

// WithRequestID returns a context that carries a correlation id: a
// [Client] sends it with its requests, and loggers made with
// [RequestIDHandler] add it to lines logged with the context.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID returns the correlation id ctx carries, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

func newRequestID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// validRequestID keeps what a client sends short and printable.
func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// RequestIDHandler wraps h so that a record logged with a context that
// carries a correlation id (see [WithRequestID]) gets a "requestId"
// attribute.
func RequestIDHandler(h slog.Handler) slog.Handler {
	if _, ok := h.(requestIDHandler); ok {
		return h
	}
	return requestIDHandler{h}
}

type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" {
		r = r.Clone()
		r.AddAttrs(slog.String("requestId", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(as)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}

// An AuditEntry is one line of the audit log: a call, a server's start,
// stop or failure, a start, stop or restart by hand, or a config reload.
// It never holds argument values, only names.
type AuditEntry struct {
	Time time.Time `json:"time"`
	// Event is "call", "start", "stop", "fail" (the server became
	// unavailable), "by-hand" (mcpctl start, stop or restart; Detail says
	// which), "reload" or "refused" (a connection from another user, or
	// one whose user cannot be told; Detail says why).
	Event string `json:"event"`
	// UID is the user on the other end of the socket, for requests.
	UID       *int   `json:"uid,omitempty"`
	RequestID string `json:"requestId,omitempty"`
	Server    string `json:"server,omitempty"`
	// Name is the server.tool of a call; Args its argument names, sorted.
	Name       string   `json:"name,omitempty"`
	Args       []string `json:"args,omitempty"`
	DurationMs *float64 `json:"durationMs,omitempty"`
	// Outcome is "ok", "tool_error", an error kind ("timeout", …), or
	// "error" for an error of no kind (a call its caller cancelled).
	Outcome string `json:"outcome,omitempty"`
	// Detail says more: the state a server went to, what a reload did.
	Detail string `json:"detail,omitempty"`
}

// An AuditLog appends [AuditEntry] lines as JSON to a writer. It is safe
// for concurrent use; a nil *AuditLog records nothing.
type AuditLog struct {
	mu sync.Mutex
	w  io.Writer
}

// NewAuditLog returns an audit log that writes to w.
func NewAuditLog(w io.Writer) *AuditLog { return &AuditLog{w: w} }

// Record appends e, with the time now when e has none.
func (a *AuditLog) Record(e AuditEntry) {
	if a == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	data, err := json.Marshal(e)
	if err != nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.w.Write(append(data, '\n'))
}

// argNames returns the names of a call's arguments, sorted and without
// repeats: the keys of its JSON object and of its key=value and key:=json
// pairs. Values are never looked at beyond that.
func argNames(req *CallRequest) []string {
	var names []string
	if len(req.Arguments) > 0 {
		var obj map[string]json.RawMessage
		if json.Unmarshal(req.Arguments, &obj) == nil {
			for k := range obj {
				names = append(names, k)
			}
		}
	}
	for _, p := range req.Pairs {
		i := strings.IndexByte(p, '=')
		if i < 0 {
			continue
		}
		names = append(names, strings.TrimSuffix(p[:i], ":"))
	}
	slices.Sort(names)
	return slices.Compact(names)
}
