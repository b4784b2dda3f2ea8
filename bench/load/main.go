// Command load drives a running session: it makes N tool calls at once,
// spread round robin over the servers named, each with its own message,
// and checks that every answer is its own call's (the fake server's echo
// answers with its arguments). It prints one line: calls, errors,
// mismatches, the wall time and the calls per second; it exits 1 when a
// call failed or was answered with another call's result.
//
//	load -socket /run/user/1000/mcpctl/x.sock -n 1000 -servers s0,s1 -tool echo
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpctl/mcpctl/engine"
)

func main() {
	socket := flag.String("socket", "", "the session's socket")
	n := flag.Int("n", 1000, "calls, all made at once")
	servers := flag.String("servers", "", "comma-separated servers to spread the calls over")
	tool := flag.String("tool", "echo", "the tool each server is called with")
	rounds := flag.Int("rounds", 1, "times to make the N calls (the best round is printed)")
	label := flag.String("label", "throughput", "name printed before the figures")
	target := flag.String("target", "", "the target, printed after the figures")
	conns := flag.Int("conns", 0, "the client's MaxConns: connections to the session at once (0: its default)")
	flag.Parse()
	if *socket == "" || *servers == "" {
		fmt.Fprintln(os.Stderr, "usage: load -socket PATH -servers A,B [-n N] [-tool T]")
		os.Exit(2)
	}
	names := strings.Split(*servers, ",")
	c := &engine.Client{Socket: *socket, MaxConns: *conns}
	ctx := context.Background()
	var best time.Duration
	var failed, mismatched atomic.Int64
	for range *rounds {
		var wg sync.WaitGroup
		t0 := time.Now()
		for i := range *n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				msg := fmt.Sprintf("call-%d-%d", i, time.Now().UnixNano())
				res, err := c.CallTool(ctx, &engine.CallRequest{
					Name:  names[i%len(names)] + "." + *tool,
					Pairs: []string{"message=" + msg},
				})
				if err != nil {
					if failed.Add(1) == 1 {
						fmt.Fprintln(os.Stderr, "load:", err)
					}
					return
				}
				if echoed(res.Result) != msg {
					if mismatched.Add(1) == 1 {
						fmt.Fprintf(os.Stderr, "load: call with %q answered %s\n", msg, res.Result)
					}
				}
			}()
		}
		wg.Wait()
		if d := time.Since(t0); best == 0 || d < best {
			best = d
		}
	}
	rate := float64(*n) / best.Seconds()
	fmt.Printf("%-44s %9.0f calls/s   (%d calls at once over %d servers in %.0f ms; %d failed, %d mismatched)",
		*label, rate, *n, len(names), float64(best.Microseconds())/1000, failed.Load(), mismatched.Load())
	if *target != "" {
		fmt.Printf("   target %s", *target)
	}
	fmt.Println()
	if failed.Load() > 0 || mismatched.Load() > 0 {
		os.Exit(1)
	}
}

// echoed returns the message the fake server's echo answered with: its
// first content block is the call's arguments as JSON text.
func echoed(raw json.RawMessage) string {
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(raw, &r) != nil || len(r.Content) == 0 {
		return ""
	}
	var args struct {
		Message string `json:"message"`
	}
	json.Unmarshal([]byte(r.Content[0].Text), &args)
	return args.Message
}
