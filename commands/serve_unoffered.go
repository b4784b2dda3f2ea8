package commands

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/mcpctl/mcpctl/engine"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What serve does not offer, and how a client that names it anyway is
// answered: a name whose server is down now is handed to the host, which
// says why; what serve hides (itself, "mcpctl" under --manage, items the
// SDK refused) stays unknown.

// reachedKey marks a request's context so that askHostUnoffered can tell
// whether one of serve's handlers got it.
type reachedKey struct{}

func markReached(ctx context.Context) {
	if r, ok := ctx.Value(reachedKey{}).(*atomic.Bool); ok {
		r.Store(true)
	}
}

// askHostUnoffered hands the host a call, prompt get or read of a name that
// serve does not offer, which the SDK would refuse as unknown: serve offers
// only what runs, and a client that kept an older list (or never reads
// one) is told why the name's server cannot answer (it crashed, failed to
// start, was stopped), or what it may have meant, instead of "unknown tool".
func (hb *hub) askHostUnoffered(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call", "prompts/get", "resources/read":
		default:
			return next(ctx, method, req)
		}
		reached := new(atomic.Bool)
		res, err := next(context.WithValue(ctx, reachedKey{}, reached), method, req)
		if err == nil || reached.Load() || ctx.Err() != nil {
			return res, err
		}
		switch r := req.(type) {
		case *mcp.CallToolRequest:
			if hb.offersNot("tool", r.Params.Name) {
				return res, err
			}
			return hb.callTool(r.Params.Name)(ctx, r)
		case *mcp.GetPromptRequest:
			if hb.offersNot("prompt", r.Params.Name) {
				return res, err
			}
			return hb.getPrompt(r.Params.Name)(ctx, r)
		case *mcp.ReadResourceRequest:
			// A server stopped by hand lists nothing, so serve offers
			// none of its resources: the host, routing by URI, says why
			// it cannot answer. One it routes nowhere stays not found,
			// as the SDK says, unless the request named no URI at all,
			// or a server that could not start may have it (the host
			// says so). Routing may start a server that starts on use,
			// as a read through the CLI would.
			uri := r.Params.URI
			server, hidden := hb.subscribeServer(uri)
			if hidden {
				return res, err
			}
			hres, herr := hb.readResource(server)(ctx, r)
			var je *jsonrpc.Error
			if server == "" && uri != "" && errors.As(herr, &je) && je.Code == jsonrpc.CodeInvalidParams {
				return res, err
			}
			return hres, herr
		}
		return res, err
	}
}

// subscribeServer is the server a subscription to uri goes to: the one
// serve reads it from (listed, or matched by a template it offers), or
// that listed it before it went down; "" leaves it to the host's routing.
// hidden says uri is of a server serve hides: no subscription is made.
func (hb *hub) subscribeServer(uri string) (server string, hidden bool) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if s, ok := hb.resServer[uri]; ok {
		return s, false
	}
	for _, t := range hb.offeredTmpls {
		if t.Match(uri) {
			return t.Server, false
		}
	}
	if s, ok := hb.downURIs[uri]; ok {
		return s, false
	}
	return "", hb.hiddenURIs[uri] || slices.ContainsFunc(hb.hiddenTmpls, func(t *engine.Template) bool { return t.Match(uri) })
}

// offersNot says whether the tool or prompt called name is one serve
// keeps from its clients: of a server it hides (itself, "mcpctl" under
// --manage, whose mcpctl.* are serve's own), or refused by the SDK.
func (hb *hub) offersNot(kind, name string) bool {
	server, _, _ := strings.Cut(name, ".")
	hb.mu.Lock()
	defer hb.mu.Unlock()
	return hb.hidden[server] || hb.refused[kind+" "+name] || hb.manage != nil && server == manageServer
}
