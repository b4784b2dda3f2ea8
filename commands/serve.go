package commands

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/engine"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v3"
)

type serveOptions struct {
	http      string // --http ADDR; empty: stdio
	tokenFile string
	noAuth    bool
	manage    bool // offer mcpctl.status and mcpctl.restart
}

// serveTokenEnv holds the bearer token of mcpctl serve --http.
const serveTokenEnv = config.ServeTokenEnv

// serveSelfEnv names, in the environment of the servers serve starts, the
// session serve offers.
const serveSelfEnv = config.ServeSessionEnv

func newServeCmd(env *Env) *cli.Command {
	var opts serveOptions
	return &cli.Command{
		Name:  "serve",
		Usage: "Serve the servers' tools, prompts and resources as one MCP server",
		Description: `Serves every server of the config as one MCP server, over stdio (the
default) or, with --http ADDR, over streamable HTTP at http://ADDR/mcp. Its
tools, prompts and resource templates are named as mcpctl names them
(server.tool), with includeTools and excludeTools applied; resources keep
their URIs. When a server's lists change, or it stops or comes back, the
client is sent list_changed. Progress and cancellation go both ways; a
server's sampling and elicitation requests during a call go to the client,
when it declared it can answer them; its log messages are sent as
notifications/message with the server's name as logger. A client's resource
subscriptions are made on the server that has the resource, once however
many clients follow it, and its updates go to those clients; the server is
unsubscribed when the last of them unsubscribes or goes away (one speaking
MCP 2026-07-28 when its connection ends).

It uses the running session when there is one (started with "mcpctl up"),
and ends with it (exit 3: the client sees the server go away, and starts it
again), else starts the servers itself and stops them when it ends; a
server that cannot start is left out with a warning, and the others are
served (a config error, such as a command not found, or every server
failing, ends serve with its error). Over stdio, stdout carries only MCP
messages and serve ends when stdin closes (at once, even while the servers
start, when the client sent nothing: a pipe, a socket it shut, /dev/null),
or when its client closes stdout; it also ends on Ctrl-C or SIGTERM. A
request under way when serve ends is answered with a JSON-RPC error that
says so (within 1s: what a client that stopped reading stdout never takes
is given up on, and serve says how much). A line that is not JSON-RPC 2.0
is answered with its JSON-RPC error and serve goes on.

A tool that cannot run (its server is unavailable, the call timed out, the
arguments break the tool's schema) answers with a result marked isError
that says why, also one of a dead server, whose tools are taken out of the
list until it is back; an unknown name, bad prompt arguments or a server's
own protocol error answer with a JSON-RPC error. Hints that advise a command
line are left out.

Over HTTP a bearer token is required: $MCPCTL_SERVE_TOKEN, or the first line
of --token-file, of 16 characters or more off loopback. Only on a loopback
address (127.0.0.1, ::1, localhost) may --no-auth serve without one. The
address is printed on stderr. A client's
MCP session ends with its DELETE (its calls in flight are cancelled). A
call whose HTTP request drops is cancelled at once: its answer could not
be sent, as serve keeps no stream to resume. A client whose connections
dropped and did not come back within 30s, or that sent nothing for an
hour with no stream open, has its session closed, and gets 404 if it
comes back. Ctrl-C or SIGTERM ends
serve over HTTP at once, its clients' streams and calls with it.

With --manage, serve also offers two tools of its own: mcpctl.status (each
server's state, since when, its last error and tool count) and
mcpctl.restart {"server": NAME}, so that an agent can see why a server's
tools went away and bring it back. Every client may then restart servers,
but not one stopped with "mcpctl stop". A server named mcpctl is then not
offered.

serve speaks MCP up to 2025-11-25 to its client. Give it a config that does
not list mcpctl serve itself: a serve started by its own config refuses to
run (it would start itself again and again), and one a session runs is not
offered again. In Claude Desktop or Cursor (mcpServers), or VS Code
(servers), the server is:

  "mcpctl": {"command": "mcpctl", "args": ["serve", "-c", "/path/to/mcp.json"]}

Examples:

  mcpctl serve
  mcpctl -c examples/mcp.json serve
  MCPCTL_SERVE_TOKEN=$(cat token) mcpctl serve --http 127.0.0.1:8808
  mcpctl serve --http 127.0.0.1:0 --no-auth`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "http", Usage: "serve streamable HTTP on `ADDR` (host:port; port 0 picks a free one) instead of stdio", Destination: &opts.http},
			&cli.StringFlag{Name: "token-file", Usage: "with --http, require the bearer token in `FILE` (default: $MCPCTL_SERVE_TOKEN)", Destination: &opts.tokenFile},
			&cli.BoolFlag{Name: "no-auth", Usage: "with --http on a loopback address, serve without a token", Destination: &opts.noAuth},
			&cli.BoolFlag{Name: "manage", Usage: "also offer the tools mcpctl.status and mcpctl.restart, to see the servers' states and restart one", Destination: &opts.manage},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := noArgs(cmd); err != nil {
				return err
			}
			return runServe(ctx, env, opts)
		},
	}
}

func runServe(ctx context.Context, env *Env, opts serveOptions) error {
	var ln net.Listener
	var token string
	if opts.http == "" {
		if opts.tokenFile != "" || opts.noAuth {
			return usagef("--token-file and --no-auth are for serving over HTTP", "add --http ADDR, e.g. --http 127.0.0.1:8808")
		}
		if env.configFromStdin() {
			return usagef("serve over stdio reads its client's messages on stdin, which holds the config (-c /dev/stdin)", "give the config as a file, or serve over HTTP: --http ADDR")
		}
	} else {
		var err error
		if token, err = serveToken(env, opts); err != nil {
			return err
		}
		if ln, err = net.Listen("tcp", opts.http); err != nil {
			hint := "choose another port, or port 0 for a free one"
			var dnsErr *net.DNSError
			if errors.Is(err, syscall.EADDRNOTAVAIL) || errors.As(err, &dnsErr) {
				hint = "give an address of this machine (127.0.0.1 for this machine alone, 0.0.0.0 for every network)"
			}
			return usagef(fmt.Sprintf("cannot listen on %s: %v", opts.http, unwrapNetError(err)), hint)
		}
		defer ln.Close()
	}
	sess, err := env.session()
	if err != nil {
		return err
	}
	// A config that runs mcpctl serve on itself as one of its servers
	// would, without a session, start serve in serve in serve...: the
	// servers serve starts know which session they serve.
	if env.getenv(serveSelfEnv) == sess.Name {
		return usagef(fmt.Sprintf("mcpctl serve is one of the servers of its own config (%s): it would start itself again and again", env.configShown()),
			"take it out of the config, or run serve on a config without it: mcpctl serve -c FILE")
	}
	os.Setenv(serveSelfEnv, sess.Name)
	started := func() {}
	// The servers' start ends with startCtx: a signal, or (over stdio)
	// the client gone while they start.
	startCtx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	if ln == nil {
		// Over stdio a client that closed its end of stdout is gone, even
		// if it sends nothing more: serve ends then, not at its next answer.
		var stop func()
		ctx, stop = untilOutputClosed(ctx, env.Out)
		defer stop()
		started = inputGoneWhileStarting(env, giveUp)
		defer started()
	}
	all := func(*config.Config) ([]string, error) { return nil, nil }
	err = env.withHostOpts(ctx, all, hostOptions{guard: true, partial: true, serving: true, startCtx: startCtx}, func(h host) error {
		hb := newHub(env, h, sess.Name)
		if opts.manage {
			hb.manage = managerOf(h)
		}
		if err := hb.start(ctx); err != nil {
			return err // no session: called again once the servers started
		}
		started()
		defer hb.stop()
		if lh, ok := h.(localHost); ok {
			env.followConfig(hb.ctx, lh.Engine)
		}
		var err error
		if ln != nil {
			err = hb.serveHTTP(ln, token)
		} else {
			err = hb.serveStdio()
		}
		if lost := hb.lost(); lost != nil {
			return lost
		}
		if ctx.Err() != nil {
			return nil // Ctrl-C or SIGTERM is how serve ends
		}
		return err
	})
	if err != nil && startCtx.Err() != nil && errorInfo(err).ExitCode != exitUsage {
		// Ended so while its servers started: as it ends later. A config
		// or usage error is said still, as without a signal.
		return nil
	}
	return err
}

// inputGoneWhileStarting calls giveUp once the client closed stdin,
// having sent nothing, while the servers start: serve reads stdin
// only once they have, and a client gone would otherwise wait for them, up
// to each one's startupTimeout. A client that sent its requests before it
// closed stdin (a shell pipe) is answered, however long the start takes.
// started ends the watching: from then on serve reads stdin, and its end.
func inputGoneWhileStarting(env *Env, giveUp func()) (started func()) {
	f, ok := env.In.(*os.File)
	if !ok {
		return func() {}
	}
	const note = "the client closed stdin before the servers started, having sent nothing: nothing to serve"
	if isDevNull(f) {
		env.note(note)
		giveUp()
		return func() {}
	}
	hung, stopWatching := hangup(f, pollReadHangup)
	if hung == nil {
		return func() {}
	}
	done := make(chan struct{})
	// The look at what waits unread, and started, one at a time: once
	// serve reads stdin, it has nothing unread, sent or not.
	var mu sync.Mutex
	serving := false
	go func() {
		select {
		case <-hung:
		case <-done:
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if serving || unread(f) > 0 {
			return // requests to answer once the servers are up
		}
		env.note(note)
		giveUp()
	}()
	return sync.OnceFunc(func() {
		mu.Lock()
		serving = true
		mu.Unlock()
		stopWatching()
		close(done)
	})
}

// serveToken checks the HTTP flags and returns the bearer token to require
// ("" with --no-auth). The token never appears in a message.
func serveToken(env *Env, opts serveOptions) (string, error) {
	host, _, err := net.SplitHostPort(opts.http)
	if err != nil {
		return "", usagef(fmt.Sprintf("--http %q is not HOST:PORT", opts.http), "e.g. --http 127.0.0.1:8808, or 127.0.0.1:0 for a free port")
	}
	loopback := host == "localhost"
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		loopback = true
	}
	if opts.noAuth {
		if opts.tokenFile != "" {
			return "", usagef("--no-auth and --token-file contradict each other", "leave one out")
		}
		if !loopback {
			return "", usagef(fmt.Sprintf("--no-auth is allowed only on a loopback address (127.0.0.1, ::1, localhost), not on %s", opts.http),
				fmt.Sprintf("require a token: set $%s or pass --token-file FILE", serveTokenEnv),
				"or listen on loopback only: --http 127.0.0.1:PORT")
		}
		if env.getenv(serveTokenEnv) != "" {
			env.note("warning: --no-auth: $%s is set but not required", serveTokenEnv)
		}
		return "", nil
	}
	var token string
	if opts.tokenFile != "" {
		path := env.abs(opts.tokenFile)
		data, err := os.ReadFile(path)
		if err != nil {
			return "", usagef(fmt.Sprintf("--token-file: %v", unwrapPathError(err)))
		}
		if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
			env.note("warning: the token file %s may be read by other users (mode %04o); chmod 600 it", opts.tokenFile, st.Mode().Perm())
		}
		token, _, _ = strings.Cut(string(data), "\n")
		token = strings.TrimSpace(token)
		if token == "" {
			return "", usagef(fmt.Sprintf("--token-file %s holds no token", opts.tokenFile), "write one, e.g.: openssl rand -hex 32 > "+opts.tokenFile)
		}
		return token, shortToken(env, token, "the token in "+opts.tokenFile, opts.http, loopback)
	}
	if token = strings.TrimSpace(env.getenv(serveTokenEnv)); token != "" {
		return token, shortToken(env, token, "$"+serveTokenEnv, opts.http, loopback)
	}
	hints := []string{
		fmt.Sprintf("set one with $%s or --token-file FILE (e.g. openssl rand -hex 32 > token); clients send it as Authorization: Bearer TOKEN", serveTokenEnv),
	}
	if loopback {
		hints = append(hints, "or, on this loopback address, serve without one: --no-auth")
	}
	return "", usagef(fmt.Sprintf("serving MCP over HTTP on %s needs a bearer token", opts.http), hints...)
}

// minTokenLen is the shortest bearer token serve takes on an address
// other machines reach: a short one is guessed.
const minTokenLen = 16

// shortToken refuses a token shorter than minTokenLen on an address other
// machines reach, and warns of one on loopback.
func shortToken(env *Env, token, what, addr string, loopback bool) error {
	n := utf8.RuneCountInString(token) // characters, as said; é is two bytes
	if n >= minTokenLen {
		return nil
	}
	if !loopback {
		return usagef(fmt.Sprintf("%s is %d %s: serving on %s needs a token of at least %d, which cannot be guessed", what, n, plural(n, "character", "characters"), addr, minTokenLen),
			"make one with: openssl rand -hex 32")
	}
	env.note("warning: %s is %d %s, which can be guessed; make one with: openssl rand -hex 32", what, n, plural(n, "character", "characters"))
	return nil
}

func unwrapNetError(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

// followConfig makes an engine serve started for itself reload its config
// when a config file changes, as a session does.
func (env *Env) followConfig(ctx context.Context, e *engine.Engine) {
	cfg := e.Config()
	err := config.Watch(ctx, func() []string { return e.Config().WatchFiles() }, reloadDebounce, func() {
		next, err := config.LoadFiles(cfg.Paths, config.Options{LookupEnv: env.LookupEnv, WorkDir: env.WorkDir})
		if err != nil {
			env.note("warning: the config did not reload, the servers keep running as they were: %v", err)
			return
		}
		if _, err := e.Reload(ctx, next); err != nil && ctx.Err() == nil {
			env.note("warning: reloading the config: %v", err)
		}
	})
	if err != nil {
		env.note("warning: cannot watch the config files for changes: %v", err)
	}
}

// serveStdio serves one client on stdin and stdout until stdin closes, an
// answer finds stdout closed, or serve is stopped.
func (hb *hub) serveStdio() error {
	out := newLockedWriter(hb.env.Out)
	in := filterLines(newClosableReader(hb.env.In), out)
	// The filter bounds a message; the SDK's own bound (16 MiB) would end
	// the connection over one longer.
	t := &drainingTransport{inner: &mcp.IOTransport{Reader: in, Writer: out, MaxLineLength: -1}, grace: stdinGrace,
		// The requests still under way when stdin's grace is over are
		// cancelled, and answered that serve is ending, as on a signal.
		givenUp: func() { hb.cancel(errInputClosed) }}
	// The SDK closes the connection as soon as Run's context ends, and
	// writes no answer after that: the requests serve's end cancelled
	// (endWithServe) would never hear why. Run ends once they are answered.
	runCtx, endRun := context.WithCancel(context.WithoutCancel(hb.ctx))
	defer endRun()
	// An answer a client that stopped reading stdout never takes would
	// keep the SDK's Close waiting for its handler: serve would not end.
	defer context.AfterFunc(hb.ctx, func() {
		t.settle(endingGrace)
		out.abandon()
		endRun()
	})()
	err := hb.srv.Run(runCtx, t)
	if n := out.dropped.Load(); n > 0 {
		hb.env.note("%d %s not written: the client had stopped reading serve's output", n, plural(int(n), "message was", "messages were"))
	}
	if errors.Is(err, errOutputAbandoned) {
		return nil
	}
	if errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) || outputClosed(err) || context.Cause(hb.ctx) == errInputClosed {
		return nil // the client went away: closed stdin, or stdout
	}
	return err
}

// serveHTTP serves streamable HTTP at /mcp on ln until serve is stopped.
func (hb *hub) serveHTTP(ln net.Listener, token string) error {
	clients := newPresence(clientGoneGrace, clientIdle, func(client, why string) {
		hb.env.note("closed the MCP session of %s: %s", client, why)
	})
	refused := newRefusals(hb.env.note)
	defer refused.flush()
	srv := &http.Server{
		Handler:           streamsEndWith(hb.ctx, hb.httpHandler(token, clients, refused)),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	auth := "a bearer token required"
	if token == "" {
		auth = "no authentication: --no-auth"
	}
	hb.env.note("serving MCP on http://%s/mcp (%s)", ln.Addr(), auth)
	select {
	case err := <-served:
		return err
	case <-hb.ctx.Done():
	}
	// What is left after the requests' contexts ended (a handler that
	// does not heed its context) gets a moment, then is cut.
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if srv.Shutdown(sctx) != nil {
		srv.Close()
	}
	<-served
	return nil
}

// httpHandler is serve's HTTP side: /mcp, behind the bearer token (if
// any; refused hears of the requests without it) and the browsers'
// cross-origin protection, with its clients followed.
func (hb *hub) httpHandler(token string, clients *presence, refused *refusals) http.Handler {
	hb.srv.AddReceivingMiddleware(clients.track)
	// A request as big as one serve reads over stdio (the SDK's default
	// is 4 MiB); only a client with the token gets this far.
	opts := &mcp.StreamableHTTPOptions{MaxRequestBodyBytes: int64(maxServeLine)}
	var h http.Handler = clients.handler(checkedBodies(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return hb.srv }, opts)))
	// Browsers' cross-origin requests are refused (the SDK already refuses
	// a foreign Host on loopback: DNS rebinding).
	h = http.NewCrossOriginProtection().Handler(h)
	if token != "" {
		h = requireBearer(token, h, refused.add)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Host names are not case-sensitive: the SDK's check against DNS
		// rebinding refused LOCALHOST.
		r.Host = strings.ToLower(r.Host)
		mux.ServeHTTP(w, r)
	})
}

// streamsEndWith ends the event streams (GET) h serves when ctx ends: they
// are ended, not held until Shutdown's grace runs out. A POST keeps its
// own context: the calls it carries end with serve (endWithServe), and
// their answers (that serve is ending) are written before it returns; the
// SDK writes none to a request whose context ended.
func streamsEndWith(ctx context.Context, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		rctx, cancel := context.WithCancelCause(r.Context())
		defer cancel(nil)
		defer context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })()
		h.ServeHTTP(w, r.WithContext(rctx))
	})
}

// requireBearer lets through only requests that carry token as
// "Authorization: Bearer TOKEN"; it compares in constant time. refused
// hears of the others.
func requireBearer(token string, next http.Handler, refused func(*http.Request)) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		scheme, got, _ := strings.Cut(auth, " ")
		sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			refused(r)
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcpctl"`)
			http.Error(w, "unauthorized: send the token mcpctl serve was given as Authorization: Bearer TOKEN", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// A closableReader reads r through a pipe, so that Close ends a Read that
// waits: closing os.Stdin does not interrupt a read of it.
type closableReader struct {
	pr   *io.PipeReader
	once sync.Once
}

func newClosableReader(r io.Reader) *closableReader {
	if r == nil {
		r = strings.NewReader("")
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(pw, r)
		pw.CloseWithError(err) // nil: EOF
	}()
	return &closableReader{pr: pr}
}

func (c *closableReader) Read(p []byte) (int, error) { return c.pr.Read(p) }

func (c *closableReader) Close() error {
	c.once.Do(func() { c.pr.Close() })
	return nil
}

// stdinGrace is how long requests read before stdin closed may take to be
// answered before serve ends anyway.
const stdinGrace = 5 * time.Second

// endingGrace is how long the requests serve's end cancelled may take to
// be answered (that serve is ending) before the connection is closed.
const endingGrace = time.Second

// A drainingTransport is a stdio transport on which the end of input waits
// until the requests read before it are answered (for at most grace): a
// client that writes its requests and closes stdin, as a shell pipe does,
// gets its answers. A request the client cancelled gets no answer, as MCP
// asks (the SDK would answer it with the cancellation as an error).
type drainingTransport struct {
	inner   mcp.Transport
	grace   time.Duration
	givenUp func() // ends the requests still under way when grace is over

	mu   sync.Mutex
	conn *drainingConn
}

func (t *drainingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	dc := &drainingConn{Connection: c, grace: t.grace, givenUp: t.givenUp, pending: map[jsonrpc.ID]bool{}, cancelled: map[jsonrpc.ID]bool{}, changed: make(chan struct{}, 1), closing: make(chan struct{})}
	t.mu.Lock()
	t.conn = dc
	t.mu.Unlock()
	return dc, nil
}

// settle waits until every request read has its answer, at most grace.
func (t *drainingTransport) settle(grace time.Duration) {
	t.mu.Lock()
	c := t.conn
	t.mu.Unlock()
	if c != nil {
		c.wait(context.Background(), grace)
	}
}

type drainingConn struct {
	mcp.Connection
	grace     time.Duration
	givenUp   func()
	mu        sync.Mutex
	pending   map[jsonrpc.ID]bool // requests read and not yet answered
	cancelled map[jsonrpc.ID]bool // of those, the ones the client cancelled
	writing   int                 // answers taken off pending, their writes under way
	changed   chan struct{}       // pending shrank
	closing   chan struct{}       // closed by Close: serve is ending
	closeOnce sync.Once
}

func (c *drainingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if dup := c.duplicate(msg); dup != nil {
			// The SDK would drop it in silence, and its client would
			// wait for an answer for good.
			if err := c.Connection.Write(ctx, dup); err != nil {
				return nil, err
			}
			continue
		}
		return c.read(ctx, msg, err)
	}
}

// duplicate is the answer to a request whose id a request under way has
// already, or nil.
func (c *drainingConn) duplicate(msg jsonrpc.Message) *jsonrpc.Response {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.pending[req.ID] {
		return nil
	}
	return &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
		Message: fmt.Sprintf("Invalid Request: the id %v is the id of a request under way; give each request an id of its own", req.ID.Raw())}}
}

func (c *drainingConn) read(ctx context.Context, msg jsonrpc.Message, err error) (jsonrpc.Message, error) {
	if errors.Is(err, io.EOF) {
		if !c.wait(ctx, c.grace) && c.givenUp != nil {
			c.givenUp()
			c.wait(ctx, endingGrace) // for their answers
		}
		return msg, err
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		switch {
		case req.IsCall():
			c.mu.Lock()
			c.pending[req.ID] = true
			delete(c.cancelled, req.ID) // an id used again
			c.mu.Unlock()
		case req.Method == "notifications/cancelled":
			// A cancelled request may never be answered.
			var p struct {
				RequestID any `json:"requestId"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
					c.mu.Lock()
					if c.pending[id] {
						c.cancelled[id] = true
					}
					c.mu.Unlock()
					c.answered(id)
				}
			}
		}
	}
	return msg, err
}

func (c *drainingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, ok := msg.(*jsonrpc.Response)
	if ok {
		// No longer pending from here: a cancellation read while the
		// answer is written is too late to mark it.
		c.mu.Lock()
		dropped := c.cancelled[resp.ID]
		delete(c.cancelled, resp.ID)
		delete(c.pending, resp.ID)
		if !dropped {
			// Waited for until written: one queued behind another's
			// write is not yet out.
			c.writing++
		}
		c.mu.Unlock()
		if dropped {
			return nil
		}
		msg = withErrorCode(resp)
	}
	err := c.Connection.Write(ctx, msg)
	if ok {
		c.mu.Lock()
		c.writing--
		c.mu.Unlock()
		c.answered(resp.ID)
	}
	return err
}

// withErrorCode gives an error answer a JSON-RPC code: the SDK sends an
// error of its own that is not a JSON-RPC one (a duplicate initialize, a
// request before it, a cancelled call) with code 0, which JSON-RPC does not
// define. A request at the wrong moment is -32600, the rest -32603.
func withErrorCode(resp *jsonrpc.Response) *jsonrpc.Response {
	var we *jsonrpc.Error
	if resp.Error == nil || errors.As(resp.Error, &we) {
		return resp
	}
	code := int64(jsonrpc.CodeInternalError)
	if strings.Contains(resp.Error.Error(), "initializ") {
		code = jsonrpc.CodeInvalidRequest
	}
	fixed := *resp
	fixed.Error = &jsonrpc.Error{Code: code, Message: resp.Error.Error()}
	return &fixed
}

func (c *drainingConn) answered(id jsonrpc.ID) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// Close ends a wait under way: the answers it would wait for can no
// longer be written.
func (c *drainingConn) Close() error {
	c.closeOnce.Do(func() { close(c.closing) })
	return c.Connection.Close()
}

// wait waits until every request read has its answer, at most grace, and
// reports whether they all have.
func (c *drainingConn) wait(ctx context.Context, grace time.Duration) bool {
	timer := time.NewTimer(grace)
	defer timer.Stop()
	for {
		c.mu.Lock()
		n := len(c.pending) + c.writing
		c.mu.Unlock()
		if n == 0 {
			return true
		}
		select {
		case <-c.changed:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		case <-c.closing:
			return false
		}
	}
}
