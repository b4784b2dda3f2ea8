package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/engine"
	"github.com/mcpctl/mcpctl/output"
	"github.com/urfave/cli/v3"
)

func newAuthCmd(env *Env) *cli.Command {
	var noBrowser bool
	return &cli.Command{
		Name:  "auth",
		Usage: "Authorize with remote servers that ask for OAuth",
		Description: `Remote servers (type http) that answer 401 with OAuth metadata need a token.
"mcpctl auth login SERVER" gets one: the authorization code flow with PKCE
and dynamic client registration, in a browser (or at a URL printed with
--no-browser), redirected to a loopback port of mcpctl. Tokens are kept per
server in $XDG_CONFIG_HOME/mcpctl/tokens (mode 0600; $MCPCTL_TOKEN_DIR
overrides) and refreshed when they expire, safely when two mcpctl refresh at
once. Every other command, and the session, only uses saved tokens: without
a valid one it fails at once with exit 7 and the login command to run.

  mcpctl auth login github
  mcpctl auth status
  mcpctl auth logout github`,
		Action: needsSubcommand,
		Commands: []*cli.Command{
			{
				Name: "login", Usage: "Authorize with a server and save its token", ArgsUsage: "SERVER",
				Description: "Runs the authorization in a browser (or at a URL printed with --no-browser)\nand saves the token; see mcpctl auth --help.\n\n  mcpctl auth login github\n  mcpctl auth login github --no-browser",
				Flags:       []cli.Flag{&cli.BoolFlag{Name: "no-browser", Usage: "print the URL to open instead of opening a browser", Destination: &noBrowser}},
				Action: func(ctx context.Context, cmd *cli.Command) error {
					if cmd.Args().Len() != 1 {
						return usagef("auth login needs one server name", "e.g. mcpctl auth login github")
					}
					return runAuthLogin(ctx, env, cmd.Args().First(), noBrowser)
				},
			},
			{
				Name: "status", Usage: "Show which remote servers have a saved token",
				Description: "Lists the remote servers of the config with their token: saved or not,\nwhen it expires, whether it can be refreshed. A server is authorized when\nits token has not expired or can be refreshed; one that is not needs\nmcpctl auth login. A server the config sends its own Authorization header\n(headers) shows header: true and counts as authorized: only the server\ncan judge that token.\n\n  mcpctl auth status\n  mcpctl auth status --jq '.[] | select(.authorized | not) | .server'",
				Action: func(ctx context.Context, cmd *cli.Command) error {
					if err := noArgs(cmd); err != nil {
						return err
					}
					return runAuthStatus(env)
				},
			},
			{
				Name: "logout", Usage: "Forget a server's saved token", ArgsUsage: "SERVER",
				Description: "Deletes the saved token of the server; the next command that needs it\nfails with exit 7 until mcpctl auth login.\n\n  mcpctl auth logout github",
				Action: func(ctx context.Context, cmd *cli.Command) error {
					if cmd.Args().Len() != 1 {
						return usagef("auth logout needs one server name", "e.g. mcpctl auth logout github")
					}
					return runAuthLogout(env, cmd.Args().First())
				},
			},
			newHelpCmd(),
		},
	}
}

// remoteServer finds a server that can be authorized.
func remoteServer(cfg *config.Config, name string) (*config.Server, error) {
	s := cfg.Server(name)
	if s == nil {
		return nil, engine.UnknownServer(name, cfg.Names())
	}
	if s.Type != "http" {
		return nil, &engine.Error{Kind: engine.KindUsage, Server: name, Message: fmt.Sprintf("server %s is of type %s: OAuth is for streamable HTTP servers (type http)", name, s.Type)}
	}
	return s, nil
}

func runAuthLogin(ctx context.Context, env *Env, name string, noBrowser bool) error {
	cfg, err := env.loadConfig()
	if err != nil {
		return err
	}
	s, err := remoteServer(cfg, name)
	if err != nil {
		return err
	}
	if from, ok := s.SendsAuthorization(); ok {
		return &engine.Error{Kind: engine.KindUsage, Server: name, Message: fmt.Sprintf("server %s is sent an Authorization header (%s): it takes that token, not an OAuth login", name, from),
			Hint: []string{"to log in with OAuth instead, take Authorization out of its headers"}}
	}
	dir := engine.TokenDir(env.getenv)
	warnTokenDir(env, dir)
	// A login always asks anew; the old token stays until the new one
	// replaces it.
	before, _ := engine.LoadToken(dir, s.URL)
	// The user needs time in the browser; the steps before it (the
	// server's 401, its metadata, the registration) get the server's own
	// startupTimeout, so that one that does not answer is said at once.
	before2browser := s.StartupTimeout
	s.StartupTimeout = max(s.StartupTimeout, 5*time.Minute)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	noURL := fmt.Errorf("server %s neither finished starting nor gave an authorization URL within %s (its startupTimeout): it, its authorization metadata or its registration did not answer", name, before2browser)
	stall := time.AfterFunc(before2browser, func() { cancel(noURL) })
	defer stall.Stop()
	// The login needs that server alone: not its dependencies, which a
	// config of one server would call unknown.
	alone := *s
	alone.DependsOn = nil
	one := &config.Config{File: cfg.File, Paths: cfg.Paths, Dir: cfg.Dir, Servers: []*config.Server{&alone}}
	e := engine.New(one, &engine.Options{Auth: &engine.AuthOptions{Dir: dir, Fresh: true, Browse: func(ctx context.Context, server, url string) error {
		stall.Stop() // the browser's turn: the 5 minutes hold
		fmt.Fprintf(env.ErrOut, "Open this URL to authorize mcpctl with server %s:\n\n  %s\n\n", server, url)
		if !noBrowser {
			openBrowser(url)
		}
		fmt.Fprintln(env.ErrOut, "Waiting for the authorization (Ctrl-C to give up)...")
		return nil
	}}})
	defer e.Close()
	if err := e.Start(ctx, name); err != nil {
		if errors.Is(context.Cause(ctx), noURL) {
			return &engine.Error{Kind: engine.KindUnavailable, Server: name, Message: noURL.Error(),
				Hint: []string{fmt.Sprintf("check that the server and its authorization server answer, or raise startupTimeout of server %s (%s)", name, s.Source)}}
		}
		return err
	}
	path := engine.TokenPath(dir, s.URL)
	if after, _ := engine.LoadToken(dir, s.URL); after == nil || (before != nil && after.Saved.Equal(before.Saved)) {
		env.note("server %s did not ask for authorization: it needs no login, and no token was saved", name)
		return nil
	}
	env.note("server %s authorized; token saved in %s", name, path)
	return nil
}

// openBrowser tries the platform's opener; the printed URL is the fallback.
func openBrowser(url string) {
	opener := "xdg-open"
	if runtime.GOOS == "darwin" {
		opener = "open"
	}
	if path, err := exec.LookPath(opener); err == nil {
		cmd := exec.Command(path, url)
		if cmd.Start() == nil {
			go cmd.Wait()
		}
	}
}

// An authStatus is one remote server's token, as auth status shows it.
// Authorized says a command can use it: it has not expired, or it can be
// refreshed.
type authStatus struct {
	Server      string     `json:"server"`
	URL         string     `json:"url"`
	Authorized  bool       `json:"authorized"`
	Expires     *time.Time `json:"expires,omitempty"`
	Expired     bool       `json:"expired,omitempty"`
	Refreshable bool       `json:"refreshable,omitempty"`
	TokenFile   string     `json:"tokenFile,omitempty"`
	// TokenError: the token file is there but cannot be read or used.
	TokenError string `json:"tokenError,omitempty"`
	// Header: the config sends its own Authorization header, a token
	// that only the server can judge.
	Header bool `json:"header,omitempty"`
}

func runAuthStatus(env *Env) error {
	p, err := env.Printer()
	if err != nil {
		return err
	}
	cfg, err := env.loadConfig()
	if err != nil {
		return err
	}
	dir := engine.TokenDir(env.getenv)
	warnTokenDir(env, dir)
	out := []authStatus{}
	for _, s := range cfg.Servers {
		if s.Type != "http" {
			continue
		}
		st := authStatus{Server: s.Name, URL: s.Redact(s.URL)}
		if _, ok := s.SendsAuthorization(); ok {
			st.Header, st.Authorized = true, true
			out = append(out, st)
			continue
		}
		saved, err := engine.LoadToken(dir, s.URL)
		if err != nil {
			st.TokenFile, st.TokenError = engine.TokenPath(dir, s.URL), err.Error()
		} else if saved != nil {
			st.TokenFile = engine.TokenPath(dir, s.URL)
			st.Refreshable = saved.Token.RefreshToken != ""
			if !saved.Token.Expiry.IsZero() {
				t := saved.Token.Expiry
				st.Expires, st.Expired = &t, t.Before(time.Now())
			}
			st.Authorized = !st.Expired || st.Refreshable
		}
		out = append(out, st)
	}
	return p.Print(out, func(w io.Writer) error {
		rows := make([][]string, len(out))
		for i, st := range out {
			state, exp := "no token", "-"
			switch {
			case st.Header:
				state = "Authorization header of the config"
			case st.TokenFile == "":
			case st.TokenError != "":
				state = "damaged: log in again"
			case st.Expired && !st.Refreshable:
				state = "expired: log in again"
			case st.Expired:
				state = "expired (refreshable)"
			case st.Refreshable:
				state = "authorized (refreshable)"
			default:
				state = "authorized"
			}
			if st.Expires != nil {
				exp = st.Expires.Local().Format(time.DateTime)
			}
			rows[i] = []string{st.Server, st.URL, state, exp}
		}
		return output.Table(w, []string{"server", "url", "token", "expires"}, rows)
	})
}

func runAuthLogout(env *Env, name string) error {
	cfg, err := env.loadConfig()
	if err != nil {
		return err
	}
	s, err := remoteServer(cfg, name)
	if err != nil {
		return err
	}
	had, err := engine.ForgetToken(engine.TokenDir(env.getenv), s.URL)
	if err != nil {
		return err
	}
	if !had {
		env.note("server %s had no saved token", name)
		return nil
	}
	env.note("forgot the token of server %s", name)
	return nil
}

// warnTokenDir warns of a token directory other users may write to
// (MCPCTL_TOKEN_DIR pointing at a shared one): the token files are 0600,
// but another user could replace one with a token of their own.
func warnTokenDir(env *Env, dir string) {
	if st, err := os.Stat(dir); err == nil && st.Mode().Perm()&0o022 != 0 {
		env.note("warning: the token directory %s may be written to by other users (mode %04o); chmod 700 it", dir, st.Mode().Perm())
	}
}
