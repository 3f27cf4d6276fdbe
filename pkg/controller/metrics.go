package controller

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/pkg/health"
)

// Metrics are the controller's own collectors (the event log and the
// probers register theirs).
type Metrics struct {
	leading  prometheus.Gauge
	backends *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		leading: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetgate_controller_leader",
			Help: "1 while this controller holds the leader lease."}),
		backends: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "fleetgate_controller_backends",
			Help: "Backends by live health status (leader only)."}, []string{"status"}),
	}
	if reg != nil {
		reg.MustRegister(m.leading, m.backends)
	}
	return m
}

func (m *Metrics) leader(on bool) {
	v := 0.0
	if on {
		v = 1
	}
	m.leading.Set(v)
}

func (m *Metrics) backendsByStatus(counts map[health.Status]int) {
	for _, s := range health.Statuses() {
		m.backends.WithLabelValues(string(s)).Set(float64(counts[s]))
	}
}
