package edge

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// BenchmarkToolCallTraced is BenchmarkToolCall with tracing off, and on
// (an SDK provider exporting to a no-op exporter through the batcher, as
// the OTLP one would) with a sampler at 0% and at 100%: the p50-ratio of
// each, against "off" of the same run, is the tracing overhead on a call.
func BenchmarkToolCallTraced(b *testing.B) {
	for _, c := range []struct {
		name    string
		sampler sdktrace.Sampler
	}{
		{"off", nil},
		{"sampled=0", sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0))},
		{"sampled=1", sdktrace.AlwaysSample()},
	} {
		b.Run(c.name, func(b *testing.B) {
			var tp trace.TracerProvider
			if c.sampler != nil {
				sdk := sdktrace.NewTracerProvider(sdktrace.WithSampler(c.sampler),
					sdktrace.WithBatcher(tracetest.NewNoopExporter()))
				b.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
				tp = sdk
			}
			f := newFleet(b)
			be := startBackend(b, "alpha", nil)
			f.healthyBackend("default", be)
			e := startEdge(b, f, &Options{TracerProvider: tp, CallTimeout: 10 * time.Second})
			via := connect(b, e.MCPURL(), "2025-11-25")
			call(b, via.cs, "alpha_echo")
			compareToolCalls(b, be, via, "alpha_echo", "edge", "2025-11-25", "2025-11-25")
		})
	}
}
