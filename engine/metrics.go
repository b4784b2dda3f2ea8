package engine

import (
	"math"
	"slices"
	"sort"
	"sync"
	"time"
)

// latencyWindow is how many recent latencies per server and method the
// percentiles are taken from.
const latencyWindow = 1024

// metrics counts the requests the engine sends, per server and method.
type metrics struct {
	mu sync.Mutex
	by map[string]map[string]*methodStats // server → method
	// readies counts the times each server became ready: its restarts
	// are all but the first.
	readies map[string]int64
}

type methodStats struct {
	requests, errors int64
	latencies        []time.Duration // a ring of the last latencyWindow
	next             int
	sum              time.Duration // of every request, not only the window
}

func newMetrics() *metrics {
	return &metrics{by: map[string]map[string]*methodStats{}, readies: map[string]int64{}}
}

// ready counts a server's becoming ready (its first start or a restart).
func (m *metrics) ready(server string) {
	m.mu.Lock()
	m.readies[server]++
	m.mu.Unlock()
}

// forget drops what was counted for server.
func (m *metrics) forget(server string) {
	m.mu.Lock()
	delete(m.by, server)
	delete(m.readies, server)
	m.mu.Unlock()
}

// record counts a request and its latency; err, unless it is the caller
// giving up, counts as the server's error.
func (m *metrics) record(server, method string, d time.Duration, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	bs := m.by[server]
	if bs == nil {
		bs = map[string]*methodStats{}
		m.by[server] = bs
	}
	st := bs[method]
	if st == nil {
		st = &methodStats{}
		bs[method] = st
	}
	st.requests++
	if err != nil && !callerGaveUp(err) {
		st.errors++
	}
	st.sum += d
	if len(st.latencies) < latencyWindow {
		st.latencies = append(st.latencies, d)
	} else {
		st.latencies[st.next] = d
		st.next = (st.next + 1) % latencyWindow
	}
}

// MethodMetrics are the figures of one method of one server. Requests,
// Errors and SumMs count every request since the engine started;
// the percentiles are over the last 1024 requests, in milliseconds. A
// request its caller gave up on (its context cancelled, or its own timeout,
// shorter than the server's requestTimeout, passed) counts, until then, and
// not as an error: it is not the server's.
type MethodMetrics struct {
	Method   string `json:"method"`
	Requests int64  `json:"requests"`
	Errors   int64  `json:"errors"`
	// SuccessRate is the share of requests without an error, from 0 to 1.
	SuccessRate float64 `json:"successRate"`
	P50Ms       float64 `json:"p50Ms"`
	P95Ms       float64 `json:"p95Ms"`
	P99Ms       float64 `json:"p99Ms"`
	// SumMs is the total time of every request; AvgMs is SumMs per
	// request (0 with none).
	SumMs float64 `json:"sumMs"`
	AvgMs float64 `json:"avgMs"`
}

// ServerMetrics are the figures of one server.
type ServerMetrics struct {
	Server string `json:"server"`
	// State is the server's state; Up says it is ready or degraded, and
	// UptimeSeconds counts from when it last became ready (0 when down).
	State         State   `json:"state"`
	Up            bool    `json:"up"`
	UptimeSeconds float64 `json:"uptimeSeconds"`
	// Restarts counts the times the server became ready again after its
	// first start in this engine: by its restart policy, by hand or on a
	// config change; not a start after a stop for want of use (transient,
	// idleTimeout).
	Restarts int64 `json:"restarts"`
	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
	// SuccessRate is the share of requests without an error, from 0 to 1
	// (1 with no request yet).
	SuccessRate float64         `json:"successRate"`
	Methods     []MethodMetrics `json:"methods"`
}

// Metrics reports, per configured server, its state, uptime and restarts,
// and the requests sent to it by method: counts, errors (no answer, or a
// JSON-RPC error), success rate and latency percentiles.
func (e *Engine) Metrics() []ServerMetrics {
	if e.metrics == nil {
		return nil // a zero Engine
	}
	states := map[string]ServerStatus{}
	for _, st := range e.Status() {
		states[st.Name] = st
	}
	servers := e.all()
	m := e.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ServerMetrics, 0, len(servers))
	for _, s := range servers {
		name := s.cfg().Name
		st := states[name]
		sm := ServerMetrics{Server: name, State: st.State, Methods: []MethodMetrics{},
			Restarts: max(0, m.readies[name]-1)}
		if st.State == StateReady || st.State == StateDegraded {
			sm.Up, sm.UptimeSeconds = true, st.UptimeSeconds
		}
		methods := make([]string, 0, len(m.by[name]))
		for method := range m.by[name] {
			methods = append(methods, method)
		}
		sort.Strings(methods)
		for _, method := range methods {
			ms := m.by[name][method]
			lat := slices.Clone(ms.latencies)
			slices.Sort(lat)
			sm.Requests += ms.requests
			sm.Errors += ms.errors
			sm.Methods = append(sm.Methods, MethodMetrics{
				Method: method, Requests: ms.requests, Errors: ms.errors,
				SuccessRate: successRate(ms.requests, ms.errors),
				P50Ms:       percentile(lat, 0.50), P95Ms: percentile(lat, 0.95), P99Ms: percentile(lat, 0.99),
				SumMs: float64(ms.sum.Microseconds()) / 1000,
			})
			if ms.requests > 0 {
				sm.Methods[len(sm.Methods)-1].AvgMs = math.Round(float64(ms.sum.Microseconds())/float64(ms.requests)) / 1000
			}
		}
		sm.SuccessRate = successRate(sm.Requests, sm.Errors)
		out = append(out, sm)
	}
	return out
}

func successRate(requests, errors int64) float64 {
	if requests == 0 {
		return 1
	}
	return float64(requests-errors) / float64(requests)
}

// percentile returns the nearest-rank p-th percentile of sorted latencies,
// in milliseconds (0 for none).
func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return float64(sorted[i].Microseconds()) / 1000
}
