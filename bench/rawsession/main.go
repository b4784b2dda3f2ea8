// Command rawsession is the floor bench/run measures a warm `mcpctl call`
// against: the least a Go program can do to make one call through a running
// session. It dials the session's socket, posts one tools/call to the
// session's HTTP API, reads the answer and prints the tool's result. No
// command line to speak of, no config, no session lookup, no jq, no engine:
// only what every process that talks to the session pays (the Go runtime's
// start, net/http, encoding/json, one connection).
//
//	rawsession -socket /run/user/1000/mcpctl/NAME.sock -tool s0.echo -args '{"message":"hi"}'
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
)

func main() {
	socket := flag.String("socket", "", "the session's socket (mcpctl status -r --jq .session.socket)")
	tool := flag.String("tool", "", "the tool to call, as server.tool")
	args := flag.String("args", "{}", "its arguments, a JSON object")
	flag.Parse()
	if *socket == "" || *tool == "" {
		fmt.Fprintln(os.Stderr, "usage: rawsession -socket PATH -tool SERVER.TOOL [-args JSON]")
		os.Exit(2)
	}
	if err := run(*socket, *tool, json.RawMessage(*args)); err != nil {
		fmt.Fprintln(os.Stderr, "rawsession:", err)
		os.Exit(1)
	}
}

func run(socket, tool string, args json.RawMessage) error {
	conn, err := net.Dial("unix", socket)
	if err != nil {
		return err
	}
	defer conn.Close()
	body, err := json.Marshal(map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return err
	}
	// The path and body are the session's API (engine.APIVersion,
	// engine.CallRequest), spelt out so as not to link the engine.
	req, err := http.NewRequest(http.MethodPost, "http://mcpctl/v1/tools/call", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if err := req.Write(conn); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var answer struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return fmt.Errorf("%s: %v", resp.Status, err)
	}
	if resp.StatusCode != http.StatusOK || answer.Result == nil {
		return fmt.Errorf("the session answered %s", resp.Status)
	}
	_, err = fmt.Printf("%s\n", answer.Result)
	return err
}
