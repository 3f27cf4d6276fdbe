package dashboard

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the dashboard's collectors; a nil *metrics records nothing
// (no Registerer).
type metrics struct {
	open     prometheus.Gauge
	refusals prometheus.Counter
	drops    prometheus.Counter
	age      prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	if reg == nil {
		return nil
	}
	m := &metrics{
		open: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetgate_dashboard_streams",
			Help: "Open event streams of the dashboard."}),
		refusals: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetgate_dashboard_streams_refused_total",
			Help: "Event streams refused because the maximum was open."}),
		drops: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetgate_dashboard_streams_dropped_total",
			Help: "Event streams dropped because their client fell behind."}),
		age: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "fleetgate_dashboard_event_age_seconds",
			Help:    "Age of an event (from its time stamp) when the dashboard queues it on the streams.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}),
	}
	reg.MustRegister(m.open, m.refusals, m.drops, m.age)
	return m
}

func (m *metrics) streams(n int) {
	if m != nil {
		m.open.Set(float64(n))
	}
}

func (m *metrics) refused() {
	if m != nil {
		m.refusals.Inc()
	}
}

func (m *metrics) dropped() {
	if m != nil {
		m.drops.Inc()
	}
}

func (m *metrics) sent(at time.Time) {
	if m != nil && !at.IsZero() {
		m.age.Observe(max(0, time.Since(at).Seconds()))
	}
}
