package events

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/fleetgate/fleetgate/pkg/tracing"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// Each event the relay publishes is a span "fleetgate.publish" (producer
// kind), a child of the cause the event carries (Event.traceparent: the
// probe whose result changed a backend's health), with the generation it
// was stored as.

const tracerName = "github.com/fleetgate/fleetgate/pkg/events"

func (r *Relay) setTracing(tp trace.TracerProvider) {
	tp = tracing.Or(tp)
	r.traced = tracing.Active(tp)
	r.tracer = tp.Tracer(tracerName)
}

// publishSpan starts the span of ev's publication.
func (r *Relay) publishSpan(ev *eventspb.Event) trace.Span {
	_, sp := r.tracer.Start(tracing.ContextFrom(context.Background(), ev.GetTraceparent()), "fleetgate.publish",
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("fleetgate.event.kind", Kind(ev)),
			attribute.String("fleetgate.group", ev.GetGroup()), attribute.String("fleetgate.backend", ev.GetBackend()),
			attribute.String("messaging.system", "nats"), attribute.String("messaging.operation.type", "publish")))
	return sp
}

// endPublish ends a publication's span with the generation the event was
// stored as (0: not stored) and the failure.
func endPublish(sp trace.Span, gen uint64, err error) {
	if gen != 0 {
		sp.SetAttributes(attribute.Int64("fleetgate.generation", int64(gen)))
	}
	if err != nil {
		sp.SetStatus(codes.Error, "publish failed")
		sp.SetAttributes(attribute.String("error.type", "publish"))
	}
	sp.End()
}
