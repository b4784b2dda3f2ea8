// Command conformance-client is the client that the official MCP
// conformance runner (@modelcontextprotocol/conformance) drives. It is
// mcpctl's engine, not a client of its own: the server under test is one
// config server named "server" (type http, the URL the runner appends as
// the last argument), started with engine.New and Start, and each scenario
// (MCP_CONFORMANCE_SCENARIO) goes through the engine's own calls: Tools,
// CallTool, Resources, ReadResource, Prompts, GetPrompt, and the
// Elicitation handler of engine.Options.
//
// It mirrors the Go SDK's conformance/everything-client. Auth scenarios go
// through the engine's OAuth (engine.AuthOptions, tokens in a temporary
// directory), with this program playing the browser: it reads the code
// from the authorization server's redirect.
//
//	scripts/conformance        # builds this and runs the runner on it
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	neturl "net/url"
	"os"
	"strings"
	"time"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/engine"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// serverName is the name the server under test has in the config, so its
// tools are server.TOOL.
const serverName = "server"

type scenario func(ctx context.Context, e *engine.Engine, cc map[string]any) error

// scenarios by name; a name not here runs connect: start and list tools.
// Auth scenarios list tools and call test-tool.
var scenarios = map[string]scenario{
	"initialize":                          listTools,
	"tools_call":                          callTools("add_numbers", `{"a":5,"b":3}`),
	"elicitation-sep1034-client-defaults": callTools("test_client_elicitation_defaults", `{}`),
	"sse-retry":                           callTools("test_reconnection", `{}`),
	"request-metadata":                    func(context.Context, *engine.Engine, map[string]any) error { return nil },
	"json-schema-ref-no-deref":            listTools,
	"json-schema-2020-12-preservation":    schemaEcho,
	"sep-2322-client-request-state":       mrtr,
	"http-standard-headers":               standardHeaders,
	"http-custom-headers":                 customHeaders,
	"http-invalid-tool-headers":           invalidToolHeaders,
}

// elicitation answers elicitation/create for the scenarios that ask: accept
// with no content, so the server's defaults apply, or with what
// sep-2322-client-request-state wants confirmed.
func elicitation(name string) engine.RequestHandler {
	content := `{}`
	if name == "sep-2322-client-request-state" {
		content = `{"confirmed":true}`
	}
	return func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"action":"accept","content":` + content + `}`), nil
	}
}

func main() {
	run()
	os.Exit(exit)
}

func run() {
	log.SetFlags(0)
	log.SetPrefix("conformance-client: ")
	if len(os.Args) < 2 {
		log.Fatal("usage: conformance-client [ARGS...] SERVER-URL (with MCP_CONFORMANCE_SCENARIO set)")
	}
	url := os.Args[len(os.Args)-1]
	name := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	if name == "" {
		log.Fatal("MCP_CONFORMANCE_SCENARIO is not set")
	}
	var cc map[string]any
	if s := os.Getenv("MCP_CONFORMANCE_CONTEXT"); s != "" {
		if err := json.Unmarshal([]byte(s), &cc); err != nil {
			log.Fatalf("MCP_CONFORMANCE_CONTEXT: %v", err)
		}
	}
	do, ok := scenarios[name]
	isAuth := strings.HasPrefix(name, "auth/")
	switch {
	case isAuth:
		do = callTools("test-tool", `{}`)
	case !ok:
		log.Printf("scenario %s is not known here; connecting and listing tools", name)
		do = listTools
	}

	cfg, err := serverConfig(url, cc)
	if err != nil {
		log.Fatal(err)
	}
	opts := &engine.Options{RequestTimeout: 20 * time.Second, ShutdownTimeout: time.Second}
	if name == "elicitation-sep1034-client-defaults" || name == "sep-2322-client-request-state" {
		opts.Elicitation = elicitation(name)
	}
	if isAuth {
		dir, err := os.MkdirTemp("", "conformance-tokens")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(dir)
		opts.Auth = &engine.AuthOptions{
			Dir: dir, Fetch: fetchCode, RedirectURL: "http://localhost:3000/callback",
			ClientIDMetadataURL: "https://conformance-test.local/client-metadata.json",
		}
		id, _ := cc["client_id"].(string)
		secret, _ := cc["client_secret"].(string)
		if id != "" && secret != "" {
			opts.Auth.Client = &oauthex.ClientCredentials{ClientID: id, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: secret}}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second) // the runner's limit is 30s
	defer cancel()
	e := engine.New(cfg, opts)
	err = e.Start(ctx)
	if err == nil {
		err = do(ctx, e, cc)
	}
	e.Close()
	if err != nil {
		log.Printf("scenario %s: %v", name, err)
		exit = 1
	}
}

// exit is main's exit code, set where deferred clean-ups must still run.
var exit int

// fetchCode plays the browser: the conformance authorization server
// redirects at once to the redirect URL with the code, which is read from
// the Location header instead of followed.
func fetchCode(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	loc, err := neturl.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode/100 != 3 {
		return nil, fmt.Errorf("the authorization endpoint answered %s, not a redirect", resp.Status)
	}
	q := loc.Query()
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

// serverConfig is the config of one remote server at url, through
// config.Parse so that it gets every default a config file gets.
// Headers, when the context carries them ({"headers": {NAME: VALUE}}),
// go with every request.
func serverConfig(url string, cc map[string]any) (*config.Config, error) {
	srv := map[string]any{"type": "http", "url": escape(url)}
	if h, ok := cc["headers"].(map[string]any); ok {
		headers := map[string]string{}
		for k, v := range h {
			if s, ok := v.(string); ok {
				headers[k] = escape(s)
			}
		}
		srv["headers"] = headers
	}
	data, err := json.Marshal(map[string]any{"servers": map[string]any{serverName: srv}})
	if err != nil {
		return nil, err
	}
	return config.Parse("conformance.json", data, os.TempDir(), func(string) (string, bool) { return "", false })
}

// escape keeps a value literal through the config's ${...} expansion.
func escape(s string) string { return strings.ReplaceAll(s, "$", "$$") }

func tools(e *engine.Engine) ([]*engine.Tool, error) {
	return e.Tools(serverName)
}

func listTools(_ context.Context, e *engine.Engine, _ map[string]any) error {
	_, err := tools(e)
	return err
}

func call(ctx context.Context, e *engine.Engine, tool string, args json.RawMessage) error {
	res, err := e.CallTool(ctx, &engine.CallRequest{Name: serverName + "." + tool, Arguments: args})
	if err != nil {
		return fmt.Errorf("call %s: %w", tool, err)
	}
	if res.IsError {
		log.Printf("call %s: the tool answered with an error: %s", tool, res.Result)
	}
	return nil
}

// callTools checks that the tool is listed, then calls it with args.
func callTools(tool, args string) scenario {
	return func(ctx context.Context, e *engine.Engine, _ map[string]any) error {
		ts, err := tools(e)
		if err != nil {
			return err
		}
		if find(ts, tool) == nil {
			return fmt.Errorf("tool %s is not listed", tool)
		}
		return call(ctx, e, tool, json.RawMessage(args))
	}
}

func find(ts []*engine.Tool, name string) *engine.Tool {
	for _, t := range ts {
		if t.Tool == name {
			return t
		}
	}
	return nil
}

// schemaEcho sends the focal tool's inputSchema, as the engine keeps it,
// back through json_schema_echo, so the referee sees what survived.
func schemaEcho(ctx context.Context, e *engine.Engine, _ map[string]any) error {
	ts, err := tools(e)
	if err != nil {
		return err
	}
	const focal = "json_schema_2020_12_tool"
	t := find(ts, focal)
	if t == nil {
		return fmt.Errorf("tool %s is not listed", focal)
	}
	schema := t.Field("inputSchema")
	if schema == nil {
		return fmt.Errorf("tool %s has no inputSchema", focal)
	}
	args, _ := json.Marshal(map[string]json.RawMessage{"schema": schema})
	return call(ctx, e, "json_schema_echo", args)
}

// mrtr calls the SEP-2322 tools; some are meant to be refused.
func mrtr(ctx context.Context, e *engine.Engine, _ map[string]any) error {
	for _, name := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"} {
		if err := call(ctx, e, name, json.RawMessage(`{}`)); err != nil {
			log.Printf("%v (expected for some)", err)
		}
	}
	return nil
}

// standardHeaders uses one tool, one resource and one prompt, so the
// referee sees the standard headers on each kind of request.
func standardHeaders(ctx context.Context, e *engine.Engine, _ map[string]any) error {
	if ts, err := tools(e); err == nil && len(ts) > 0 {
		if err := call(ctx, e, ts[0].Tool, json.RawMessage(`{}`)); err != nil {
			log.Print(err)
		}
	}
	if rs, err := e.Resources(serverName); err == nil && len(rs.Resources) > 0 {
		if _, err := e.ReadResource(ctx, &engine.ResourceRequest{URI: rs.Resources[0].URI, Server: serverName}); err != nil {
			log.Printf("read %s: %v", rs.Resources[0].URI, err)
		}
	}
	if ps, err := e.Prompts(serverName); err == nil && len(ps) > 0 {
		if _, err := e.GetPrompt(ctx, &engine.PromptRequest{Name: ps[0].Name()}); err != nil {
			log.Printf("prompt %s: %v", ps[0].Name(), err)
		}
	}
	return nil
}

// customHeaders makes the tool calls the context lists
// ({"toolCalls": [{"name", "arguments"}]}).
func customHeaders(ctx context.Context, e *engine.Engine, cc map[string]any) error {
	if _, err := tools(e); err != nil {
		return err
	}
	calls, _ := cc["toolCalls"].([]any)
	for _, c := range calls {
		m, _ := c.(map[string]any)
		name, _ := m["name"].(string)
		args, _ := json.Marshal(m["arguments"])
		if string(args) == "null" {
			args = []byte(`{}`)
		}
		if err := call(ctx, e, name, args); err != nil {
			log.Print(err)
		}
	}
	return nil
}

// invalidToolHeaders calls every tool listed: the ones with invalid header
// annotations must not be.
func invalidToolHeaders(ctx context.Context, e *engine.Engine, _ map[string]any) error {
	ts, err := tools(e)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if err := call(ctx, e, t.Tool, json.RawMessage(`{"region":"us-west1"}`)); err != nil {
			log.Print(err)
		}
	}
	return nil
}
