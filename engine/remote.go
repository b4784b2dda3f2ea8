package engine

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	"github.com/mcpctl/mcpctl/config"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK's HTTP transports must not be wrapped: the streamable one keeps
// its session state through a hook only its own connection has. So for
// remote servers mcpctl sees the messages where they cross HTTP instead,
// in a round tripper that does for them what captureConn does on stdio:
// adds what the SDK's types cannot carry, keeps raw results, routes
// progress, and adds the configured headers.
type captureRoundTripper struct {
	base    http.RoundTripper
	conn    *captureConn
	headers map[string]string
	// refused is the status of the last answer in the 4xx range: a server
	// that refuses streamable HTTP may speak the older SSE transport.
	refused atomic.Int32
}

func (t *captureRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	if req.Method == http.MethodPost && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		if msg, err := jsonrpc.DecodeMessage(body); err == nil {
			// Encoded again only when outgoing added to it (a task, a log level).
			if out := t.conn.outgoing(req.Context(), msg); out != msg {
				if data, err := jsonrpc.EncodeMessage(out); err == nil {
					body = data
				}
			}
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if resp.StatusCode/100 == 4 {
		t.refused.Store(int32(resp.StatusCode))
	}
	if resp.StatusCode == http.StatusNotFound && req.Header.Get("Mcp-Session-Id") != "" {
		if cp, ok := req.Context().Value(captureKey{}).(*capture); ok {
			cp.mu.Lock()
			cp.sessionMissing = true
			cp.mu.Unlock()
		}
	}
	if resp.StatusCode/100 != 2 {
		return resp, nil
	}
	switch ct := resp.Header.Get("Content-Type"); {
	case strings.HasPrefix(ct, "text/event-stream"):
		resp.Body = &sseTee{ReadCloser: resp.Body, onData: t.received}
	case strings.HasPrefix(ct, "application/json"):
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxMessage+1))
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		t.received(body)
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	return resp, nil
}

// received notes one message (or a batch) that arrived over HTTP.
func (t *captureRoundTripper) received(data []byte) {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		return // batches are the SDK's to refuse
	}
	if msg, err := jsonrpc.DecodeMessage(data); err == nil {
		t.conn.incoming(msg)
	}
}

// An sseTee passes a server-sent event stream through as it is read, and
// hands the data of each event to onData once the event is complete.
type sseTee struct {
	io.ReadCloser
	onData  func([]byte)
	partial []byte // an unfinished line
	data    []byte // the data lines of the event so far
	// long: the line, or the event, under way is over maxMessage and is
	// dropped whole (the SDK refuses such an event too).
	longLine, longEvent bool
}

func (s *sseTee) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	s.feed(p[:n])
	if err != nil && (len(s.partial) > 0 || s.longLine) {
		s.feed([]byte{'\n'}) // a last line with no newline ends at EOF
	}
	if err != nil && len(s.data) > 0 && !s.longEvent {
		s.onData(s.data)
	}
	if err != nil {
		s.data, s.longEvent = nil, false
	}
	return n, err
}

func (s *sseTee) feed(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if s.longLine || len(s.partial)+len(b) > maxMessage {
				s.longLine, s.partial = true, nil
			} else {
				s.partial = append(s.partial, b...)
			}
			return
		}
		line := append(s.partial, b[:i]...)
		long := s.longLine || len(line) > maxMessage
		s.partial, s.longLine = nil, false
		b = b[i+1:]
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case len(line) == 0 && !long:
			if len(s.data) > 0 && !s.longEvent {
				s.onData(s.data)
			}
			s.data, s.longEvent = nil, false
		case long || bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))
			if long || len(s.data)+len(v) > maxMessage {
				s.longEvent, s.data = true, nil
				continue
			}
			if len(s.data) > 0 {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, v...)
		}
	}
}

// remoteTransport is the SDK transport for a server reached over HTTP:
// streamable HTTP for type http, the legacy HTTP+SSE transport for type
// sse.
func remoteTransport(typ, url string, client *http.Client) (mcp.Transport, error) {
	switch typ {
	case "http":
		return &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: client, MaxEventSize: maxMessage}, nil
	case "sse":
		return &mcp.SSEClientTransport{Endpoint: url, HTTPClient: client, MaxEventSize: maxMessage}, nil
	}
	return nil, fmt.Errorf("type %s is not supported yet", typ)
}

// connectRemote connects to a server over HTTP. ctx must live as long as
// the connection: the SSE transport ties its event stream to it. A server
// whose type was implied by its url and that refuses streamable HTTP with a
// 4xx is tried with the legacy SSE transport, as the MCP spec's backwards
// compatibility section says.
func (s *server) connectRemote(ctx context.Context, client *mcp.Client, conn *captureConn, opts *mcp.ClientSessionOptions) (*mcp.ClientSession, error) {
	cfg := s.cfg()
	base, err := httpTransport(cfg)
	if err != nil {
		return nil, err
	}
	rt := &captureRoundTripper{base: base, conn: conn, headers: cfg.Headers}
	hc := &http.Client{Transport: rt}
	t, err := remoteTransport(cfg.Type, cfg.URL, hc)
	if err != nil {
		return nil, err
	}
	if st, ok := t.(*mcp.StreamableClientTransport); ok && s.e.opts.Auth != nil && s.e.opts.Auth.Dir != "" {
		h, cleanup, err := s.oauthHandler(&http.Client{Transport: base})
		if err != nil {
			return nil, err
		}
		// The loopback redirect listener lives as long as the connection.
		context.AfterFunc(ctx, cleanup)
		st.OAuthHandler = h
	}
	cs, err := client.Connect(ctx, t, opts)
	var ae *Error
	if errors.As(err, &ae) && ae.Kind == KindAuth {
		return nil, ae // a 401 is about a token, not about the transport
	}
	if err != nil && cfg.TypeImplied && rt.refused.Load() != 0 && ctx.Err() == nil {
		s.log.Info("the server refused streamable HTTP; trying the SSE transport", "status", rt.refused.Load())
		t, _ = remoteTransport("sse", cfg.URL, hc)
		cs, err = client.Connect(ctx, t, opts)
	}
	if err != nil {
		return nil, err
	}
	return cs, nil
}

// remoteFailure explains a failed connection to a remote server.
func remoteFailure(cfg *config.Server, err error) *Error {
	url := cfg.Redact(cfg.URL)
	e := errorf(KindUnavailable, cfg.Name, "server %s (%s): cannot connect: %s", cfg.Name, url, cfg.Redact(err.Error()))
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		e.hint("raise startupTimeout of server %s (%s) if it is just slow", cfg.Name, cfg.Source)
	default:
		e.hint("check that the server runs at %s (%s)", url, cfg.Source)
	}
	// Not wrapped: the cause's text holds the url as it is, secrets and all.
	return e
}

func httpHeader(m map[string]string) http.Header {
	h := http.Header{}
	for k, v := range m {
		h.Set(k, v)
	}
	return h
}

// httpTransport is how mcpctl reaches a remote server: Go's default
// transport (proxies from the environment, the system's roots) with the
// server's own TLS settings.
func httpTransport(cfg *config.Server) (*http.Transport, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.CAFile == "" && cfg.ClientCert == "" {
		return t, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		roots, err := x509.SystemCertPool()
		if err != nil {
			roots = x509.NewCertPool()
		}
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, errorf(KindUsage, cfg.Name, "server %s: cannot read caFile: %v", cfg.Name, err).hint("fix caFile (%s)", cfg.Where("caFile"))
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, errorf(KindUsage, cfg.Name, "server %s: caFile %s holds no PEM certificate", cfg.Name, cfg.CAFile).hint("fix caFile (%s)", cfg.Where("caFile"))
		}
		tc.RootCAs = roots
	}
	if cfg.ClientCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.ClientCert, cfg.ClientKey)
		if err != nil {
			return nil, errorf(KindUsage, cfg.Name, "server %s: cannot load the client certificate: %v", cfg.Name, err).hint("fix clientCert and clientKey (%s)", cfg.Where("clientCert"))
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	t.TLSClientConfig = tc
	return t, nil
}
