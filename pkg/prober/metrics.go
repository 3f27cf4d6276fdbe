package prober

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric label values of the result label.
const (
	resultOK          = "ok"
	resultFailure     = "failure"
	resultAuthFailure = "auth_failure"
)

// Metrics are the probers' Prometheus collectors, shared by every Prober of
// a process and labelled by group and backend. A nil *Metrics is valid and
// records nothing.
type Metrics struct {
	probes      *prometheus.CounterVec   // group, backend, result
	latency     *prometheus.HistogramVec // group, backend
	reconnects  *prometheus.CounterVec   // group, backend
	discoveries *prometheus.CounterVec   // group, backend, result
	discovery   *prometheus.HistogramVec // group, backend
}

// NewMetrics creates the collectors and registers them on reg (nil: not
// registered).
//
//	fleetgate_prober_probes_total{group,backend,result}      observations reported, result ok|failure|auth_failure
//	fleetgate_prober_probe_seconds{group,backend}           ping round-trip time (failed pings included)
//	fleetgate_prober_reconnects_total{group,backend}        sessions re-established after one was lost
//	fleetgate_prober_discoveries_total{group,backend,result} catalog listings, result ok|failure
//	fleetgate_prober_discovery_seconds{group,backend}       duration of a complete listing
func NewMetrics(reg prometheus.Registerer) *Metrics {
	labels := []string{"group", "backend"}
	m := &Metrics{
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_prober_probes_total",
			Help: "Health observations reported by backend probers, by result (ok, failure, auth_failure)."},
			append(labels, "result")),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "fleetgate_prober_probe_seconds",
			Help:    "Round-trip time of MCP pings sent to backends, failed ones included.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14)}, labels),
		reconnects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_prober_reconnects_total",
			Help: "Backend sessions re-established after the previous one was lost."}, labels),
		discoveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_prober_discoveries_total",
			Help: "Complete listings of a backend's tools, resources and prompts, by result (ok, failure)."},
			append(labels, "result")),
		discovery: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "fleetgate_prober_discovery_seconds",
			Help:    "Duration of a complete listing of a backend's tools, resources and prompts.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14)}, labels),
	}
	if reg != nil {
		reg.MustRegister(m.probes, m.latency, m.reconnects, m.discoveries, m.discovery)
	}
	return m
}

func (m *Metrics) probe(t Target, result string) {
	if m != nil {
		m.probes.WithLabelValues(t.Group, t.Name, result).Inc()
	}
}

func (m *Metrics) pingLatency(t Target, d time.Duration) {
	if m != nil {
		m.latency.WithLabelValues(t.Group, t.Name).Observe(d.Seconds())
	}
}

func (m *Metrics) reconnect(t Target) {
	if m != nil {
		m.reconnects.WithLabelValues(t.Group, t.Name).Inc()
	}
}

func (m *Metrics) discovered(t Target, ok bool, d time.Duration) {
	if m == nil {
		return
	}
	result := resultOK
	if !ok {
		result = resultFailure
	}
	m.discoveries.WithLabelValues(t.Group, t.Name, result).Inc()
	m.discovery.WithLabelValues(t.Group, t.Name).Observe(d.Seconds())
}

// Forget deletes the series of a backend that was removed from the fleet.
func (m *Metrics) Forget(t Target) {
	if m == nil {
		return
	}
	l := prometheus.Labels{"group": t.Group, "backend": t.Name}
	m.probes.DeletePartialMatch(l)
	m.latency.DeletePartialMatch(l)
	m.reconnects.DeletePartialMatch(l)
	m.discoveries.DeletePartialMatch(l)
	m.discovery.DeletePartialMatch(l)
}
