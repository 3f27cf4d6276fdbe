package edge

import (
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/session"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/pkg/events"
)

// metrics are the edge's Prometheus collectors, all registered on one
// registry served at the admin /metrics.
type metrics struct {
	reg           *prometheus.Registry
	events        *events.Metrics
	sessions      *prometheus.GaugeVec
	notifications *prometheus.CounterVec
	batches       prometheus.Counter
	latency       prometheus.Histogram
	applied       prometheus.Gauge
	viewTools     prometheus.Gauge
	collisions    prometheus.Gauge
	callSeconds   *prometheus.HistogramVec
	callErrors    *prometheus.CounterVec
	notifyDropped prometheus.Counter
	streams       prometheus.Gauge
	connRefused   prometheus.Counter
	idleEnded     prometheus.Counter
	// refusals are the requests refused for their identity, recordsWritten
	// the session record writes (package records).
	refusals       *prometheus.CounterVec
	recordsWritten *prometheus.CounterVec
	slowDropped    prometheus.Counter
	// signIns counts sign-in callbacks and revocations by outcome,
	// signInChanges the sign-ins and sign-outs (of any edge) heard.
	signIns       *prometheus.CounterVec
	signInChanges prometheus.Counter
	// signInStoreFailures counts the failed sign-in bucket writes of
	// rotated refresh tokens, by reason; signInUnsaved the rotated tokens
	// held in memory, not yet written.
	signInStoreFailures *prometheus.CounterVec
	signInUnsaved       prometheus.Gauge
}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		reg:    reg,
		events: events.NewMetrics(reg),
		sessions: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "fleetgate_edge_sessions",
			Help: "Live MCP sessions on this edge, by kind (session: Mcp-Session-Id sessions; listen: 2026-07-28 subscriptions/listen streams)."},
			[]string{"kind"}),
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_edge_notifications_sent_total",
			Help: "List-changed notifications written to clients, by method."}, []string{"method"}),
		batches: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetgate_edge_resync_batches_total",
			Help: "Coalesced resync batches that changed the served view and were applied to the sessions."}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "fleetgate_edge_event_to_notification_seconds",
			Help:    "Time from an event's timestamp in the stream to a list_changed notification it caused being sent to a session.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
		applied: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetgate_edge_applied_generation",
			Help: "Generation of the fleet state whose view the edge serves."}),
		viewTools: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetgate_edge_view_tools",
			Help: "Tools in the served view."}),
		collisions: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetgate_edge_view_collisions",
			Help: "Exposed-name collisions in the served view (see /v1/view for which)."}),
		callSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "fleetgate_edge_backend_call_seconds",
			Help:    "Latency of requests the edge forwards to backends, by backend and method.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14)}, []string{"backend", "method"}),
		callErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_edge_backend_call_errors_total",
			Help: "Forwarded requests that failed, by backend and method."}, []string{"backend", "method"}),
		notifyDropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetgate_edge_notifications_skipped_total",
			Help: "List-changed notifications merged into the next one because the previous one to that session was still being written (a client not reading)."}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetgate_edge_standalone_streams",
			Help: "Standalone GET streams open (session-based clients listening for list_changed)."}),
		idleEnded: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetgate_edge_idle_sessions_ended_total",
			Help: "Sessions ended after Options.SessionIdleTimeout without a request."}),
		connRefused: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetgate_edge_connections_refused_total",
			Help: "MCP connections closed at once because Options.MaxConnections were open."}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_edge_identity_refusals_total",
			Help: "Requests refused for their identity, by reason (owner_mismatch: 403, missing_identity: 401)."}, []string{"reason"}),
		recordsWritten: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_edge_session_records_written_total",
			Help: "Session record writes this edge made, by kind (create, update, touch, delete; lost: a record found evicted from a full bucket or expired, then created again)."}, []string{"kind"}),
		slowDropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetgate_edge_slow_clients_dropped_total",
			Help: "MCP connections cut because the client took no part of a response or stream write within Options.WriteTimeout."}),
		signIns: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_edge_signins_total",
			Help: "Sign-in pages and revocations of user_oauth backends, by outcome (completed, refused, failed, revoked; other_user, unbound: a browser refused)."}, []string{"outcome"}),
		signInChanges: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetgate_edge_signin_changes_total",
			Help: "Sign-ins and sign-outs of user_oauth backends heard from the sign-in bucket (any edge): each makes the user's sessions here list again."}),
		signInStoreFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_edge_signin_store_failures_total",
			Help: "Failed sign-in bucket writes of rotated refresh tokens of user_oauth sign-ins (each attempt, retries included), by reason (conflict: the bucket's record changed meanwhile and wins; store_error: the write failed, the token is held in memory and written again in the background; seal_error: the token could not be sealed, neither written nor held)."}, []string{"reason"}),
		signInUnsaved: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetgate_edge_signin_unsaved",
			Help: "Rotated refresh tokens of user_oauth sign-ins held in this edge's memory, their sign-in bucket write failed, not yet written again (lost if the edge stops before)."}),
	}
	reg.MustRegister(m.sessions, m.notifications, m.batches, m.latency, m.applied, m.viewTools, m.collisions,
		m.callSeconds, m.callErrors, m.notifyDropped, m.streams,
		m.connRefused, m.idleEnded, m.refusals, m.recordsWritten, m.slowDropped, m.signIns, m.signInChanges, m.signInStoreFailures, m.signInUnsaved)
	return m
}

// BackendCall implements backend.Observer.
func (m *metrics) BackendCall(backend, method string, d time.Duration, err error) {
	m.callSeconds.WithLabelValues(backend, method).Observe(d.Seconds())
	if err != nil {
		m.callErrors.WithLabelValues(backend, method).Inc()
	}
}

// sessionMetrics are the collectors the session registry updates.
func (m *metrics) sessionMetrics() *session.Metrics {
	return &session.Metrics{Sessions: m.sessions, Notifications: m.notifications, Latency: m.latency,
		Events: m.events, Dropped: m.notifyDropped, Streams: m.streams, IdleEnded: m.idleEnded}
}
