package engine

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/internal/fakemcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A url-only server that needs OAuth, no token, non-interactive: the
// KindAuth error must survive the 4xx fallback to SSE.
func TestAuthErrorNotHiddenByFallback(t *testing.T) {
	a := newAuthServer(t, time.Minute)
	s := remoteServer("secure", "http", a.Server.URL+"/mcp")
	s.Headers = nil
	s.TypeImplied = true
	e := New(&config.Config{File: "mcp.json", Servers: []*config.Server{s}}, &Options{ShutdownTimeout: 2 * time.Second, Auth: &AuthOptions{Dir: t.TempDir()}})
	t.Cleanup(func() { e.Close() })
	err := e.Start(ctx(t))
	if KindOf(err) != KindAuth {
		t.Fatalf("kind %s, want auth: %v", KindOf(err), err)
	}
}

// a secret in the url (from the environment) reaches a request's error.
func TestRemoteSecretNotInCallError(t *testing.T) {
	srv := fakemcp.NewServer(remoteSpec)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	url := ts.URL
	env := map[string]string{"KEY": "topsecretvalue"}
	cfg, err := config.Parse("mcp.json", []byte(`{"servers":{"r":{"type":"http","url":"`+url+`/?key=${KEY}"}}}`), t.TempDir(),
		func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	e := New(cfg, &Options{ShutdownTimeout: 2 * time.Second})
	t.Cleanup(func() { e.Close() })
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	// Break the transport under the live session: the next POST fails to dial.
	ts.Listener.Close()
	ts.CloseClientConnections()
	_, err = e.CallTool(ctx(t), &CallRequest{Name: "r.echo"})
	t.Logf("err: %v", err)
	if err != nil && strings.Contains(err.Error(), "topsecretvalue") {
		t.Errorf("secret leaked: %v", err)
	}
}

// A hanging token endpoint: the refresh gives up after refreshTimeout (the
// SDK asks for tokens without a context, so no startup or call timeout
// reaches it), and the start fails asking for a login.
func TestRefreshIsBounded(t *testing.T) {
	defer func(d time.Duration) { refreshTimeout = d }(refreshTimeout)
	refreshTimeout = time.Second
	a := newAuthServer(t, time.Minute)
	dir := t.TempDir()
	url := a.Server.URL + "/mcp"
	// Get a token through the browser flow.
	e := authEngine(t, url, dir, browser)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	e.Close()
	// Expire it and point its token endpoint at a server that never answers.
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // then the server notices the client giving up
		<-r.Context().Done()
	}))
	t.Cleanup(hang.Close)
	saved, _ := LoadToken(dir, url)
	saved.Token.Expiry = time.Now().Add(-time.Minute)
	saved.TokenURL = hang.URL + "/token"
	data, _ := json.Marshal(saved)
	os.WriteFile(TokenPath(dir, url), data, 0o600)
	s := remoteServer("secure", "http", url)
	s.Headers = nil
	s.StartupTimeout = 2 * time.Second
	e2 := New(&config.Config{File: "mcp.json", Servers: []*config.Server{s}}, &Options{ShutdownTimeout: 2 * time.Second, Auth: &AuthOptions{Dir: dir}})
	done := make(chan error, 1)
	go func() { done <- e2.Start(context.Background()) }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("start with a token that cannot be refreshed succeeded")
		}
	case <-time.After(8 * time.Second):
		t.Fatal("start still blocked after 8s: the token refresh has no deadline")
	}
	e2.Close()
}
