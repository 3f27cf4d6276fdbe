package spans

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fleetgate/fleetgate/pkg/edge/planner"
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

// TestBatchSpan: a batch's span is a child of the first traced event it
// applied, linked to the others; a late event is a span at once; an
// event without a trace context has none.
func TestBatchSpan(t *testing.T) {
	tr, exp := traced(t)
	e1, sc1 := event(t, tr, 1)
	e2, sc2 := event(t, tr, 2)
	if EventTrace(&eventspb.Event{Generation: 4}).IsValid() {
		t.Fatal("an event without a trace context has one")
	}
	exp.Reset()

	b := tr.StartBatch()
	b.Reached(7)
	b.End(2, []planner.Event{{Generation: 1, Trace: EventTrace(e1)}, {Generation: 2, Trace: EventTrace(e2)}})
	got := exp.GetSpans()
	if len(got) != 1 || got[0].Name != "fleetgate.apply" || got[0].Parent.SpanID() != sc1.SpanID() {
		t.Fatalf("spans %+v, want one fleetgate.apply child of the first event", got)
	}
	if l := got[0].Links; len(l) != 1 || l[0].SpanContext.SpanID() != sc2.SpanID() {
		t.Fatalf("links %+v, want the second event", l)
	}
	exp.Reset()
	many := make([]planner.Event, 500)
	for i := range many {
		many[i] = planner.Event{Generation: 3, Trace: EventTrace(e1)}
	}
	tr.StartBatch().End(3, many)
	if got := exp.GetSpans(); len(got) != 1 || len(got[0].Links) != maxLinks {
		t.Fatalf("a batch of 500 traced events: %d spans", len(got))
	}
	exp.Reset()
	tr.StartBatch().End(3, nil)
	if got := exp.GetSpans(); len(got) != 0 {
		t.Fatalf("a batch of no traced event: spans %+v", got)
	}

	e5, sc5 := event(t, tr, 5)
	exp.Reset()
	tr.Late([]planner.Event{{Generation: 5, Trace: EventTrace(e5)}})
	if got := exp.GetSpans(); len(got) != 1 || got[0].Parent.SpanID() != sc5.SpanID() {
		t.Fatalf("late event: spans %+v, want its application at once", got)
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
	b.End(1, []planner.Event{{Generation: 1}}) // a nil batch ends nothing
}
