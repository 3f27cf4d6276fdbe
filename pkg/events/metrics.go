package events

import (
	"slices"
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
	tooLarge     *prometheus.CounterVec
	changeAge    *prometheus.HistogramVec
}

// The hops of a change's path: the values of the hop label of
// fleetgate_change_age_seconds, the age of a change when it passes each.
// Ages are measured from the event's time, except HopObserved's.
const (
	HopObserved = "observed" // controller: the probe's observation of a change to the event made of it (coalescing included)
	HopOutbox   = "outbox"   // controller: the event stored in the durable outbox
	HopStream   = "stream"   // controller: the event acknowledged by the stream
	HopApplied  = "applied"  // edge: the event's state applied to the served view
	HopNotified = "notified" // edge: a session's list_changed written
)

var hops = []string{HopObserved, HopOutbox, HopStream, HopApplied, HopNotified}

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
		tooLarge: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_events_too_large_total",
			Help: "Events not published because they exceed the NATS max_payload (a catalog is replaced by an empty one and a reason), by kind."}, []string{"kind"}),
		changeAge: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "fleetgate_change_age_seconds",
			Help:    "Age of a change when it passes a hop of its path (observed, outbox, stream, applied, notified), from the event's time.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"hop"}),
	}
	for _, h := range hops {
		m.changeAge.WithLabelValues(h)
	}
	if reg != nil {
		reg.MustRegister(m.decodeErrors, m.invalid, m.gaps, m.applied, m.delivery, m.published,
			m.publishTime, m.fenced, m.outboxDepth, m.snapshots, m.tooLarge, m.changeAge)
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
		m.ChangeAge(HopStream, since)
	}
}

// ChangeAge records the age of a change at hop, one of the Hop constants
// (any other hop is ignored, which keeps the label's values bounded).
// Negative ages (clocks of two hosts) count as zero.
func (m *Metrics) ChangeAge(hop string, age time.Duration) {
	if m == nil || !slices.Contains(hops, hop) {
		return
	}
	m.changeAge.WithLabelValues(hop).Observe(max(age, 0).Seconds())
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

func (m *Metrics) tooLargeEvent(kind string) {
	if m != nil {
		m.tooLarge.WithLabelValues(kind).Inc()
	}
}
