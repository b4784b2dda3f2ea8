// Command rawclient is the floor bench/run measures a one-shot `mcpctl
// call` against: the least a client can do to call one tool of a stdio
// server. It spawns the server in its own process group, writes initialize,
// notifications/initialized and one tools/call as JSON lines, reads the
// answers, prints the call's result, then closes stdin, kills the process
// group at once and reaps the server. No validation, no tools/list, no
// waiting for the server to exit by itself.
//
//	rawclient -tool echo -args '{"message":"hi"}' -- node server.js
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	tool := flag.String("tool", "echo", "the tool to call")
	args := flag.String("args", "{}", "its arguments, a JSON object")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: rawclient [-tool T] [-args JSON] -- COMMAND [ARG]...")
		os.Exit(2)
	}
	if err := run(flag.Args(), *tool, json.RawMessage(*args)); err != nil {
		fmt.Fprintln(os.Stderr, "rawclient:", err)
		os.Exit(1)
	}
}

func run(argv []string, tool string, args json.RawMessage) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		stdin.Close()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}()
	enc := json.NewEncoder(stdin)
	rd := bufio.NewReaderSize(stdout, 64*1024)
	// await reads lines until the response with id.
	await := func(id int) (json.RawMessage, error) {
		for {
			line, err := rd.ReadBytes('\n')
			if err != nil {
				return nil, fmt.Errorf("reading the answer to request %d: %w", id, err)
			}
			var msg struct {
				ID     *int            `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(line, &msg) != nil || msg.ID == nil || *msg.ID != id {
				continue
			}
			if msg.Error != nil {
				return nil, fmt.Errorf("request %d: %s", id, msg.Error)
			}
			return msg.Result, nil
		}
	}
	if err := enc.Encode(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]string{"name": "rawclient", "version": "0"},
	}}); err != nil {
		return err
	}
	if _, err := await(1); err != nil {
		return err
	}
	if err := enc.Encode(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
		return err
	}
	if err := enc.Encode(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{
		"name": tool, "arguments": args,
	}}); err != nil {
		return err
	}
	res, err := await(2)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(append(res, '\n'))
	return err
}
