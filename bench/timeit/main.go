// Command timeit runs a command repeatedly and prints its wall-clock time:
// median, p90, min and max, as one line (or JSON with -json).
//
//	go run ./bench/timeit -n 100 -label "warm call" -- mcpctl call everything.echo message=hi
//
// Given two commands separated by a lone "::", it runs them in turn, A, B,
// A, B, …, so that a machine getting busier or quieter during the runs
// weighs on both alike, and prints the figures of each, the ratio of their
// medians (A / B) and the median of the ratios of each round's pair:
//
//	timeit -n 20 -- mcpctl call everything.echo message=hi :: rawclient -- node server.js
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
	n := flag.Int("n", 50, "runs to time (of each command)")
	warmup := flag.Int("warmup", 3, "untimed runs first (of each command)")
	label := flag.String("label", "", "name printed before the figures")
	target := flag.String("target", "", "the target, printed after the figures")
	asJSON := flag.Bool("json", false, "print JSON")
	flag.Parse()
	var cmds [][]string
	if i := slices.Index(flag.Args(), "::"); i >= 0 {
		cmds = [][]string{flag.Args()[:i], flag.Args()[i+1:]}
	} else {
		cmds = [][]string{flag.Args()}
	}
	for _, c := range cmds {
		if len(c) == 0 {
			fmt.Fprintln(os.Stderr, "usage: timeit [-n N] [-label L] -- COMMAND [ARG]... [:: COMMAND [ARG]...]")
			os.Exit(2)
		}
	}
	for range *warmup {
		for _, c := range cmds {
			run(c)
		}
	}
	ds := make([][]time.Duration, len(cmds))
	for range *n {
		for i, c := range cmds {
			ds[i] = append(ds[i], run(c))
		}
	}
	var pairs []float64 // A / B, round by round
	if len(cmds) == 2 {
		for i := range ds[0] {
			pairs = append(pairs, float64(ds[0][i])/float64(ds[1][i]))
		}
		slices.Sort(pairs)
	}
	figs := make([]map[string]any, len(cmds))
	for i := range ds {
		d := ds[i]
		slices.Sort(d)
		pct := func(p float64) time.Duration { return d[int(p*float64(len(d)-1))] }
		figs[i] = map[string]any{"label": *label, "n": *n, "medianMs": ms(pct(0.5)), "p90Ms": ms(pct(0.9)), "minMs": ms(d[0]), "maxMs": ms(d[len(d)-1])}
		if !*asJSON {
			fmt.Printf("%-44s median %9s   p90 %9s   min %9s   (n=%d)", *label, fmtDur(pct(0.5)), fmtDur(pct(0.9)), fmtDur(d[0]), *n)
			if *target != "" {
				fmt.Printf("   target %s", *target)
			}
			fmt.Println()
		}
	}
	if len(cmds) == 1 {
		if *asJSON {
			json.NewEncoder(os.Stdout).Encode(figs[0])
		}
		return
	}
	ratio := figs[0]["medianMs"].(float64) / figs[1]["medianMs"].(float64)
	pairRatio := pairs[len(pairs)/2]
	if *asJSON {
		json.NewEncoder(os.Stdout).Encode(map[string]any{"a": figs[0], "b": figs[1], "ratio": ratio, "pairRatio": pairRatio})
		return
	}
	fmt.Printf("ratio of the medians: %.3f; median of the rounds' ratios: %.3f\n", ratio, pairRatio)
}

// run runs a command once and returns its wall time; a failure ends timeit.
func run(args []string) time.Duration {
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

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func fmtDur(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return fmt.Sprintf("%.2f ms", ms(d))
}
