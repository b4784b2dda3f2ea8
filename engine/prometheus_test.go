package engine

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The line syntax of the Prometheus text format (0.0.4): comments, and
// samples name{label="value",...} value.
var (
	promHelp   = regexp.MustCompile(`^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*$`)
	promType   = regexp.MustCompile(`^# TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (counter|gauge|summary|histogram|untyped)$`)
	promSample = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*")*\})? (?:[-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?|NaN|[-+]Inf)$`)
)

// checkExposition returns a complaint for every line that is not a HELP,
// a TYPE or a sample, for a sample whose family has no TYPE before it, and
// for a family typed twice.
func checkExposition(text string) []string {
	var bad []string
	errorf := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	typed := map[string]string{}
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		switch {
		case promHelp.MatchString(line):
		case promType.MatchString(line):
			name := strings.Fields(line)[2]
			if typed[name] != "" {
				errorf("line %d: %s typed twice", i+1, name)
			}
			typed[name] = strings.Fields(line)[3]
		case promSample.MatchString(line):
			name := line[:strings.IndexAny(line, "{ ")]
			base := name
			for _, suf := range []string{"_sum", "_count"} {
				if b, ok := strings.CutSuffix(name, suf); ok && typed[b] == "summary" {
					base = b
				}
			}
			if typed[base] == "" {
				errorf("line %d: sample of %s before its TYPE", i+1, name)
			}
		default:
			errorf("line %d is not valid exposition syntax: %q", i+1, line)
		}
	}
	return bad
}

// TestWritePrometheus: every family, its type, label escaping, seconds
// from milliseconds, and valid line syntax.
func TestWritePrometheus(t *testing.T) {
	var buf bytes.Buffer
	err := WritePrometheus(&buf, []ServerMetrics{
		{Server: "fake", State: StateReady, Up: true, UptimeSeconds: 12.5, Restarts: 2, Requests: 4, Errors: 1,
			Methods: []MethodMetrics{{Method: "tools/call", Requests: 3, Errors: 1, P50Ms: 1.5, P95Ms: 20, P99Ms: 250, SumMs: 27.061},
				{Method: `we"ird\name` + "\n", Requests: 1}}},
		{Server: "down", State: StateStopped, Methods: []MethodMetrics{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	for _, b := range checkExposition(text) {
		t.Error(b)
	}
	for _, want := range []string{
		"# TYPE mcpctl_requests_total counter\n",
		`mcpctl_requests_total{server="fake",method="tools/call"} 3` + "\n",
		`mcpctl_requests_total{server="fake",method="we\"ird\\name\n"} 1` + "\n",
		"# TYPE mcpctl_request_errors_total counter\n",
		`mcpctl_request_errors_total{server="fake",method="tools/call"} 1` + "\n",
		"# TYPE mcpctl_request_duration_seconds summary\n",
		`mcpctl_request_duration_seconds{server="fake",method="tools/call",quantile="0.5"} 0.0015` + "\n",
		`mcpctl_request_duration_seconds{server="fake",method="tools/call",quantile="0.95"} 0.02` + "\n",
		`mcpctl_request_duration_seconds{server="fake",method="tools/call",quantile="0.99"} 0.25` + "\n",
		`mcpctl_request_duration_seconds_sum{server="fake",method="tools/call"} 0.027061` + "\n",
		`mcpctl_request_duration_seconds_count{server="fake",method="tools/call"} 3` + "\n",
		"# TYPE mcpctl_server_restarts_total counter\n",
		`mcpctl_server_restarts_total{server="fake"} 2` + "\n",
		"# TYPE mcpctl_server_up gauge\n",
		`mcpctl_server_up{server="fake"} 1` + "\n",
		`mcpctl_server_up{server="down"} 0` + "\n",
		"# TYPE mcpctl_server_uptime_seconds gauge\n",
		`mcpctl_server_uptime_seconds{server="fake"} 12.5` + "\n",
		`mcpctl_server_uptime_seconds{server="down"} 0` + "\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in:\n%s", want, text)
		}
	}
}

// TestCheckExposition: the syntax check itself rejects what is wrong.
func TestCheckExposition(t *testing.T) {
	for _, bad := range []string{
		`m{a="x"} 1`,                              // no TYPE
		"# TYPE m counter\nm{a=\"x\"y\"} 1",       // unescaped quote
		"# TYPE m counter\nm{a=\"x\"} one",        // not a number
		"# TYPE m counter\nm {a=\"x\"} 1",         // space before labels
		"# TYPE m counter\n# TYPE m counter\nm 1", // typed twice
	} {
		if len(checkExposition(bad)) == 0 {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TestPercentile: nearest rank over the sorted window.
func TestPercentile(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	var hundred []time.Duration
	for i := 1; i <= 100; i++ {
		hundred = append(hundred, ms(i))
	}
	for _, c := range []struct {
		lat  []time.Duration
		p    float64
		want float64
	}{
		{nil, 0.5, 0},
		{[]time.Duration{ms(7)}, 0.99, 7},
		{[]time.Duration{ms(1), ms(2)}, 0.5, 1},
		{hundred, 0.5, 50},
		{hundred, 0.95, 95},
		{hundred, 0.99, 99},
		{[]time.Duration{time.Microsecond * 1500}, 0.5, 1.5},
	} {
		if got := percentile(c.lat, c.p); got != c.want {
			t.Errorf("percentile(%d values, %v) = %v, want %v", len(c.lat), c.p, got, c.want)
		}
	}
}

// TestMetricsWindow: counts and sums cover every request, percentiles the
// last 1024 only; errors give the success rate.
func TestMetricsWindow(t *testing.T) {
	m := newMetrics()
	for range 2000 {
		m.record("s", "tools/call", time.Second, nil)
	}
	for range latencyWindow {
		m.record("s", "tools/call", time.Millisecond, nil)
	}
	m.record("s", "tools/call", time.Millisecond, errTest)
	st := m.by["s"]["tools/call"]
	lat := append([]time.Duration(nil), st.latencies...)
	if len(lat) != latencyWindow {
		t.Fatalf("window holds %d", len(lat))
	}
	for _, d := range lat {
		if d != time.Millisecond {
			t.Fatalf("an old latency (%v) is still in the window", d)
		}
	}
	if st.requests != 2000+latencyWindow+1 || st.errors != 1 {
		t.Errorf("requests %d errors %d", st.requests, st.errors)
	}
	if want := 2000*time.Second + (latencyWindow+1)*time.Millisecond; st.sum != want {
		t.Errorf("sum %v, want %v", st.sum, want)
	}
	if got := successRate(4, 1); got != 0.75 {
		t.Errorf("successRate(4, 1) = %v", got)
	}
	if got := successRate(0, 0); got != 1 {
		t.Errorf("successRate(0, 0) = %v", got)
	}
}

var errTest = errorf(KindProtocol, "s", "test")
