package engine

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/internal/fakemcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"
)

// authServer serves the fake behind fakemcp's test authorization server.
type authServer struct {
	*httptest.Server
	*fakemcp.AuthServer
}

func newAuthServer(t *testing.T, ttl time.Duration) *authServer {
	srv := fakemcp.NewServer(remoteSpec)
	as := fakemcp.NewAuthServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil), ttl)
	ts := httptest.NewServer(as)
	as.URL = ts.URL
	t.Cleanup(ts.Close)
	return &authServer{ts, as}
}

func (a *authServer) counts() (int, int) { return a.AuthServer.Counts() }

// browser plays the user's browser: it follows the authorization URL's
// redirects to mcpctl's loopback listener.
func browser(_ context.Context, _, authURL string) error {
	go func() {
		if resp, err := http.Get(authURL); err == nil {
			resp.Body.Close()
		}
	}()
	return nil
}

func authEngine(t *testing.T, url, dir string, browse func(context.Context, string, string) error) *Engine {
	s := remoteServer("secure", "http", url)
	s.Headers = nil
	e := New(&config.Config{File: "mcp.json", Servers: []*config.Server{s}}, &Options{ShutdownTimeout: 2 * time.Second, Auth: &AuthOptions{Dir: dir, Browse: browse}})
	t.Cleanup(func() { e.Close() })
	return e
}

// A login through the browser (here: a client that follows the redirects
// to the loopback listener), a later run with the stored token, a refresh,
// and a run with no token that fails at once asking for a login.
func TestOAuth(t *testing.T) {
	a := newAuthServer(t, time.Minute)
	dir := t.TempDir() + "/tokens"
	url := a.Server.URL + "/mcp"
	var shown []string
	e := authEngine(t, url, dir, func(ctx context.Context, server, authURL string) error {
		shown = append(shown, server)
		return browser(ctx, server, authURL)
	})
	if err := e.Start(ctx(t)); err != nil {
		t.Fatalf("login: %v", err)
	}
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "secure.echo"}); err != nil {
		t.Fatal(err)
	}
	e.Close()
	if len(shown) != 1 || shown[0] != "secure" {
		t.Errorf("browser shown for %v", shown)
	}
	path := TokenPath(dir, url)
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", st, err)
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("token dir mode %v", st.Mode().Perm())
	}

	// Later, without a browser: the stored token is used.
	e2 := authEngine(t, url, dir, nil)
	if err := e2.Start(ctx(t)); err != nil {
		t.Fatalf("with the stored token: %v", err)
	}
	if _, err := e2.CallTool(ctx(t), &CallRequest{Name: "secure.echo"}); err != nil {
		t.Fatal(err)
	}
	e2.Close()
	if n, _ := a.counts(); n != 1 {
		t.Errorf("authorized %d times, want once", n)
	}

	// After it expires, the refresh token gets a new one, saved.
	saved, _ := LoadToken(dir, url)
	saved.Token.Expiry = time.Now().Add(-time.Minute)
	data, _ := json.Marshal(saved)
	os.WriteFile(path, data, 0o600)
	e3 := authEngine(t, url, dir, nil)
	if err := e3.Start(ctx(t)); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	e3.Close()
	if _, refreshed := a.counts(); refreshed != 1 {
		t.Errorf("refreshed %d times, want once", refreshed)
	}
	saved, _ = LoadToken(dir, url)
	if saved == nil || !saved.Token.Valid() {
		t.Errorf("the refreshed token was not saved: %+v", saved)
	}

	// Two at once after it expired again: one refreshes, the other uses
	// what it saved (the refresh token is good for one use only).
	saved.Token.Expiry = time.Now().Add(-time.Minute)
	data, _ = json.Marshal(saved)
	os.WriteFile(path, data, 0o600)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := authEngine(t, url, dir, nil)
			errs <- e.Start(ctx(t))
			e.Close()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent start after expiry: %v", err)
		}
	}
	if _, refreshed := a.counts(); refreshed != 2 {
		t.Errorf("refreshed %d times in all, want 2", refreshed)
	}

	// No token and nobody to ask: fail at once, saying what to run.
	t0 := time.Now()
	e4 := authEngine(t, url, t.TempDir(), nil)
	err := e4.Start(ctx(t))
	if KindOf(err) != KindAuth || !strings.Contains(strings.Join(asError(err).Hint, "\n"), "mcpctl auth login secure") {
		t.Fatalf("without a token: %v (%s)", err, KindOf(err))
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("failing took %s", d)
	}
	if strings.Contains(err.Error(), "access-") || strings.Contains(err.Error(), "refresh-") {
		t.Errorf("a token in the error: %v", err)
	}
}

// auth logout while a refresh is under way: the refreshed token is not
// saved back after it, and the lock file stays.
func TestForgetTokenWaitsForARefresh(t *testing.T) {
	dir := t.TempDir()
	asked, release := make(chan struct{}), make(chan struct{})
	tokenEndpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(asked)
		<-release
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"new","token_type":"Bearer","expires_in":3600,"refresh_token":"r2"}`)
	}))
	defer tokenEndpoint.Close()
	const url = "https://mcp.example/mcp"
	store := newTokenStore(dir, url, tokenEndpoint.Client())
	if err := store.save(&SavedToken{ClientID: "c", TokenURL: tokenEndpoint.URL,
		Token: &oauth2.Token{AccessToken: "old", RefreshToken: "r1", Expiry: time.Now().Add(-time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	refreshed := make(chan error, 1)
	go func() {
		_, err := (&storedSource{store: store, server: "s"}).Token()
		refreshed <- err
	}()
	<-asked
	forgot := make(chan bool, 1)
	go func() {
		had, err := ForgetToken(dir, url)
		if err != nil {
			t.Error(err)
		}
		forgot <- had
	}()
	time.Sleep(50 * time.Millisecond) // time for a logout that does not wait
	close(release)
	if err := <-refreshed; err != nil {
		t.Fatal(err)
	}
	if !<-forgot {
		t.Error("ForgetToken found no token")
	}
	if tok, err := LoadToken(dir, url); tok != nil || err != nil {
		t.Errorf("after logout the token is %+v (%v)", tok, err)
	}
	if _, err := os.Stat(TokenPath(dir, url) + ".lock"); err != nil {
		t.Errorf("the lock file: %v", err)
	}
}

// A refresh token the authorization server refuses (invalid_grant: revoked,
// expired or used up) is dropped from the token file, the rest kept: the
// error says to log in again, and no later command tries it again. A
// refresh that fails otherwise (the server down) keeps it, to try later.
func TestDeadRefreshTokenIsDropped(t *testing.T) {
	var asked atomic.Int64
	status := http.StatusBadRequest
	tokenEndpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status == http.StatusBadRequest {
			io.WriteString(w, `{"error":"invalid_grant","error_description":"refresh token revoked"}`)
		}
	}))
	defer tokenEndpoint.Close()
	const url = "https://mcp.example/mcp"
	for _, tc := range []struct {
		status  int
		keepsIt bool
	}{{http.StatusInternalServerError, true}, {http.StatusBadRequest, false}} {
		dir := t.TempDir()
		asked.Store(0)
		status = tc.status
		store := newTokenStore(dir, url, tokenEndpoint.Client())
		if err := store.save(&SavedToken{ClientID: "c", TokenURL: tokenEndpoint.URL,
			Token: &oauth2.Token{AccessToken: "old", RefreshToken: "r1", Expiry: time.Now().Add(-time.Hour)}}); err != nil {
			t.Fatal(err)
		}
		var first int64
		for i := range 2 {
			if i == 1 {
				first = asked.Load()
			}
			_, err := (&storedSource{store: store, server: "s"}).Token()
			if KindOf(err) != KindAuth || !strings.Contains(strings.Join(asError(err).Hint, "\n"), "mcpctl auth login s") {
				t.Fatalf("status %d: %v", tc.status, err)
			}
			if strings.Contains(err.Error(), "r1") {
				t.Errorf("the refresh token in the error: %v", err)
			}
		}
		saved, err := LoadToken(dir, url)
		if err != nil || saved == nil || saved.ClientID != "c" || saved.TokenURL != tokenEndpoint.URL {
			t.Fatalf("status %d: the token file after: %v %+v", tc.status, err, saved)
		}
		if kept := saved.Token.RefreshToken == "r1"; kept != tc.keepsIt {
			t.Errorf("status %d: refresh token kept %v, want %v", tc.status, kept, tc.keepsIt)
		}
		// (oauth2 asks twice a try when the endpoint fails: the client's
		// credentials in a header, then in the form.)
		if again := asked.Load() > first; first == 0 || again != tc.keepsIt {
			t.Errorf("status %d: the first try asked the token endpoint %d times, the second asked again: %v", tc.status, first, again)
		}
	}
}

// An authorization server's invalid_grant is read whether it says its body
// is JSON, as RFC 6749 asks, or plain text, as some do; other failures are
// not a refused grant.
func TestRefusedGrant(t *testing.T) {
	for _, c := range []struct {
		contentType string
		status      int
		body        string
		refused     bool
	}{
		{"application/json", 400, `{"error":"invalid_grant","error_description":"revoked"}`, true},
		{"text/plain; charset=utf-8", 400, `{"error":"invalid_grant"}`, true},
		{"application/json", 400, `{"error":"invalid_client"}`, false},
		{"text/plain", 503, `busy`, false},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", c.contentType)
			w.WriteHeader(c.status)
			io.WriteString(w, c.body)
		}))
		conf := &oauth2.Config{ClientID: "c", Endpoint: oauth2.Endpoint{TokenURL: srv.URL}}
		_, err := conf.TokenSource(context.Background(), &oauth2.Token{RefreshToken: "r", Expiry: time.Now().Add(-time.Hour)}).Token()
		srv.Close()
		if err == nil || refusedGrant(err) != c.refused {
			t.Errorf("%s %d %s: refused %v, want %v (err %v)", c.contentType, c.status, c.body, refusedGrant(err), c.refused, err)
		}
	}
}

// A server that answers 403 (with no insufficient_scope challenge) does not
// let mcpctl in: that is said, not a login to run (the SDK hands a 403 to
// the OAuth handler as it does a 401).
func TestForbiddenIsNoLogin(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Forbidden", http.StatusForbidden)
	}))
	defer ts.Close()
	e := authEngine(t, ts.URL+"/mcp", t.TempDir(), nil)
	err := e.Start(ctx(t))
	if KindOf(err) != KindUnavailable || !strings.Contains(err.Error(), "server secure answered 403 Forbidden: it does not let mcpctl in") {
		t.Errorf("err = %v (kind %s)", err, KindOf(err))
	}
}

// The insufficient_scope challenge is the error parameter of the
// WWW-Authenticate header, not the words anywhere in it.
func TestInsufficientScopeChallenge(t *testing.T) {
	for h, want := range map[string]bool{
		`Bearer error="insufficient_scope", scope="files:write"`:                   true,
		`Bearer realm="x", error=insufficient_scope`:                               true,
		`Bearer error="invalid_token", error_description="not insufficient_scope"`: false,
		`Bearer realm="insufficient_scope"`:                                        false,
		``:                                                                         false,
	} {
		if got := insufficientScope().MatchString(h); got != want {
			t.Errorf("%q: %v, want %v", h, got, want)
		}
	}
}

// A server whose url names no type, and whose OAuth offers no registration
// (404), is told as that, with the hint for a fixed token: it is not tried
// over the SSE transport, whose 401 said "needs authorization" with a hint
// to run auth login, which refused a server not known for streamable HTTP.
func TestOAuthRegistrationRefusedNoSSEFallback(t *testing.T) {
	srv := fakemcp.NewServer(remoteSpec)
	as := fakemcp.NewAuthServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil), time.Hour)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/register" {
			http.NotFound(w, r)
			return
		}
		as.ServeHTTP(w, r)
	}))
	as.URL = ts.URL
	t.Cleanup(ts.Close)
	e := authEngine(t, ts.URL+"/mcp", t.TempDir(), browser)
	e.cfg.Servers[0].Type, e.cfg.Servers[0].TypeImplied = "http", true
	err := e.Start(ctx(t))
	if err == nil || !strings.Contains(err.Error(), "failed to register client") || strings.Contains(err.Error(), "needs authorization: it answered 401") {
		t.Fatalf("err = %v", err)
	}
	if h := strings.Join(asError(err).Hint, " "); !strings.Contains(h, "may not use OAuth") {
		t.Errorf("hints: %s", h)
	}
}

// loggedIn is a server behind the test authorization server and a token
// saved for it by a login through the browser.
func loggedIn(t *testing.T) (a *authServer, dir, url string) {
	t.Helper()
	a = newAuthServer(t, time.Hour)
	dir, url = t.TempDir(), a.Server.URL+"/mcp"
	e := authEngine(t, url, dir, browser)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatalf("login: %v", err)
	}
	e.Close()
	return a, dir, url
}

// A server that answers 401 to the saved token before its expiry (it
// restarted and forgot the tokens it gave, or revoked it) while the
// refresh token is still good: the refresh grant is asked once, the new
// token saved, and the request sent again with it, for a start as for a
// later request.
func TestOAuthRefusedTokenIsRefreshed(t *testing.T) {
	for _, later := range []bool{false, true} {
		a, dir, url := loggedIn(t)
		before, _ := LoadToken(dir, url)
		e := authEngine(t, url, dir, nil)
		if later {
			if err := e.Start(ctx(t)); err != nil {
				t.Fatal(err)
			}
		}
		a.ForgetAccessTokens()
		if !later {
			if err := e.Start(ctx(t)); err != nil {
				t.Fatalf("start with a token the server forgot: %v", err)
			}
		}
		if _, err := e.CallTool(ctx(t), &CallRequest{Name: "secure.echo"}); err != nil {
			t.Fatalf("later %v: %v", later, err)
		}
		e.Close()
		if n := a.RefreshGrants(); n != 1 {
			t.Errorf("later %v: %d refresh grants, want 1", later, n)
		}
		if n, _ := a.counts(); n != 1 {
			t.Errorf("later %v: authorized %d times, want once (the login)", later, n)
		}
		after, err := LoadToken(dir, url)
		if err != nil || after == nil || after.Token.AccessToken == before.Token.AccessToken ||
			after.Token.RefreshToken == before.Token.RefreshToken || !after.Token.Valid() || after.ClientID != before.ClientID {
			t.Fatalf("later %v: token file before %+v, after %+v (%v)", later, before.Token, after, err)
		}
		// The token saved is the one the server now takes: a new run
		// uses it without another refresh.
		e2 := authEngine(t, url, dir, nil)
		if err := e2.Start(ctx(t)); err != nil {
			t.Fatal(err)
		}
		e2.Close()
		if n := a.RefreshGrants(); n != 1 {
			t.Errorf("later %v: %d refresh grants after a run with the saved token, want 1", later, n)
		}
	}
}

// The same 401 when the refresh is refused too (invalid_grant), or when
// the refreshed token is refused as well: the error of today (kind auth,
// the login to run), after exactly one refresh grant, no token in it.
func TestOAuthRefusedTokenRefreshFails(t *testing.T) {
	for _, c := range []struct {
		name  string
		later bool
		spoil func(*authServer)
		says  string
	}{
		{"refresh refused", false, func(a *authServer) { a.ForgetAccessTokens(); a.RevokeRefreshTokens() },
			"server secure needs authorization: it refused the saved token, and its authorization server refused the saved refresh token (invalid_grant)"},
		{"refresh refused later", true, func(a *authServer) { a.ForgetAccessTokens(); a.RevokeRefreshTokens() },
			"server secure needs authorization: it refused the saved token, and its authorization server refused the saved refresh token (invalid_grant)"},
		{"new token refused", false, func(a *authServer) { a.RefuseTokens(true) },
			"server secure needs authorization: it refused the saved token, and the refreshed one too"},
		{"new token refused later", true, func(a *authServer) { a.RefuseTokens(true) },
			"server secure needs authorization: it refused the saved token, and the refreshed one too"},
	} {
		a, dir, url := loggedIn(t)
		e := authEngine(t, url, dir, nil)
		var err error
		if c.later {
			if err := e.Start(ctx(t)); err != nil {
				t.Fatal(err)
			}
			c.spoil(a)
			_, err = e.CallTool(ctx(t), &CallRequest{Name: "secure.echo"})
		} else {
			c.spoil(a)
			err = e.Start(ctx(t))
		}
		if KindOf(err) != KindAuth || !strings.Contains(err.Error(), c.says) ||
			!strings.Contains(strings.Join(asError(err).Hint, "\n"), "mcpctl auth login secure") {
			t.Errorf("%s: %v (kind %s)", c.name, err, KindOf(err))
		}
		if err != nil && (strings.Contains(err.Error(), "access-") || strings.Contains(err.Error(), "refresh-")) {
			t.Errorf("%s: a token in the error: %v", c.name, err)
		}
		// A second request, the server having taken no token since,
		// does not refresh again.
		e.CallTool(ctx(t), &CallRequest{Name: "secure.echo"})
		e.Close()
		if n := a.RefreshGrants(); n != 1 {
			t.Errorf("%s: %d refresh grants, want 1", c.name, n)
		}
		if n, _ := a.counts(); n != 1 {
			t.Errorf("%s: authorized %d times, want once (the login)", c.name, n)
		}
		saved, _ := LoadToken(dir, url)
		if refused := strings.HasPrefix(c.name, "refresh refused"); saved == nil || (saved.Token.RefreshToken == "") != refused {
			t.Errorf("%s: token file after: %+v", c.name, saved)
		}
	}
}

// A token the server refuses before its expiry, saved without a refresh
// token, is dead: it is marked expired in the file, so that auth status
// no longer calls the server authorized (it did, until the expiry, hours
// away), and the error says to log in.
func TestOAuthRefusedTokenWithoutRefreshTokenIsExpired(t *testing.T) {
	a, dir, url := loggedIn(t)
	store := newTokenStore(dir, url, nil)
	saved, err := store.load()
	if err != nil || saved == nil {
		t.Fatal(saved, err)
	}
	saved.Token.RefreshToken = ""
	if err := store.save(saved); err != nil {
		t.Fatal(err)
	}
	a.ForgetAccessTokens()
	e := authEngine(t, url, dir, nil)
	err = e.Start(ctx(t))
	if KindOf(err) != KindAuth || !strings.Contains(err.Error(), "there is no refresh token") {
		t.Errorf("start with a refused token and no refresh token: %v", err)
	}
	e.Close()
	after, err := LoadToken(dir, url)
	if err != nil || after == nil || after.Token.Valid() || after.Token.AccessToken != saved.Token.AccessToken {
		t.Errorf("token file after: %+v (%v), want the refused token, expired", after, err)
	}
}

// The refresh once is for one retry: a server that took the refreshed
// token and refuses it later (restarted again, hours after) gets it
// refreshed again, once more each time; one that refuses the token got
// right after does not (TestOAuthRefusedTokenRefreshFails).
func TestOAuthRefusedAgainLaterIsRefreshed(t *testing.T) {
	a, dir, url := loggedIn(t)
	e := authEngine(t, url, dir, nil)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		a.ForgetAccessTokens()
		if _, err := e.CallTool(ctx(t), &CallRequest{Name: "secure.echo"}); err != nil {
			t.Fatalf("refused the %d. time: %v", i, err)
		}
		if n := a.RefreshGrants(); n != i {
			t.Errorf("refused the %d. time: %d refresh grants, want %d", i, n, i)
		}
	}
	// Now refusing every token: one grant more, then the auth error,
	// and none for the request after.
	a.RefuseTokens(true)
	for range 2 {
		if _, err := e.CallTool(ctx(t), &CallRequest{Name: "secure.echo"}); KindOf(err) != KindAuth ||
			!strings.Contains(err.Error(), "it refused the saved token, and the refreshed one too") {
			t.Fatalf("refusing every token: %v (kind %s)", err, KindOf(err))
		}
	}
	if n := a.RefreshGrants(); n != 4 {
		t.Errorf("refusing every token: %d refresh grants in all, want 4", n)
	}
	if n, _ := a.counts(); n != 1 {
		t.Errorf("authorized %d times, want once (the login)", n)
	}
}

// After the refreshed token was refused too (the auth error), a login in
// another terminal saves a new token: the engine's next request sends it,
// with no refresh grant, without being started again.
func TestOAuthRefusedAgainTakesANewLogin(t *testing.T) {
	a, dir, url := loggedIn(t)
	e := authEngine(t, url, dir, nil)
	if err := e.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	a.RefuseTokens(true)
	if _, err := e.CallTool(ctx(t), &CallRequest{Name: "secure.echo"}); KindOf(err) != KindAuth {
		t.Fatalf("refusing every token: %v (kind %s)", err, KindOf(err))
	}
	// The server forgets them all, and takes tokens again: the one
	// the engine has is refused, the login's taken.
	a.ForgetAccessTokens()
	a.RefuseTokens(false)
	s := remoteServer("secure", "http", url)
	s.Headers = nil
	login := New(&config.Config{File: "mcp.json", Servers: []*config.Server{s}}, &Options{ShutdownTimeout: 2 * time.Second, Auth: &AuthOptions{Dir: dir, Browse: browser, Fresh: true}})
	if err := login.Start(ctx(t)); err != nil {
		t.Fatalf("login: %v", err)
	}
	login.Close()
	if n, _ := a.counts(); n != 2 {
		t.Fatalf("authorized %d times, want twice (the logins)", n)
	}
	for i := range 2 {
		if _, err := e.CallTool(ctx(t), &CallRequest{Name: "secure.echo"}); err != nil {
			t.Fatalf("request %d after the login: %v", i, err)
		}
	}
	if n := a.RefreshGrants(); n != 1 {
		t.Errorf("%d refresh grants, want 1 (before the login)", n)
	}
}

// The same in the OAuth handler (a 401 that reaches Authorize): the
// renewed token refused, the token file is read before failing, and a
// valid token saved there since is sent; without one, the error and no
// refresh grant.
func TestRefusedRenewedTokenReadsTheFile(t *testing.T) {
	var asked atomic.Int64
	tokenEndpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"refreshed","token_type":"Bearer","expires_in":3600,"refresh_token":"r9"}`)
	}))
	defer tokenEndpoint.Close()
	const url = "https://mcp.example/mcp"
	dir := t.TempDir()
	store := newTokenStore(dir, url, tokenEndpoint.Client())
	saveAccess := func(access string) {
		t.Helper()
		if err := store.save(&SavedToken{ClientID: "c", TokenURL: tokenEndpoint.URL,
			Token: &oauth2.Token{AccessToken: access, RefreshToken: "r1", Expiry: time.Now().Add(time.Hour)}}); err != nil {
			t.Fatal(err)
		}
	}
	saveAccess("t2")
	renewed := "t2"
	ss := &storedSource{store: store, server: "s", last: &oauth2.Token{AccessToken: "t2", Expiry: time.Now().Add(time.Hour)}}
	ss.renewed.Store(&renewed)
	if err := ss.refreshRefused("t2"); KindOf(err) != KindAuth || !strings.Contains(err.Error(), "and the refreshed one too") {
		t.Fatalf("refused again, nothing new saved: %v", err)
	}
	saveAccess("t3") // a login in another terminal
	if err := ss.refreshRefused("t2"); err != nil {
		t.Fatalf("refused again, a new login saved: %v", err)
	}
	if tok, err := ss.Token(); err != nil || tok.AccessToken != "t3" {
		t.Fatalf("token after: %v %v", tok, err)
	}
	// That one refused too: no refresh, the error.
	if err := ss.refreshRefused("t3"); KindOf(err) != KindAuth {
		t.Fatalf("the login's token refused: %v", err)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the token endpoint asked %d times, want never", n)
	}
	// Taken, then refused: refreshed.
	ss.accepted("t3")
	if err := ss.refreshRefused("t3"); err != nil {
		t.Fatalf("taken, then refused: %v", err)
	}
	if tok, err := ss.Token(); err != nil || tok.AccessToken != "refreshed" || asked.Load() == 0 {
		t.Fatalf("token after: %v %v (asked %d)", tok, err, asked.Load())
	}
}
