package prober

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/fleetgate/fleetgate/pkg/tracing"
)

// Each probe result is a span "ping" (client kind) from the probe's start
// to its report, with the backend and the result; its trace context rides
// on the observation (health.Observation.Traceparent) into the health
// event it causes, whose publication and application are its children.

const tracerName = "github.com/fleetgate/fleetgate/pkg/prober"

func (p *Prober) setTracing(tp trace.TracerProvider) {
	tp = tracing.Or(tp)
	p.traced = tracing.Active(tp)
	p.tracer = tp.Tracer(tracerName)
}

// traceResult records one probe result as a span ended at at and returns
// its traceparent ("" when it is not sampled nor propagated).
func (p *Prober) traceResult(result string, latency time.Duration, reason string, at time.Time) string {
	_, sp := p.tracer.Start(context.Background(), "ping", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(at.Add(-latency)),
		trace.WithAttributes(attribute.String("mcp.method.name", "ping"),
			attribute.String("fleetgate.group", p.target.Group), attribute.String("fleetgate.backend", p.target.Name),
			attribute.String("fleetgate.probe.result", result)))
	if result != resultOK {
		// reason is the prober's own classification (never a backend's
		// body or a credential).
		sp.SetStatus(codes.Error, reason)
		sp.SetAttributes(attribute.String("error.type", result))
	}
	sp.End(trace.WithTimestamp(at))
	return tracing.Traceparent(trace.ContextWithSpan(context.Background(), sp))
}
