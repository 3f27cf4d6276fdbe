package calltrail

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Reasons of fleetgate_calltrail_dropped_total.
const (
	ReasonQueueFull    = "queue_full"    // Record found the queue full
	ReasonPublishError = "publish_error" // publish failed or was not acknowledged in time
	ReasonShutdown     = "shutdown"      // still queued or unacknowledged at the drain deadline
)

// metrics are a Trail's collectors. Record touches only droppedFull, a
// counter resolved at Open, so the hot path does no label lookup.
type metrics struct {
	dropped         *prometheus.CounterVec
	droppedFull     prometheus.Counter
	droppedPublish  prometheus.Counter
	droppedShutdown prometheus.Counter
	published       prometheus.Counter
	queueDepth      prometheus.GaugeFunc
}

func newMetrics(reg prometheus.Registerer, t *Trail) (*metrics, error) {
	m := &metrics{
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_calltrail_dropped_total",
			Help: "Tool-call audit entries lost, by reason (queue_full: the publish queue was full; publish_error: publish failed or unacknowledged; shutdown: left at the drain deadline)."},
			[]string{"reason"}),
		published: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetgate_calltrail_published_total",
			Help: "Tool-call audit entries acknowledged by the stream."}),
		queueDepth: prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "fleetgate_calltrail_queue_depth",
			Help: "Tool-call audit entries waiting to be published."}, func() float64 { return float64(len(t.queue)) }),
	}
	m.droppedFull = m.dropped.WithLabelValues(ReasonQueueFull)
	m.droppedPublish = m.dropped.WithLabelValues(ReasonPublishError)
	m.droppedShutdown = m.dropped.WithLabelValues(ReasonShutdown)
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.dropped, m.published, m.queueDepth} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("calltrail: register metrics: %w", err)
		}
	}
	return m, nil
}
