package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/mcpctl/mcpctl/engine"
	"github.com/mcpctl/mcpctl/output"
	"github.com/urfave/cli/v3"
)

type metricsOptions struct {
	server     string
	prometheus bool
}

func newMetricsCmd(env *Env) *cli.Command {
	var opts metricsOptions
	return &cli.Command{
		Name:      "metrics",
		Usage:     "Show request counts, errors, latency, restarts and uptime per server",
		ArgsUsage: "[SERVER]",
		Description: `Reports, for each server (or SERVER only), whether it is up, its uptime and
restarts, and the requests mcpctl sent to it by method: count, errors,
success rate, average latency and latency percentiles (p50, p95, p99, over
the last 1024 requests of the method). The figures are the session's, since
it started; with no session running every server is listed as down with no
requests.

With --prometheus the same figures are printed in the Prometheus text
exposition format, e.g. for node_exporter's textfile collector.

  mcpctl metrics
  mcpctl metrics github --jq '.[0].methods[] | {method, p95Ms}'
  mcpctl metrics --prometheus > /var/lib/node_exporter/mcpctl.prom`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "prometheus", Usage: "print the Prometheus text exposition format", Destination: &opts.prometheus},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() > 1 {
				return usagef("metrics takes at most one server name", "e.g. mcpctl metrics SERVER")
			}
			opts.server = cmd.Args().First()
			if opts.prometheus && (env.format.JSON || env.format.JQ != "") {
				return usagef("--prometheus prints the Prometheus text format; it cannot be combined with --json or --jq", "leave one of them out")
			}
			return runMetrics(ctx, env, opts)
		},
	}
}

func runMetrics(ctx context.Context, env *Env, opts metricsOptions) error {
	client, sess, err := env.client()
	if err != nil {
		return err
	}
	ms, err := client.Metrics(ctx)
	if errors.Is(err, engine.ErrNoSession) {
		env.noteStale(sess, "every server is listed as down")
		cfg, err := env.loadConfig()
		if err != nil {
			return err
		}
		// An engine that starts nothing: every server stopped, no request.
		e := engine.New(cfg, env.engineOptions(sess, slog.New(slog.DiscardHandler)))
		ms = e.Metrics()
		e.Close()
		switch {
		case env.sessionFlag != "":
			// Named on the command line, it was expected to answer: zero
			// figures would read as a session that served nothing.
			env.note("session %s is not running: no figures; every server is listed as down", sess.Name)
		case env.StderrTTY:
			env.noteHint("no session is running: no figures yet; start one with: mcpctl up")
		}
	} else if err != nil {
		return err
	}
	if opts.server != "" {
		var one []engine.ServerMetrics
		var names []string
		for _, m := range ms {
			if m.Server == opts.server {
				one = append(one, m)
			}
			names = append(names, m.Server)
		}
		if one == nil {
			return engine.UnknownServer(opts.server, names)
		}
		ms = one
	}
	if opts.prometheus {
		return engine.WritePrometheus(env.Out, ms)
	}
	p, err := env.Printer()
	if err != nil {
		return err
	}
	return p.Print(ms, func(w io.Writer) error { return metricsTable(w, ms) })
}

// metricsTable has a line per server (its state, uptime, restarts and
// totals), then a table of its methods, indented: one table of all twelve
// columns would not fit an 80-column terminal.
func metricsTable(w io.Writer, ms []engine.ServerMetrics) error {
	num := func(n int64) string { return strconv.FormatInt(n, 10) }
	pct := func(r float64, requests int64) string {
		if requests == 0 {
			return "-" // no request: no rate to show
		}
		return strconv.FormatFloat(r*100, 'f', 1, 64) + "%"
	}
	dur := func(ms float64) string { return strconv.FormatFloat(ms, 'f', 1, 64) }
	for i, s := range ms {
		if i > 0 {
			fmt.Fprintln(w)
		}
		line := s.Server + "   " + string(s.State)
		if s.Up {
			line += ", up " + (time.Duration(s.UptimeSeconds) * time.Second).String()
		}
		line += fmt.Sprintf(", %d %s, %d %s, %d %s, success %s",
			s.Restarts, plural(int(s.Restarts), "restart", "restarts"), s.Requests, plural(int(s.Requests), "request", "requests"),
			s.Errors, plural(int(s.Errors), "error", "errors"), pct(s.SuccessRate, s.Requests))
		fmt.Fprintln(w, line)
		if len(s.Methods) == 0 {
			continue
		}
		rows := make([][]string, len(s.Methods))
		for j, m := range s.Methods {
			rows[j] = []string{m.Method, num(m.Requests), num(m.Errors), pct(m.SuccessRate, m.Requests), dur(m.AvgMs), dur(m.P50Ms), dur(m.P95Ms), dur(m.P99Ms)}
		}
		var b strings.Builder
		if err := output.Table(&b, []string{"method", "requests", "errors", "success", "avg ms", "p50", "p95", "p99"}, rows); err != nil {
			return err
		}
		for _, l := range strings.SplitAfter(strings.TrimSuffix(b.String(), "\n"), "\n") {
			fmt.Fprint(w, "  "+l)
		}
		fmt.Fprintln(w)
	}
	return nil
}
