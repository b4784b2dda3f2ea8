package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/mcpctl/mcpctl/config"
	"github.com/mcpctl/mcpctl/engine"
)

// A program hosts the servers of a config: it starts them, uses them, and
// stops them.
func Example() {
	cfg, err := config.Load("mcp.json", config.Options{})
	if err != nil {
		log.Fatal(err) // file:line:column, the field, and a hint
	}
	e := engine.New(cfg, nil)
	defer e.Close()
	ctx := context.Background()
	if err := e.Start(ctx); err != nil {
		log.Fatal(err) // names the server that failed, and why
	}
	res, err := e.CallTool(ctx, &engine.CallRequest{Name: "everything.echo", Pairs: []string{"message=hi"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(res.Result), res.IsError)
}

// Servers may ask the client for an LLM completion (sampling); a handler in
// Options answers, with the request and result as MCP JSON.
func ExampleOptions_sampling() {
	sample := func(ctx context.Context, server string, request json.RawMessage) (json.RawMessage, error) {
		var req struct {
			Messages []struct {
				Content struct{ Text string } `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(request, &req); err != nil {
			return nil, err
		}
		answer := "I cannot help with: " + req.Messages[0].Content.Text // ask your model here
		return json.Marshal(map[string]any{
			"role": "assistant", "model": "my-model",
			"content": map[string]string{"type": "text", "text": answer},
		})
	}
	cfg, _ := config.Load("mcp.json", config.Options{})
	e := engine.New(cfg, &engine.Options{Sampling: sample})
	defer e.Close()
}

// Events tell a program what happens to the servers as it happens.
func ExampleEngine_Events() {
	cfg, _ := config.Load("mcp.json", config.Options{})
	e := engine.New(cfg, nil)
	defer e.Close()
	sub := e.Events(engine.EventFilter{Types: []string{engine.EventState, engine.EventListChanged}})
	defer sub.Close()
	go func() {
		for ev := range sub.C {
			fmt.Println(ev.Server, ev.Type, ev.To, ev.Added, ev.Removed)
		}
	}()
	e.Start(context.Background())
}
