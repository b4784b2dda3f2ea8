package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mcpctl/mcpctl/engine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serve --manage offers its client two tools of its own, so that an agent
// can see why a server's tools went away and bring it back, as a person
// would with mcpctl status and mcpctl restart.
const (
	manageServer = "mcpctl" // the tools' server name; a server so named is hidden
	statusTool   = manageServer + ".status"
	restartTool  = manageServer + ".restart"
)

// A manager tells the servers' states and restarts them: the session's, or
// those serve started itself.
type manager interface {
	states(ctx context.Context) ([]engine.ServerStatus, error)
	restart(ctx context.Context, name string) ([]engine.ServerStatus, error)
}

func managerOf(h host) manager {
	switch h := h.(type) {
	case localHost:
		return engineManager{h.Engine}
	case *engine.Client:
		return clientManager{h}
	}
	return nil
}

type engineManager struct{ e *engine.Engine }

func (m engineManager) states(context.Context) ([]engine.ServerStatus, error) {
	return m.e.Status(), nil
}

func (m engineManager) restart(ctx context.Context, name string) ([]engine.ServerStatus, error) {
	if err := m.e.Restart(ctx, name); err != nil {
		return nil, err
	}
	all := m.e.Status()
	return slices.DeleteFunc(all, func(st engine.ServerStatus) bool { return st.Name != name }), nil
}

type clientManager struct{ c *engine.Client }

func (m clientManager) states(ctx context.Context) ([]engine.ServerStatus, error) {
	st, err := m.c.Status(ctx)
	if err != nil {
		return nil, err
	}
	return st.Servers, nil
}

func (m clientManager) restart(ctx context.Context, name string) ([]engine.ServerStatus, error) {
	return m.c.Servers(ctx, "restart", name)
}

// manageTools are the items of serve's own tools, for sync to mirror with
// the servers'.
func (hb *hub) manageTools() []item {
	tools := []*mcp.Tool{
		{
			Name:        statusTool,
			Description: "The MCP servers behind this server: each one's state (ready, degraded, unavailable, stopped...), since when, its last error and how many tools it offers. A server's tools are missing while it is not ready.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		},
		{
			Name:        restartTool,
			Description: "Stop one of the MCP servers behind this server and start it again, e.g. after it became unavailable; answers with its state after the start.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"server":{"type":"string","description":"the server's name, as ` + statusTool + ` lists it"}},"required":["server"],"additionalProperties":false}`),
		},
	}
	handlers := map[string]mcp.ToolHandler{statusTool: hb.statusHandler, restartTool: hb.restartHandler}
	var out []item
	for _, t := range tools {
		raw, _ := json.Marshal(t)
		out = append(out, item{key: t.Name, server: manageServer, raw: raw, add: func() error {
			return safely(func() { hb.srv.AddTool(t, handlers[t.Name]) })
		}})
	}
	return out
}

func (hb *hub) statusHandler(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if _, err := manageArgs(req, statusTool); err != nil {
		return manageResult(ctx, nil, err)
	}
	states, err := hb.manage.states(ctx)
	// What serve hides is not its clients' to see.
	hb.mu.Lock()
	states = slices.DeleteFunc(states, func(st engine.ServerStatus) bool { return hb.hidden[st.Name] })
	hb.mu.Unlock()
	return manageResult(ctx, states, err)
}

// manageArgs reads the arguments of one of serve's own tools, checked as
// its schema says (the SDK does not check them): only the keys named, each
// a string.
func manageArgs(req *mcp.CallToolRequest, tool string, keys ...string) (map[string]string, error) {
	usage := tool + " takes no arguments"
	if len(keys) > 0 {
		usage = fmt.Sprintf(`%s takes {"%s": "NAME"}`, tool, keys[0])
	}
	var raw map[string]json.RawMessage
	if args := req.Params.Arguments; len(args) > 0 && string(args) != "null" {
		if err := json.Unmarshal(args, &raw); err != nil {
			return nil, fmt.Errorf("its arguments are not an object: %s", usage)
		}
	}
	out := map[string]string{}
	for k, v := range raw {
		if !slices.Contains(keys, k) {
			return nil, fmt.Errorf("unknown argument %q: %s", k, usage)
		}
		var str string
		if err := json.Unmarshal(v, &str); err != nil {
			return nil, fmt.Errorf("%s is not a string: %s", k, usage)
		}
		out[k] = str
	}
	return out, nil
}

func (hb *hub) restartHandler(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	got, err := manageArgs(req, restartTool, "server")
	if err != nil {
		return manageResult(ctx, nil, err)
	}
	args := struct{ Server string }{got["server"]}
	if args.Server == "" {
		return manageResult(ctx, nil, fmt.Errorf(`name the server to restart: {"server": "NAME"}`))
	}
	// A stop by hand is how a person takes a server from an agent: the
	// agent does not undo it. Nor does it reach the server serve hides.
	if args.Server == manageServer {
		return manageResult(ctx, nil, fmt.Errorf("server %s is not offered by serve --manage", manageServer))
	}
	states, err := hb.manage.states(ctx)
	if err != nil {
		return manageResult(ctx, nil, err)
	}
	for _, st := range states {
		if st.Name == args.Server && st.StoppedByHand {
			return manageResult(ctx, nil, fmt.Errorf("server %s was stopped by hand (mcpctl stop); only a person starts it again", st.Name))
		}
	}
	states, err = hb.manage.restart(ctx, args.Server)
	return manageResult(ctx, states, err)
}

// manageResult answers with the states as JSON text and structured
// content, or with the error as a result marked isError, which a model
// reads.
func manageResult(ctx context.Context, states []engine.ServerStatus, err error) (*mcp.CallToolResult, error) {
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: describe(err)}}}, nil
	}
	if states == nil {
		states = []engine.ServerStatus{}
	}
	body, _ := json.Marshal(map[string]any{"servers": states})
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(body)}}, StructuredContent: json.RawMessage(body)}, nil
}
