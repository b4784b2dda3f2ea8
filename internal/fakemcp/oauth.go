package fakemcp

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// An AuthServer is an MCP server behind a minimal OAuth 2.1 authorization
// server of its own, for tests: protected resource metadata, authorization server
// metadata, dynamic client registration, an authorization endpoint that
// approves at once, and a token endpoint that checks PKCE and refreshes.
type AuthServer struct {
	URL string // set by the caller before serving: the base URL
	ttl time.Duration
	mux *http.ServeMux

	mu         sync.Mutex
	challenges map[string]string    // code → code_challenge
	tokens     map[string]time.Time // access token → expiry
	refreshes  map[string]bool      // refresh tokens good for one use
	n          int
	authorized int // times /authorize was visited
	refreshed  int
	grants     int  // refresh grants asked for, taken or not
	refuse     bool // every access token is refused
}

// NewAuthServer protects mcpHandler (served at /mcp) with tokens that
// last ttl. Set URL to the base URL it is served at.
func NewAuthServer(mcpHandler http.Handler, ttl time.Duration) *AuthServer {
	a := &AuthServer{ttl: ttl, challenges: map[string]string{}, tokens: map[string]time.Time{}, refreshes: map[string]bool{}}
	mux := http.NewServeMux()
	writeJSON := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/.well-known/oauth-protected-resource/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"resource": a.URL + "/mcp", "authorization_servers": []string{a.URL}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer": a.URL, "authorization_endpoint": a.URL + "/authorize", "token_endpoint": a.URL + "/token",
			"registration_endpoint": a.URL + "/register", "response_types_supported": []string{"code"},
			"grant_types_supported": []string{"authorization_code", "refresh_token"}, "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"none"},
		})
	})
	mux.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		var meta map[string]any
		json.NewDecoder(r.Body).Decode(&meta)
		meta["client_id"] = "client-1"
		writeJSON(w, http.StatusCreated, meta)
	})
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		a.mu.Lock()
		a.n++
		a.authorized++
		code := fmt.Sprintf("code-%d", a.n)
		a.challenges[code] = q.Get("code_challenge")
		a.mu.Unlock()
		if q.Get("code_challenge_method") != "S256" {
			http.Error(w, "PKCE S256 required", http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+q.Get("state"), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		a.mu.Lock()
		defer a.mu.Unlock()
		switch r.Form.Get("grant_type") {
		case "authorization_code":
			sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
			if want, ok := a.challenges[r.Form.Get("code")]; !ok || want != base64.RawURLEncoding.EncodeToString(sum[:]) {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
				return
			}
			delete(a.challenges, r.Form.Get("code"))
		case "refresh_token":
			a.grants++
			if !a.refreshes[r.Form.Get("refresh_token")] {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
				return
			}
			delete(a.refreshes, r.Form.Get("refresh_token"))
			a.refreshed++
		default:
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		a.n++
		access, refresh := fmt.Sprintf("access-%d", a.n), fmt.Sprintf("refresh-%d", a.n)
		a.tokens[access] = time.Now().Add(a.ttl)
		a.refreshes[refresh] = true
		writeJSON(w, http.StatusOK, map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": int(a.ttl.Seconds()), "refresh_token": refresh})
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		a.mu.Lock()
		exp, ok := a.tokens[tok]
		refuse := a.refuse
		a.mu.Unlock()
		if !ok || refuse || time.Now().After(exp) {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+a.URL+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	})
	a.mux = mux
	return a
}

func (a *AuthServer) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// Counts says how often /authorize was visited and tokens refreshed.
func (a *AuthServer) Counts() (authorized, refreshed int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.authorized, a.refreshed
}

// RefreshGrants says how many refresh grants the token endpoint was asked
// for, the refused ones too.
func (a *AuthServer) RefreshGrants() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.grants
}

// ForgetAccessTokens forgets the access tokens given so far, as a server
// that restarted (or revoked them) does; its refresh tokens stay good.
func (a *AuthServer) ForgetAccessTokens() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.tokens)
}

// RevokeRefreshTokens makes the refresh tokens given so far refused
// (invalid_grant).
func (a *AuthServer) RevokeRefreshTokens() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.refreshes)
}

// RefuseTokens makes /mcp refuse (401) every access token, even one just
// given, while on is true.
func (a *AuthServer) RefuseTokens(on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refuse = on
}
