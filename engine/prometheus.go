package engine

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WritePrometheus writes metrics in the Prometheus text exposition format
// (version 0.0.4), for a Go program that exposes them on an HTTP endpoint:
//
//	http.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
//		w.Header().Set("Content-Type", engine.PrometheusContentType)
//		engine.WritePrometheus(w, e.Metrics())
//	})
//
// The families are mcpctl_requests_total and mcpctl_request_errors_total
// (counters by server and method), mcpctl_request_duration_seconds (a
// summary by server and method with the quantiles 0.5, 0.95 and 0.99 over
// the last 1024 requests, and _sum and _count over all of them),
// mcpctl_server_restarts_total (a counter), mcpctl_server_up and
// mcpctl_server_uptime_seconds (gauges), by server.
func WritePrometheus(w io.Writer, metrics []ServerMetrics) error {
	bw := bufio.NewWriter(w)
	family := func(name, typ, help string, each func()) {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
		each()
	}
	sample := func(name string, value string, labels ...string) {
		bw.WriteString(name)
		if len(labels) > 0 {
			bw.WriteByte('{')
			for i := 0; i+1 < len(labels); i += 2 {
				if i > 0 {
					bw.WriteByte(',')
				}
				bw.WriteString(labels[i] + `="` + escapeLabel(labels[i+1]) + `"`)
			}
			bw.WriteByte('}')
		}
		bw.WriteString(" " + value + "\n")
	}
	perMethod := func(fn func(s ServerMetrics, m MethodMetrics)) func() {
		return func() {
			for _, s := range metrics {
				for _, m := range s.Methods {
					fn(s, m)
				}
			}
		}
	}
	family("mcpctl_requests_total", "counter", "Requests mcpctl sent to a server, by method.",
		perMethod(func(s ServerMetrics, m MethodMetrics) {
			sample("mcpctl_requests_total", itoa(m.Requests), "server", s.Server, "method", m.Method)
		}))
	family("mcpctl_request_errors_total", "counter", "Requests that failed: no answer, or a JSON-RPC error (one its caller gave up on, by Ctrl-C or a timeout shorter than the server's, is not a failure).",
		perMethod(func(s ServerMetrics, m MethodMetrics) {
			sample("mcpctl_request_errors_total", itoa(m.Errors), "server", s.Server, "method", m.Method)
		}))
	family("mcpctl_request_duration_seconds", "summary", "Request latency; quantiles over the last 1024 requests.",
		perMethod(func(s ServerMetrics, m MethodMetrics) {
			for _, q := range []struct {
				q  string
				ms float64
			}{{"0.5", m.P50Ms}, {"0.95", m.P95Ms}, {"0.99", m.P99Ms}} {
				sample("mcpctl_request_duration_seconds", ftoa(q.ms/1000), "server", s.Server, "method", m.Method, "quantile", q.q)
			}
			sample("mcpctl_request_duration_seconds_sum", ftoa(m.SumMs/1000), "server", s.Server, "method", m.Method)
			sample("mcpctl_request_duration_seconds_count", itoa(m.Requests), "server", s.Server, "method", m.Method)
		}))
	perServer := func(fn func(s ServerMetrics)) func() {
		return func() {
			for _, s := range metrics {
				fn(s)
			}
		}
	}
	family("mcpctl_server_restarts_total", "counter", "Times a server became ready again after its first start (not after a stop for want of use).",
		perServer(func(s ServerMetrics) { sample("mcpctl_server_restarts_total", itoa(s.Restarts), "server", s.Server) }))
	family("mcpctl_server_up", "gauge", "1 when a server is ready or degraded, else 0.",
		perServer(func(s ServerMetrics) {
			up := "0"
			if s.Up {
				up = "1"
			}
			sample("mcpctl_server_up", up, "server", s.Server)
		}))
	family("mcpctl_server_uptime_seconds", "gauge", "Seconds since a server last became ready; 0 when it is down.",
		perServer(func(s ServerMetrics) {
			sample("mcpctl_server_uptime_seconds", ftoa(s.UptimeSeconds), "server", s.Server)
		}))
	return bw.Flush()
}

// PrometheusContentType is the content type of [WritePrometheus]'s output.
const PrometheusContentType = "text/plain; version=0.0.4; charset=utf-8"

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// escapeLabel escapes a label value as the text format wants: backslash,
// double quote and line feed.
func escapeLabel(v string) string { return labelEscaper.Replace(v) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// ftoa writes f to 12 significant digits: milliseconds made seconds
// (27.061 / 1000) would otherwise print as 0.027060999999999998.
func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', 12, 64) }
