// Command echoserver is the least an MCP server can be over stdio, for
// bench/run's throughput figures: the server side's floor, as
// bench/rawclient is the client side's. It answers initialize, ping,
// tools/list (one tool, echo) and tools/call of echo, whose text is its
// arguments as JSON; other requests get "method not found" (so a client's
// server/discover probe falls back to initialize), notifications nothing.
// One JSON-RPC message per line each way, each request answered on its own
// goroutine, as SDK servers do.
//
// The go-sdk server behind internal/fakemcp costs about 330 µs of CPU per
// call under load, more than the session that routes the call: against it,
// bench/run measures the server as much as mcpctl.
package main

import (
	"bufio"
	"encoding/json"
	"os"
	"sync"
)

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

const echoTool = `{"name":"echo","description":"Answers with its arguments","inputSchema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}}`

func main() {
	in := bufio.NewReaderSize(os.Stdin, 64*1024)
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	reply := func(id json.RawMessage, result any, errCode int, errMsg string) {
		msg := map[string]any{"jsonrpc": "2.0", "id": id}
		if errCode != 0 {
			msg["error"] = map[string]any{"code": errCode, "message": errMsg}
		} else {
			msg["result"] = result
		}
		data, _ := json.Marshal(msg)
		mu.Lock()
		out.Write(append(data, '\n'))
		out.Flush()
		mu.Unlock()
	}
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			var req request
			if json.Unmarshal(line, &req) == nil && len(req.ID) > 0 && string(req.ID) != "null" {
				go handle(req, reply)
			}
		}
		if err != nil {
			return
		}
	}
}

func handle(req request, reply func(json.RawMessage, any, int, string)) {
	switch req.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		json.Unmarshal(req.Params, &p)
		version := "2025-11-25"
		if p.ProtocolVersion < version {
			version = p.ProtocolVersion
		}
		reply(req.ID, map[string]any{
			"protocolVersion": version,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "echoserver", "version": "1"},
		}, 0, "")
	case "ping":
		reply(req.ID, map[string]any{}, 0, "")
	case "tools/list":
		reply(req.ID, map[string]any{"tools": []json.RawMessage{json.RawMessage(echoTool)}}, 0, "")
	case "tools/call":
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal(req.Params, &p) != nil || p.Name != "echo" {
			reply(req.ID, nil, -32602, "unknown tool")
			return
		}
		if len(p.Arguments) == 0 {
			p.Arguments = json.RawMessage("{}")
		}
		reply(req.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": string(p.Arguments)}}}, 0, "")
	default:
		reply(req.ID, nil, -32601, "method not found: "+req.Method)
	}
}
