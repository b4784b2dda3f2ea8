package engine

import (
	"context"
	"encoding/json"
	"github.com/mcpctl/mcpctl/internal/testutil"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/mcpctl/mcpctl/internal/fakemcp"
)

// TestDaemonRequestIDAndAudit: the correlation id a client sends is on the
// daemon's log lines about the request, and the audit log has the call
// with its argument names, never a value, neither does the log.
func TestDaemonRequestIDAndAudit(t *testing.T) {
	e := startOne(t, "srv", fakemcp.Spec{Tools: []fakemcp.Tool{{Name: "echo"}}})
	var logs, audit testutil.Buffer
	d := NewDaemon(e, SessionInfo{Name: "test", PID: os.Getpid()},
		slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	d.SetAudit(NewAuditLog(&audit))
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	c := &Client{Socket: "test.sock", Dial: func(ctx context.Context) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "tcp", addr)
	}}
	cctx := WithRequestID(ctx(t), "req-42")
	if _, err := c.CallTool(cctx, &CallRequest{Name: "srv.echo", Arguments: json.RawMessage(`{"apiKey":"TOPSECRET"}`), Pairs: []string{"pin=SECRET2"}}); err != nil {
		t.Fatal(err)
	}
	// A request without an id gets one of the daemon's.
	if _, err := c.Status(ctx(t)); err != nil {
		t.Fatal(err)
	}
	var call map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		json.Unmarshal([]byte(line), &m)
		if m["msg"] == "call" {
			call = m
		}
		if m["msg"] == "request" && m["path"] == "/v1/status" {
			if id, _ := m["requestId"].(string); len(id) != 16 {
				t.Errorf("status request: requestId %q, want one the daemon made", id)
			}
		}
	}
	if call == nil || call["requestId"] != "req-42" {
		t.Errorf("call log line %v: want requestId req-42\n%s", call, logs.String())
	}
	got := audit.String()
	var entry AuditEntry
	if err := json.Unmarshal([]byte(strings.TrimSpace(got)), &entry); err != nil {
		t.Fatalf("audit: %v\n%s", err, got)
	}
	if entry.Event != "call" || entry.Name != "srv.echo" || entry.Server != "srv" || entry.RequestID != "req-42" ||
		strings.Join(entry.Args, ",") != "apiKey,pin" || entry.Outcome != "ok" || entry.DurationMs == nil {
		t.Errorf("audit entry %+v", entry)
	}
	for _, s := range []string{logs.String(), got} {
		if strings.Contains(s, "SECRET") {
			t.Errorf("a value reached a log:\n%s", s)
		}
	}
}
