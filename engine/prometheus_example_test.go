package engine_test

import (
	"os"

	"github.com/mcpctl/mcpctl/engine"
)

// WritePrometheus writes what [engine.Engine.Metrics] or
// [engine.Client.Metrics] report in the Prometheus text format.
func ExampleWritePrometheus() {
	engine.WritePrometheus(os.Stdout, []engine.ServerMetrics{{
		Server: "github", State: engine.StateReady, Up: true, UptimeSeconds: 90, Requests: 2, SuccessRate: 1,
		Methods: []engine.MethodMetrics{{Method: "tools/call", Requests: 2, SuccessRate: 1, P50Ms: 12, P95Ms: 40, P99Ms: 40, SumMs: 52}},
	}})
	// Output:
	// # HELP mcpctl_requests_total Requests mcpctl sent to a server, by method.
	// # TYPE mcpctl_requests_total counter
	// mcpctl_requests_total{server="github",method="tools/call"} 2
	// # HELP mcpctl_request_errors_total Requests that failed: no answer, or a JSON-RPC error (one its caller gave up on, by Ctrl-C or a timeout shorter than the server's, is not a failure).
	// # TYPE mcpctl_request_errors_total counter
	// mcpctl_request_errors_total{server="github",method="tools/call"} 0
	// # HELP mcpctl_request_duration_seconds Request latency; quantiles over the last 1024 requests.
	// # TYPE mcpctl_request_duration_seconds summary
	// mcpctl_request_duration_seconds{server="github",method="tools/call",quantile="0.5"} 0.012
	// mcpctl_request_duration_seconds{server="github",method="tools/call",quantile="0.95"} 0.04
	// mcpctl_request_duration_seconds{server="github",method="tools/call",quantile="0.99"} 0.04
	// mcpctl_request_duration_seconds_sum{server="github",method="tools/call"} 0.052
	// mcpctl_request_duration_seconds_count{server="github",method="tools/call"} 2
	// # HELP mcpctl_server_restarts_total Times a server became ready again after its first start (not after a stop for want of use).
	// # TYPE mcpctl_server_restarts_total counter
	// mcpctl_server_restarts_total{server="github"} 0
	// # HELP mcpctl_server_up 1 when a server is ready or degraded, else 0.
	// # TYPE mcpctl_server_up gauge
	// mcpctl_server_up{server="github"} 1
	// # HELP mcpctl_server_uptime_seconds Seconds since a server last became ready; 0 when it is down.
	// # TYPE mcpctl_server_uptime_seconds gauge
	// mcpctl_server_uptime_seconds{server="github"} 90
}
