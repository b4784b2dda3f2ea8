// Command cliprof runs one mcpctl command many times in one process and
// writes a CPU and a heap profile of it: where a command spends its time
// once the process has started.
//
//	cliprof -n 500 -cpu cpu.out -- -c mcp.json call everything.echo message=hi
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/mcpctl/mcpctl/commands"
)

func main() {
	n := flag.Int("n", 500, "runs")
	cpu := flag.String("cpu", "", "write a CPU profile here")
	mem := flag.String("mem", "", "write a heap (allocations) profile here")
	flag.Parse()
	args := append([]string{"mcpctl"}, flag.Args()...)
	if *cpu != "" {
		f, err := os.Create(*cpu)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(f)
	}
	if *mem != "" {
		runtime.MemProfileRate = 4096
	}
	t0 := time.Now()
	for range *n {
		if code := commands.Main(context.Background(), args, os.Stdin, io.Discard, os.Stderr); code != 0 {
			fmt.Fprintln(os.Stderr, "cliprof: exit code", code)
			os.Exit(1)
		}
	}
	d := time.Since(t0)
	pprof.StopCPUProfile()
	if *mem != "" {
		f, err := os.Create(*mem)
		if err == nil {
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
	fmt.Printf("%d runs, %.3f ms each\n", *n, float64(d.Microseconds())/1000/float64(*n))
}
