package sessionstore

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Write kinds, the "kind" label of the write metrics and the fields of
// Stats.
const (
	kindCreate = "create"
	kindUpdate = "update"
	kindTouch  = "touch"
	kindDelete = "delete"
)

// Metrics are the store's Prometheus collectors. A nil *Metrics is valid
// and records nothing.
type Metrics struct {
	writes    *prometheus.CounterVec
	writeTime *prometheus.HistogramVec
	errs      *prometheus.CounterVec
}

// NewMetrics creates the collectors and registers them on reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_session_records_written_total",
			Help: "Session records written to the shared session store, by kind (create, update, touch, delete)."},
			[]string{"kind"}),
		writeTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "fleetgate_session_record_write_seconds",
			Help:    "Time to write a session record and receive the stream's acknowledgement, by kind.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2.5, 14)}, []string{"kind"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_session_store_errors_total",
			Help: "Failed session store operations, by operation and reason."}, []string{"op", "reason"}),
	}
	if reg != nil {
		reg.MustRegister(m.writes, m.writeTime, m.errs)
	}
	return m
}

func (m *Metrics) wrote(kind string, took time.Duration) {
	if m != nil {
		m.writes.WithLabelValues(kind).Inc()
		m.writeTime.WithLabelValues(kind).Observe(took.Seconds())
	}
}

func (m *Metrics) failed(op string, err error) {
	if m != nil {
		m.errs.WithLabelValues(op, reason(err)).Inc()
	}
}

// reason is the bounded label value for an error.
func reason(err error) string {
	switch {
	case errors.Is(err, ErrBadID):
		return "bad_id"
	case errors.Is(err, ErrExists):
		return "exists"
	case errors.Is(err, ErrNotFound):
		return "not_found"
	case errors.Is(err, ErrConflict):
		return "conflict"
	case errors.Is(err, ErrTooLarge):
		return "too_large"
	case errors.Is(err, ErrInvalid):
		return "invalid"
	default:
		return "nats"
	}
}
