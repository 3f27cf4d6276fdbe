package edge

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/pkg/convergence"
)

// recordMetrics are the collectors of session records, rehydration,
// identity binding and convergence evidence.
type recordMetrics struct {
	rehydrated        prometheus.Counter
	rehydrateSeconds  prometheus.Histogram
	refusals          *prometheus.CounterVec
	written           *prometheus.CounterVec
	generationLag     prometheus.Histogram
	signalToConverged prometheus.Histogram
}

func newRecordMetrics(reg *prometheus.Registry, e *Edge) *recordMetrics {
	m := &recordMetrics{
		rehydrated: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetgate_edge_sessions_rehydrated_total",
			Help: "Sessions created on another edge that this edge rebuilt from their stored record."}),
		rehydrateSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "fleetgate_edge_rehydration_seconds",
			Help:    "Time to rebuild a session from its stored record (read, replayed initialize, takeover write).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_edge_identity_refusals_total",
			Help: "Requests refused for their identity, by reason (owner_mismatch: 403, missing_identity: 401)."}, []string{"reason"}),
		written: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_edge_session_records_written_total",
			Help: "Session record writes this edge made, by kind (create, update, touch, delete)."}, []string{"kind"}),
		generationLag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "fleetgate_edge_session_generation_lag",
			Help:    "Per session, when a new view is applied: generations its latest tools/list traversal trails (convergence.GenerationLag).",
			Buckets: []float64{0, 1, 2, 5, 10, 20, 50, 100, 500}}),
		signalToConverged: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "fleetgate_edge_signal_to_converged_seconds",
			Help:    "Time from a tools/list_changed sent to a session to the traversal that made it converge.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
	}
	reg.MustRegister(m.rehydrated, m.rehydrateSeconds, m.refusals, m.written, m.generationLag, m.signalToConverged,
		&verdictCollector{e: e, desc: prometheus.NewDesc("fleetgate_edge_sessions_by_verdict",
			"Live sessions on this edge by convergence verdict.", []string{"verdict"}, nil)})
	return m
}

// verdictCollector counts the live sessions by verdict at scrape time.
type verdictCollector struct {
	e    *Edge
	desc *prometheus.Desc
}

func (c *verdictCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *verdictCollector) Collect(ch chan<- prometheus.Metric) {
	counts := map[convergence.Status]int{convergence.Converged: 0, convergence.Stale: 0,
		convergence.Incomplete: 0, convergence.Unverifiable: 0}
	for _, s := range c.e.reg.All() {
		counts[convergence.Verdict(s.Record().Convergence())]++
	}
	for v, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), string(v))
	}
}
