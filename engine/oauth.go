package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/sys/unix"
)

// AuthOptions let an engine authorize with remote servers that ask for
// OAuth 2.1 (they answer 401 with protected resource metadata).
type AuthOptions struct {
	// Dir holds the tokens: one file per server URL, mode 0600, in a
	// directory of mode 0700.
	Dir string
	// Browse, when set, shows the user where to authorize (opens a browser,
	// or prints the URL) and the engine waits for the redirect on a
	// loopback port. Without it a server that needs authorization fails at
	// once with a [KindAuth] error: nothing ever waits for a browser.
	Browse func(ctx context.Context, server, url string) error
	// Fetch, for programs that play the browser themselves (tests, the
	// conformance client), replaces Browse and the loopback listener: it
	// gets the authorization URL and returns the code from the redirect to
	// RedirectURL.
	Fetch       auth.AuthorizationCodeFetcher
	RedirectURL string
	// ClientIDMetadataURL is a client ID metadata document to register
	// with, before dynamic registration; Client is a client registered
	// beforehand.
	ClientIDMetadataURL string
	Client              *oauthex.ClientCredentials
	// Fresh asks anew (a login): a saved token is not used, and is
	// replaced only once a new one is saved.
	Fresh bool
}

// A SavedToken is what a token file holds: the token and what refreshing
// it needs ([LoadToken] reads it). ClientSecret and Token are secrets.
type SavedToken struct {
	URL          string        `json:"url"`
	ClientID     string        `json:"clientId"`
	ClientSecret string        `json:"clientSecret,omitempty"`
	AuthURL      string        `json:"authUrl"`
	TokenURL     string        `json:"tokenUrl"`
	AuthStyle    int           `json:"authStyle,omitempty"`
	Scopes       []string      `json:"scopes,omitempty"`
	Token        *oauth2.Token `json:"token"`
	Saved        time.Time     `json:"saved"`
}

func (t *SavedToken) config() *oauth2.Config {
	return &oauth2.Config{
		ClientID: t.ClientID, ClientSecret: t.ClientSecret, Scopes: t.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: t.AuthURL, TokenURL: t.TokenURL, AuthStyle: oauth2.AuthStyle(t.AuthStyle)},
	}
}

// A tokenStore is the token file of one server URL. Reads, refreshes and
// writes happen under an exclusive lock on the file, so two mcpctl
// processes never refresh the same token at once (a refresh token may be
// good for one use only).
type tokenStore struct {
	dir, path, url string
	client         *http.Client
}

func newTokenStore(dir, url string, client *http.Client) *tokenStore {
	sum := sha256.Sum256([]byte(url))
	return &tokenStore{dir: dir, path: filepath.Join(dir, hex.EncodeToString(sum[:8])+".json"), url: url, client: client}
}

// TokenPath is the file that holds the token of a server URL.
func TokenPath(dir, url string) string { return newTokenStore(dir, url, nil).path }

// locked runs fn with the store's lock held.
func (s *tokenStore) locked(fn func() error) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(s.path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return fn()
}

// LoadToken reads the token saved for a server URL; nil when there is none.
func LoadToken(dir, url string) (*SavedToken, error) { return newTokenStore(dir, url, nil).load() }

// ForgetToken removes the token saved for url, if any (it reports whether
// there was one). It holds the store's lock, so a refresh under way in
// another process cannot save the token back after it; the lock file stays,
// for a lock file made anew while another process holds the old one would
// let two processes refresh at once.
func ForgetToken(dir, url string) (bool, error) {
	s := newTokenStore(dir, url, nil)
	had := false
	err := s.locked(func() error {
		err := os.Remove(s.path)
		if os.IsNotExist(err) {
			return nil
		}
		had = err == nil
		return err
	})
	return had, err
}

func (s *tokenStore) load() (*SavedToken, error) {
	data, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var t SavedToken
	if err := json.Unmarshal(data, &t); err != nil || t.Token == nil {
		return nil, fmt.Errorf("token file %s is damaged", s.path)
	}
	return &t, nil
}

func (s *tokenStore) save(t *SavedToken) error {
	t.URL, t.Saved = s.url, time.Now()
	data, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	// Synced before the rename, and the directory after it: a refresh
	// token is often good once, so a crash must leave the old file or the
	// whole new one, never an empty one.
	tmp := s.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return err
	}
	if d, err := os.Open(s.dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// refreshTimeout bounds one token refresh. (A variable for tests.)
var refreshTimeout = 30 * time.Second

// A storedSource hands out the saved token, refreshing it (and saving the
// new one) when it has expired, or when the server refused it before its
// expiry ([storedSource.refreshRefused]).
type storedSource struct {
	store  *tokenStore
	server string
	mu     sync.Mutex
	last   *oauth2.Token
	// refused is why the refresh token was dropped, told again to those
	// who ask after (the SDK asks again on its way out).
	refused error
	// renewed is the access token got after the server refused one (by
	// a refresh, or from the file another process saved), until the
	// server takes it ([storedSource.accepted]): the server refusing it
	// before that is not refreshed again. So a server that refuses every
	// token gets one refresh grant, and one that refuses the token later
	// (hours after, say, a restart) gets another.
	renewed atomic.Pointer[string]
}

func (ss *storedSource) Token() (*oauth2.Token, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.last.Valid() {
		return ss.last, nil
	}
	if ss.refused != nil {
		return nil, ss.refused
	}
	tok, err := ss.update("")
	if err != nil {
		e := authNeeded(ss.server, err.Error())
		if err == errRefused {
			ss.refused = e
		}
		return nil, e
	}
	return tok, nil
}

// refreshRefused gets a new token after the server refused access token
// refused (its 401) before its expiry: it restarted and forgot the tokens
// it gave, or revoked it. The refresh grant is tried once, as an expired
// token's is, and the new token saved; then the request goes again with
// it. A token got that way and refused too, before the server took it, is
// not refreshed again: a valid token saved in the file since (a login in
// another terminal) is sent instead, if there is one, else the error.
func (ss *storedSource) refreshRefused(refused string) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	const why = "it refused the saved token"
	switch {
	case ss.refused != nil:
		return ss.refused
	case refused == "":
		return authNeeded(ss.server, why) // sent without one
	case ss.last != nil && ss.last.AccessToken != refused && ss.last.Valid():
		return nil // already replaced (another request's 401): the retry sends the new one
	case ss.isRenewed(refused):
		if ss.savedInstead(refused) {
			return nil // a login in another terminal: the retry sends its token
		}
		return ss.refusedAgain()
	}
	tok, err := ss.update(refused)
	if err != nil {
		e := authNeeded(ss.server, why+", and "+err.Error())
		if err == errRefused {
			ss.refused = e
		}
		return e
	}
	ss.renewed.Store(&tok.AccessToken)
	return nil
}

// isRenewed reports whether access is the token got after the server
// refused the saved one.
func (ss *storedSource) isRenewed(access string) bool {
	r := ss.renewed.Load()
	return r != nil && access != "" && *r == access
}

// accepted is told that the server answered a request sent with access
// (2xx): if that is the renewed token, it is no longer, and the server
// refusing it later gets it refreshed again.
func (ss *storedSource) accepted(access string) {
	if r := ss.renewed.Load(); r != nil && access != "" && *r == access {
		ss.renewed.CompareAndSwap(r, nil)
	}
}

// savedInstead, with ss.mu held, after the server refused the renewed
// token (refused), reads the token file: when it holds a valid token other
// than refused (saved since by a login in another terminal, or a refresh
// in another process), that is the token to send from now on, renewed in
// its turn (the server refusing it too is not refreshed). No refresh
// grant is asked.
func (ss *storedSource) savedInstead(refused string) bool {
	var tok *oauth2.Token
	ss.store.locked(func() error {
		saved, err := ss.store.load()
		if err == nil && saved != nil && saved.Token.Valid() && saved.Token.AccessToken != refused && !ss.isRenewed(saved.Token.AccessToken) {
			tok = saved.Token
		}
		return nil
	})
	if tok == nil {
		return false
	}
	ss.last = tok
	ss.renewed.Store(&tok.AccessToken)
	return true
}

// refusedAgain is the error of a server that refused the token got after
// it refused the saved one: no more refreshes, a login.
func (ss *storedSource) refusedAgain() *Error {
	return authNeeded(ss.server, "it refused the saved token, and the refreshed one too")
}

// update, with ss.mu held, reads the saved token and, if it expired or is
// the access token the server refused (refused, when not ""), refreshes it
// and saves the new one, all under the store's lock. The token it returns
// is the one to send from now on.
func (ss *storedSource) update(refused string) (*oauth2.Token, error) {
	var tok *oauth2.Token
	err := ss.store.locked(func() error {
		saved, err := ss.store.load()
		if err != nil {
			return err
		}
		if saved == nil {
			return errors.New("no token saved")
		}
		if saved.Token.Valid() && (refused == "" || saved.Token.AccessToken != refused) {
			tok = saved.Token // another process refreshed it
			return nil
		}
		if saved.Token.RefreshToken == "" {
			if refused != "" && saved.Token.Valid() {
				// Refused, and nothing to renew it with: dead, and
				// expired in the file for auth status to say so.
				// Not saved (a full disk, say): said no differently.
				saved.Token.Expiry = time.Now()
				ss.store.save(saved)
				return errors.New("there is no refresh token")
			}
			return errors.New("the token expired and there is no refresh token")
		}
		// Bounded: the SDK asks for the token holding its connection's
		// lock, and this holds the file lock other processes wait on.
		ctx, cancel := context.WithTimeout(context.Background(), refreshTimeout)
		defer cancel()
		ctx = context.WithValue(ctx, oauth2.HTTPClient, ss.store.client)
		old := *saved.Token
		if refused != "" {
			// Refused before its expiry: oauth2 refreshes only a token
			// that expired.
			old.AccessToken, old.Expiry = "", time.Time{}
		}
		fresh, err := saved.config().TokenSource(ctx, &old).Token()
		if refusedGrant(err) {
			// The refresh token is dead (revoked, expired or used up):
			// it is dropped, so that auth status no longer counts the
			// server authorized and no later command tries it again.
			saved.Token.RefreshToken = ""
			if refused != "" {
				// And the access token the server refused is
				// dead too: expired, for auth status to say so.
				saved.Token.Expiry = time.Now()
			}
			if err := ss.store.save(saved); err != nil {
				return err
			}
			return errRefused
		}
		if err != nil {
			return fmt.Errorf("refreshing the token: %w", err)
		}
		saved.Token = fresh
		tok = fresh
		return ss.store.save(saved)
	})
	if err != nil {
		return nil, err
	}
	ss.last = tok
	return tok, nil
}

var errRefused = errors.New("its authorization server refused the saved refresh token (invalid_grant)")

// refusedGrant reports whether a token endpoint answered invalid_grant: the
// grant (a refresh token, say) is revoked, expired or used up. The error
// is read from the body as JSON whatever its content type: RFC 6749 asks
// for application/json, and some servers label it text/plain.
func refusedGrant(err error) bool {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return false
	}
	code := re.ErrorCode
	if code == "" {
		var body struct {
			Error string `json:"error"`
		}
		json.Unmarshal(re.Body, &body)
		code = body.Error
	}
	return code == "invalid_grant"
}

// A gate is the OAuth handler of an engine that cannot ask the user: it
// offers the saved token, and when the server refuses it (or there is
// none), it fails at once, before any discovery or registration. Only a
// 401 to a saved token that has a refresh token gets a new one first
// (once), for the SDK to send the request again with.
type gate struct {
	server string
	source *storedSource // nil: no token saved
	header string        // where the config sets the Authorization header it sends, if it does
	damage error         // why the token file could not be read, if it could not
}

func (g *gate) TokenSource(context.Context) (oauth2.TokenSource, error) {
	if g.source == nil {
		return nil, nil // not a nil *storedSource in an interface
	}
	return g.source, nil
}

// refusedAgain is told of a 401 to req. When req sent the token the gate
// got after the server refused the saved one, and the server has not
// taken it since, the token is not refreshed again: the token file is
// read, and a valid token saved there since (a login in another
// terminal) is returned, to send req again with (once); without one, the
// error. Both are zero for any other token. The SDK sends a request once
// more after Authorize, and tells its second 401 as "Unauthorized" alone
// (and takes the connection for broken): the transport answers that 401
// itself.
func (g *gate) refusedAgain(req *http.Request) (string, *Error) {
	if g == nil || g.source == nil {
		return "", nil
	}
	ss, sent := g.source, bearer(req)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if !ss.isRenewed(sent) {
		return "", nil
	}
	if ss.savedInstead(sent) {
		return ss.last.AccessToken, nil
	}
	return "", ss.refusedAgain()
}

// accepted is told of a 2xx answer to req: the token it sent is taken.
func (g *gate) accepted(req *http.Request) {
	if g != nil && g.source != nil {
		g.source.accepted(bearer(req))
	}
}

// bearer is the access token req sends, if any.
func bearer(req *http.Request) string {
	sent, _ := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	return sent
}

// insufficientScope finds the challenge of RFC 6750 §3.1 that asks for a
// broader token (error="insufficient_scope"), not the words anywhere (an
// error_description that mentions them).
var insufficientScope = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(^|[\s,])error\s*=\s*"?insufficient_scope"?($|[\s,])`)
})

func (g *gate) Authorize(_ context.Context, req *http.Request, resp *http.Response) error {
	if resp != nil && resp.Body != nil {
		// Ours to close (auth.OAuthHandler): drained a little, so that
		// its connection can serve the request sent again.
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
	}
	if resp != nil && resp.StatusCode == http.StatusForbidden && !insufficientScope().MatchString(resp.Header.Get("WWW-Authenticate")) {
		// Not a login to run: the server does not let this client in
		// (the SDK hands a 403 over as it does a 401).
		return errorf(KindUnavailable, g.server, "server %s answered 403 Forbidden: it does not let mcpctl in", g.server).
			hint("check the server's access rules, and the headers mcpctl sends it (mcpctl config show)")
	}
	if g.header != "" {
		return errorf(KindAuth, g.server, "server %s refused the Authorization header it is sent (%s): it answered 401", g.server, g.header).
			hint("check the token in it, and the variable or input it comes from; mcpctl auth login is for servers that use OAuth, not a fixed header")
	}
	if g.damage != nil {
		return authNeeded(g.server, "it answered 401 and the saved token cannot be used: "+g.damage.Error())
	}
	if g.source == nil {
		return authNeeded(g.server, "it answered 401 and no token is saved").
			hint(`or, if it takes a fixed token rather than OAuth, send it: "headers": {"Authorization": "Bearer ${TOKEN}"}`)
	}
	if resp == nil || resp.StatusCode != http.StatusUnauthorized || req == nil {
		return authNeeded(g.server, "it refused the saved token")
	}
	// A 401 to a saved token before its expiry: the server restarted and
	// forgot the tokens it gave, or revoked this one. Its refresh token
	// may still be good.
	return g.source.refreshRefused(bearer(req))
}

// oauthHandler is the SDK's authorization code handler (PKCE, metadata
// discovery, dynamic client registration) with mcpctl's token store and
// its way of reaching the user.
func (s *server) oauthHandler(client *http.Client) (auth.OAuthHandler, func(), error) {
	cfg := s.cfg()
	opts := s.e.opts.Auth
	if from, ok := cfg.SendsAuthorization(); ok {
		// A 401 is about that header: no saved token replaces it.
		return &gate{server: cfg.Name, header: from}, func() {}, nil
	}
	store := newTokenStore(opts.Dir, cfg.URL, client)
	if opts.Browse == nil && opts.Fetch == nil {
		g := &gate{server: cfg.Name}
		if saved, err := store.load(); err != nil {
			g.damage = err
		} else if saved != nil {
			g.source = &storedSource{store: store, server: cfg.Name}
		}
		return g, func() {}, nil
	}
	cleanup := func() {}
	redirect := "http://127.0.0.1/callback"
	var codes chan *auth.AuthorizationResult
	var refusals chan error
	if opts.Fetch != nil {
		redirect = opts.RedirectURL
	} else {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, err
		}
		redirect = fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port)
		codes = make(chan *auth.AuthorizationResult, 1)
		refusals = make(chan error, 1)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			if q.Get("code") == "" {
				why := strings.TrimSpace(q.Get("error") + " " + q.Get("error_description"))
				http.Error(w, "mcpctl: no authorization code in this redirect: "+why, http.StatusBadRequest)
				if q.Get("error") != "" {
					// Refused in the browser: the login ends, saying why.
					select {
					case refusals <- fmt.Errorf("the authorization was refused: %s", why):
					default:
					}
				}
				return
			}
			select {
			case codes <- &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}:
			default:
			}
			fmt.Fprintln(w, "mcpctl: got the authorization; you can close this window, mcpctl says in the terminal whether it worked.")
		}), ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
		cleanup = func() { srv.Close() }
	}
	// refused: the user refused in the browser. A start tried again
	// fails with it at once, not with another URL to open.
	var refusedMu sync.Mutex
	var refused error
	fetch := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		if opts.Fetch != nil {
			return opts.Fetch(ctx, args)
		}
		refusedMu.Lock()
		err := refused
		refusedMu.Unlock()
		if err != nil {
			return nil, err
		}
		if err := opts.Browse(ctx, cfg.Name, args.URL); err != nil {
			return nil, err
		}
		select {
		case res := <-codes:
			return res, nil
		case err := <-refusals:
			refusedMu.Lock()
			refused = err
			refusedMu.Unlock()
			return nil, err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	hc := &auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName: "mcpctl", RedirectURIs: []string{redirect}, TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		}},
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: fetch,
		RequestRefreshToken:      true,
		Client:                   client,
		NewTokenSource: func(ctx context.Context, oc *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			saved := &SavedToken{ClientID: oc.ClientID, ClientSecret: oc.ClientSecret, AuthURL: oc.Endpoint.AuthURL,
				TokenURL: oc.Endpoint.TokenURL, AuthStyle: int(oc.Endpoint.AuthStyle), Scopes: oc.Scopes, Token: tok}
			if err := store.locked(func() error { return store.save(saved) }); err != nil {
				return nil, fmt.Errorf("saving the token: %w", err)
			}
			s.log.Info("authorized", "tokenFile", store.path)
			return &storedSource{store: store, server: cfg.Name, last: tok}, nil
		},
	}
	if opts.ClientIDMetadataURL != "" {
		hc.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: opts.ClientIDMetadataURL}
	}
	hc.PreregisteredClient = opts.Client
	if saved, err := store.load(); err == nil && saved != nil && !opts.Fresh {
		hc.InitialTokenSource = &storedSource{store: store, server: cfg.Name}
	}
	h, err := auth.NewAuthorizationCodeHandler(hc)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return h, cleanup, nil
}

// authNeeded is the error of a server that needs authorization the engine
// cannot get without the user.
func authNeeded(server, why string) *Error {
	msg := fmt.Sprintf("server %s needs authorization", server)
	if why != "" {
		msg += ": " + why
	}
	return errorf(KindAuth, server, "%s", msg).hint("authorize once with: mcpctl auth login %s", server)
}
