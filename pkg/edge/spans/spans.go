package spans

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

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
// resync confirmed it: take removes the trace contexts of the events the
// batch applied and returns its parent (the oldest) and links (the
// others). A trace context the reader notes after that (it tells of an
// event after the state holding it) is made into a span of its own by
// Events.Note.
func (b *Batch) End(gen uint64, take func() (trace.SpanContext, []trace.Link)) {
	if b == nil {
		return
	}
	if parent, links := take(); parent.IsValid() {
		b.t.Applied(parent, links, gen, b.start, b.sessions)
	}
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

// eventTrace is the trace context an event of the group carried.
type eventTrace struct {
	region string // "" on a single log
	gen    uint64
	sc     trace.SpanContext
}

// maxEventTraces bounds the trace contexts kept between two batches.
const maxEventTraces = 1024

// Events are the trace contexts of events no batch applied yet. The
// caller serialises its calls.
type Events struct{ list []eventTrace }

// Note keeps the trace context event ev (of region r's log; "" on one
// log) carries for the batch that applies it. An event whose generation
// a batch has confirmed already (confirmed reports it) is made into its
// application's span at once.
func (es *Events) Note(t *Tracer, r string, ev *eventspb.Event, confirmed func(r string, gen uint64) bool) {
	sc := tracing.SpanContextOf(ev.GetTraceparent())
	switch gen := ev.GetGeneration(); {
	case !sc.IsValid():
	case confirmed(r, gen):
		t.Applied(sc, nil, gen, time.Now(), -1)
	case len(es.list) < maxEventTraces:
		es.list = append(es.list, eventTrace{region: r, gen: gen, sc: sc})
	}
}

// Take removes the trace contexts of the events applied reports as
// applied and returns the oldest one's as parent, the others as links.
func (es *Events) Take(applied func(r string, gen uint64) bool) (parent trace.SpanContext, links []trace.Link) {
	n := 0
	for _, et := range es.list {
		if !applied(et.region, et.gen) {
			es.list[n] = et
			n++
			continue
		}
		if !parent.IsValid() {
			parent = et.sc
		} else {
			links = append(links, trace.Link{SpanContext: et.sc, Attributes: []attribute.KeyValue{tracing.AttrEventGen.Int64(int64(et.gen))}})
		}
	}
	es.list = es.list[:n]
	return parent, links
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
