package spans

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fleetgate/fleetgate/pkg/tracing"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// traced is a Tracer recording into an in-memory exporter.
func traced(t *testing.T) (*Tracer, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	return New(tp, "edge-1"), exp
}

// event is an event of generation gen carrying the trace context of a
// span of its own.
func event(t *testing.T, tr *Tracer, gen uint64) (*eventspb.Event, trace.SpanContext) {
	t.Helper()
	ctx, sp := tr.t.Start(t.Context(), "publish")
	sp.End()
	return &eventspb.Event{Generation: gen, Time: timestamppb.Now(), Traceparent: tracing.Traceparent(ctx)}, sp.SpanContext()
}

// TestBatchSpan: a batch's span is a child of the oldest traced event it
// applied, linked to the others; events it did not apply wait for the
// next batch, and an event already confirmed is a span at once.
func TestBatchSpan(t *testing.T) {
	tr, exp := traced(t)
	var es Events
	never := func(string, uint64) bool { return false }
	e1, sc1 := event(t, tr, 1)
	e2, sc2 := event(t, tr, 2)
	e3, sc3 := event(t, tr, 3)
	for _, ev := range []*eventspb.Event{e1, e2, e3} {
		es.Note(tr, "", ev, never)
	}
	es.Note(tr, "", &eventspb.Event{Generation: 4}, never) // no trace context: nothing kept
	exp.Reset()

	b := tr.StartBatch()
	b.Reached(7)
	b.End(2, func() (trace.SpanContext, []trace.Link) {
		return es.Take(func(_ string, g uint64) bool { return g <= 2 })
	})
	got := exp.GetSpans()
	if len(got) != 1 || got[0].Name != "fleetgate.apply" || got[0].Parent.SpanID() != sc1.SpanID() {
		t.Fatalf("spans %+v, want one fleetgate.apply child of the first event", got)
	}
	if l := got[0].Links; len(l) != 1 || l[0].SpanContext.SpanID() != sc2.SpanID() {
		t.Fatalf("links %+v, want the second event", l)
	}
	parent, links := es.Take(func(string, uint64) bool { return true })
	if parent.SpanID() != sc3.SpanID() || len(links) != 0 {
		t.Fatalf("left %v %v, want only the third event", parent, links)
	}

	exp.Reset()
	e5, sc5 := event(t, tr, 5)
	exp.Reset()
	es.Note(tr, "", e5, func(string, uint64) bool { return true })
	if got := exp.GetSpans(); len(got) != 1 || got[0].Parent.SpanID() != sc5.SpanID() {
		t.Fatalf("confirmed event: spans %+v, want its application at once", got)
	}
	if parent, _ := es.Take(func(string, uint64) bool { return true }); parent.IsValid() {
		t.Fatal("a confirmed event was kept")
	}
}

// TestEventsBounded: at most maxEventTraces trace contexts wait.
func TestEventsBounded(t *testing.T) {
	tr, _ := traced(t)
	var es Events
	ev, _ := event(t, tr, 1)
	for range maxEventTraces + 10 {
		es.Note(tr, "", ev, func(string, uint64) bool { return false })
	}
	if len(es.list) != maxEventTraces {
		t.Fatalf("%d kept, want %d", len(es.list), maxEventTraces)
	}
}

// TestUntraced: without a recording provider no batch is made and the
// call plane gets no tracer.
func TestUntraced(t *testing.T) {
	tr := New(noop.NewTracerProvider(), "edge-1")
	if tr.On() || tr.StartBatch() != nil || tr.Calls() != nil {
		t.Fatal("an untraced tracer makes spans")
	}
	var b *Batch
	b.Reached(1)
	b.End(1, func() (trace.SpanContext, []trace.Link) {
		t.Fatal("a nil batch took events")
		return trace.SpanContext{}, nil
	})
}
