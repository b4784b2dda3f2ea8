package engine

import (
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
}

type methodStats struct {
	requests, errors int64
	latencies        []time.Duration // a ring of the last latencyWindow
	next             int
}

func newMetrics() *metrics { return &metrics{by: map[string]map[string]*methodStats{}} }

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
	if err != nil {
		st.errors++
	}
	if len(st.latencies) < latencyWindow {
		st.latencies = append(st.latencies, d)
	} else {
		st.latencies[st.next] = d
		st.next = (st.next + 1) % latencyWindow
	}
}

// MethodMetrics are the figures of one method of one server. Latencies are
// over the last 1024 requests, in milliseconds.
type MethodMetrics struct {
	Method   string  `json:"method"`
	Requests int64   `json:"requests"`
	Errors   int64   `json:"errors"`
	P50Ms    float64 `json:"p50Ms"`
	P95Ms    float64 `json:"p95Ms"`
	P99Ms    float64 `json:"p99Ms"`
}

// ServerMetrics are the figures of one server.
type ServerMetrics struct {
	Server   string          `json:"server"`
	Requests int64           `json:"requests"`
	Errors   int64           `json:"errors"`
	Methods  []MethodMetrics `json:"methods"`
}

// Metrics reports, per configured server, the requests sent to it by
// method: counts, errors (no answer, or a JSON-RPC error), and latency
// percentiles.
func (e *Engine) Metrics() []ServerMetrics {
	m := e.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ServerMetrics, 0, len(e.all()))
	for _, s := range e.all() {
		sm := ServerMetrics{Server: s.cfg().Name, Methods: []MethodMetrics{}}
		methods := make([]string, 0, len(m.by[s.cfg().Name]))
		for name := range m.by[s.cfg().Name] {
			methods = append(methods, name)
		}
		sort.Strings(methods)
		for _, name := range methods {
			st := m.by[s.cfg().Name][name]
			lat := slices.Clone(st.latencies)
			slices.Sort(lat)
			sm.Requests += st.requests
			sm.Errors += st.errors
			sm.Methods = append(sm.Methods, MethodMetrics{
				Method: name, Requests: st.requests, Errors: st.errors,
				P50Ms: percentile(lat, 0.50), P95Ms: percentile(lat, 0.95), P99Ms: percentile(lat, 0.99),
			})
		}
		out = append(out, sm)
	}
	return out
}

func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return float64(sorted[i].Microseconds()) / 1000
}
