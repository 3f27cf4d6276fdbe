package spans

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/fleetgate/fleetgate/pkg/edge/planner"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/tracing"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

const tracerName = "github.com/fleetgate/fleetgate/pkg/edge"

// Tracer makes the spans of one edge.
type Tracer struct {
	t    trace.Tracer
	on   bool // it records or propagates
	edge string
}

// New returns the tracer of edge from tp (nil: the global provider).
func New(tp trace.TracerProvider, edge string) *Tracer {
	tp = tracing.Or(tp)
	return &Tracer{t: tp.Tracer(tracerName), on: tracing.Active(tp), edge: edge}
}

// On reports whether spans are made (the provider records or propagates).
func (t *Tracer) On() bool { return t.on }

// Calls is the tracer of the call plane: nil when tracing is off.
func (t *Tracer) Calls() trace.Tracer {
	if !t.on {
		return nil
	}
	return t.t
}

// Batch is the span of one resync batch, made when the batch ends; nil
// when tracing is off.
type Batch struct {
	t        *Tracer
	start    time.Time
	sessions int // reached; -1: the view did not change
}

// StartBatch starts the span of a resync batch; nil when tracing is off.
func (t *Tracer) StartBatch() *Batch {
	if !t.on {
		return nil
	}
	return &Batch{t: t, start: time.Now(), sessions: -1}
}

// Reached notes the sessions the batch's change reached.
func (b *Batch) Reached(n int) {
	if b != nil {
		b.sessions = n
	}
}

// End makes the span of the batch that applied generation gen, after
// resync confirmed it: traced are the events the batch applied that
// carried a trace context (planner.Ready.Traced); the first is its
// parent, the others its links. An event noted after its state was
// applied (planner.Ready.Late) is a span of its own (Tracer.Late).
func (b *Batch) End(gen uint64, traced []planner.Event) {
	if b == nil || len(traced) == 0 {
		return
	}
	links := make([]trace.Link, 0, min(len(traced)-1, maxLinks))
	for _, ev := range traced[1:min(len(traced), maxLinks+1)] {
		links = append(links, trace.Link{SpanContext: ev.Trace, Attributes: []attribute.KeyValue{tracing.AttrEventGen.Int64(int64(ev.Generation))}})
	}
	b.t.Applied(traced[0].Trace, links, gen, b.start, b.sessions)
}

// maxLinks bounds the links of a batch's span to the events after its
// parent (the OpenTelemetry SDK's default limit of links per span).
const maxLinks = 128

// Late makes the span of each event whose state was applied before the
// event was noted (planner.Ready.Late): its application is over.
func (t *Tracer) Late(evs []planner.Event) {
	for _, ev := range evs {
		t.Applied(ev.Trace, nil, ev.Generation, time.Now(), -1)
	}
}

// EventTrace is the trace context event ev carried (not valid: none).
func EventTrace(ev *eventspb.Event) trace.SpanContext {
	return tracing.SpanContextOf(ev.GetTraceparent())
}

// Applied records the application of generation gen (caused by parent)
// as a span from start to now.
func (t *Tracer) Applied(parent trace.SpanContext, links []trace.Link, gen uint64, start time.Time, sessions int) {
	attrs := []attribute.KeyValue{tracing.AttrEventGen.Int64(int64(gen)), tracing.AttrEdge.String(t.edge), tracing.AttrGeneration.Int64(int64(gen))}
	if sessions >= 0 {
		attrs = append(attrs, tracing.AttrSessions.Int(sessions))
	}
	_, sp := t.t.Start(trace.ContextWithRemoteSpanContext(context.Background(), parent), "fleetgate.apply",
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithLinks(links...), trace.WithTimestamp(start),
		trace.WithAttributes(attrs...))
	sp.End()
}

// Request starts the server span of an MCP request other than tools/call
// (which the call plane spans) that the go-sdk server hands to the
// session's middleware: initialize, the lists, prompts/get,
// resources/read, completion/complete, subscriptions and the rest. The
// go-sdk client calls to backends made under it (prompts, resources,
// completions) carry its context in their traceparent header. end records
// the request's error, if any, and ends the span.
func (t *Tracer) Request(ctx context.Context, s *session.Session, method string, req interface{ GetExtra() *mcp.RequestExtra }) (context.Context, func(error)) {
	if x := req.GetExtra(); x != nil && x.Header != nil {
		ctx = tracing.Propagator().Extract(ctx, propagation.HeaderCarrier(x.Header))
	}
	ctx, sp := t.t.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer))
	if sp.IsRecording() {
		attrs := []attribute.KeyValue{tracing.AttrMethod.String(method), tracing.AttrTransport.String("tcp"), tracing.AttrProtoName.String("http"),
			tracing.AttrEdge.String(t.edge)}
		if s.Kind() == session.KindSession {
			attrs = append(attrs, tracing.AttrSession.String(s.ID()))
		}
		if p := s.ProtocolVersion(); p != "" {
			attrs = append(attrs, tracing.AttrProtocol.String(p))
		}
		if sv := s.Served(); sv != nil {
			attrs = append(attrs, tracing.AttrGeneration.Int64(int64(sv.Gen)))
		}
		sp.SetAttributes(attrs...)
	}
	return ctx, func(err error) {
		if err != nil {
			sp.SetStatus(codes.Error, "error")
			sp.SetAttributes(tracing.AttrErrorType.String("jsonrpc_error"))
		}
		sp.End()
	}
}
