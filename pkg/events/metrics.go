package events

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the event log's Prometheus collectors. A nil *Metrics is
// valid and records nothing.
type Metrics struct {
	decodeErrors prometheus.Counter
	invalid      prometheus.Counter
	gaps         prometheus.Counter
	applied      prometheus.Gauge
	delivery     prometheus.Histogram
	published    *prometheus.CounterVec
	publishTime  prometheus.Histogram
	fenced       prometheus.Counter
	outboxDepth  prometheus.Gauge
	snapshots    prometheus.Counter
}

// NewMetrics creates the collectors and registers them on reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		decodeErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetgate_events_decode_errors_total",
			Help: "Events in the log that could not be decoded and were skipped."}),
		invalid: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetgate_events_invalid_total",
			Help: "Decoded events that could not be applied to the fleet state."}),
		gaps: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetgate_events_gaps_total",
			Help: "Purge gaps detected by readers (events removed before they were read)."}),
		applied: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetgate_events_applied_generation",
			Help: "Generation of the fleet state this process has applied."}),
		delivery: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "fleetgate_events_delivery_seconds",
			Help:    "Time from an event being stored in the stream to its application by a reader.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2.5, 14)}),
		published: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_events_published_total",
			Help: "Events stored in the event log by this writer, by kind."}, []string{"kind"}),
		publishTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "fleetgate_events_publish_seconds",
			Help:    "Time from an event entering the outbox to its acknowledgement by the stream.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14)}),
		fenced: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetgate_events_fenced_total",
			Help: "Publishes rejected because another writer moved the stream."}),
		outboxDepth: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetgate_outbox_depth",
			Help: "Events waiting in the durable outbox."}),
		snapshots: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetgate_events_snapshots_total",
			Help: "Fleet state snapshots written."}),
	}
	if reg != nil {
		reg.MustRegister(m.decodeErrors, m.invalid, m.gaps, m.applied, m.delivery, m.published,
			m.publishTime, m.fenced, m.outboxDepth, m.snapshots)
	}
	return m
}

func (m *Metrics) decodeError() {
	if m != nil {
		m.decodeErrors.Inc()
	}
}

func (m *Metrics) invalidEvent() {
	if m != nil {
		m.invalid.Inc()
	}
}

func (m *Metrics) gap() {
	if m != nil {
		m.gaps.Inc()
	}
}

func (m *Metrics) appliedGeneration(gen uint64, stored time.Time, now time.Time) {
	if m == nil {
		return
	}
	m.applied.Set(float64(gen))
	if !stored.IsZero() {
		m.delivery.Observe(max(now.Sub(stored), 0).Seconds())
	}
}

func (m *Metrics) publishedEvent(kind string, since time.Duration) {
	if m != nil {
		m.published.WithLabelValues(kind).Inc()
		m.publishTime.Observe(since.Seconds())
	}
}

func (m *Metrics) fencedPublish() {
	if m != nil {
		m.fenced.Inc()
	}
}

func (m *Metrics) depth(n int) {
	if m != nil {
		m.outboxDepth.Set(float64(n))
	}
}

func (m *Metrics) snapshot() {
	if m != nil {
		m.snapshots.Inc()
	}
}
