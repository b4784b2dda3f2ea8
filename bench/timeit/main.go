// Command timeit runs a command repeatedly and prints its wall-clock time:
// median, p90, min and max, as one line (or JSON with -json).
//
//	go run ./bench/timeit -n 100 -label "warm call" -- mcpctl call everything.echo message=hi
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"time"
)

func main() {
	n := flag.Int("n", 50, "runs to time")
	warmup := flag.Int("warmup", 3, "untimed runs first")
	label := flag.String("label", "", "name printed before the figures")
	target := flag.String("target", "", "the target, printed after the figures")
	asJSON := flag.Bool("json", false, "print JSON")
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: timeit [-n N] [-label L] -- COMMAND [ARG]...")
		os.Exit(2)
	}
	run := func() time.Duration {
		cmd := exec.Command(args[0], args[1:]...)
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(t0)
		if err != nil {
			fmt.Fprintf(os.Stderr, "timeit: %v: %v\n%s", args, err, out)
			os.Exit(1)
		}
		return d
	}
	for range *warmup {
		run()
	}
	ds := make([]time.Duration, *n)
	for i := range ds {
		ds[i] = run()
	}
	slices.Sort(ds)
	pct := func(p float64) time.Duration { return ds[int(p*float64(len(ds)-1))] }
	if *asJSON {
		json.NewEncoder(os.Stdout).Encode(map[string]any{
			"label": *label, "n": *n, "medianMs": ms(pct(0.5)), "p90Ms": ms(pct(0.9)), "minMs": ms(ds[0]), "maxMs": ms(ds[len(ds)-1]),
		})
		return
	}
	fmt.Printf("%-44s median %9s   p90 %9s   min %9s   (n=%d)", *label, fmtDur(pct(0.5)), fmtDur(pct(0.9)), fmtDur(ds[0]), *n)
	if *target != "" {
		fmt.Printf("   target %s", *target)
	}
	fmt.Println()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func fmtDur(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return fmt.Sprintf("%.2f ms", ms(d))
}
