package commands

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A login whose server's authorization metadata never answers fails once
// the server's own startupTimeout has passed, saying so, instead of waiting
// the five minutes a user gets in the browser, silent.
func TestLoginMetadataStalls(t *testing.T) {
	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer hang.Close()
	defer close(stop)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+hang.URL+`/meta"`)
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
	}))
	defer srv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mcp.json")
	os.WriteFile(cfg, []byte(`{"servers": {"h": {"type": "http", "url": "`+srv.URL+`/mcp", "startupTimeout": "1s"}}}`), 0o644)
	t.Setenv("MCPCTL_TOKEN_DIR", filepath.Join(dir, "tokens"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(dir, "run"))
	var stdout, stderr bytes.Buffer
	t0 := time.Now()
	code := Main(context.Background(), []string{"mcpctl", "-c", cfg, "auth", "login", "h", "--no-browser"}, strings.NewReader(""), &stdout, &stderr)
	if code != exitUnavailable || !strings.Contains(stderr.String(), "server h neither finished starting nor gave an authorization URL within 1s (its startupTimeout)") || time.Since(t0) > 30*time.Second {
		t.Errorf("exit %d after %v: %s", code, time.Since(t0).Round(time.Millisecond), stderr.String())
	}
}
