package commands

import (
	"context"
	"errors"
	"log/slog"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/engine"
)

// A host is where tools live: the running session, or an engine started in
// this process for one command.
type host interface {
	Tools(ctx context.Context, filter string) ([]*engine.Tool, error)
	CallTool(ctx context.Context, req *engine.CallRequest) (*engine.CallResult, error)
}

// localHost adapts an in-process engine to host.
type localHost struct{ e *engine.Engine }

func (h localHost) Tools(_ context.Context, filter string) ([]*engine.Tool, error) {
	return h.e.Tools(filter)
}

func (h localHost) CallTool(ctx context.Context, req *engine.CallRequest) (*engine.CallResult, error) {
	return h.e.CallTool(ctx, req)
}

// withHost runs fn against the session when one answers. Otherwise it loads
// the config, starts only the servers that need(cfg) names (all when it
// names none), runs fn against them and stops them before returning.
//
// Falling back is safe: a session that is not there fails at dial time,
// before anything was sent.
func (env *Env) withHost(ctx context.Context, need func(*config.Config) ([]string, error), fn func(host) error) error {
	client, sess, err := env.client()
	if err != nil {
		return err
	}
	err = fn(client)
	if !errors.Is(err, engine.ErrNoSession) {
		return err
	}
	cfg, err := env.loadConfig()
	if err != nil {
		return err
	}
	names, err := need(cfg)
	if err != nil {
		return err
	}
	e := engine.New(cfg, &engine.Options{Logger: slog.New(slog.DiscardHandler), LogDir: sess.ServerLogDir()})
	defer e.Close()
	if err := e.Start(ctx, names...); err != nil {
		return err
	}
	return fn(localHost{e})
}

// serverOf returns a need function for one server.tool or server name.
func serverOf(name string) func(*config.Config) ([]string, error) {
	return func(cfg *config.Config) ([]string, error) {
		if name == "" {
			return nil, nil
		}
		srv := name
		if s, _, err := engine.SplitName(name); err == nil {
			srv = s
		}
		return []string{srv}, nil
	}
}
