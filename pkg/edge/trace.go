package edge

import (
	"context"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/session"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/tracing"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// Tracing (Options.TracerProvider, package tracing). With tracing off
// (e.traced false) none of this runs: the call path is the untraced one.
//
// A tools/call is a server span "tools/call <tool>" whose parent is the
// trace context the client sent in params._meta (or, failing that, in
// the HTTP request's traceparent header); the backend call under it is a
// client span "tools/call <tool's own name>" whose context goes to the
// backend in the request's traceparent header and in params._meta. The
// attributes follow the OpenTelemetry conventions for MCP (mcp.*,
// gen_ai.*), plus fleetgate.backend and fleetgate.view.generation.

const tracerName = "github.com/fleetgate/fleetgate/pkg/edge"

// setTracing sets the edge's tracer from tp (nil: the global provider).
func (e *Edge) setTracing(tp trace.TracerProvider) {
	tp = tracing.Or(tp)
	e.traced = tracing.Active(tp)
	e.tracer = tp.Tracer(tracerName)
}

// applyTrace is the span of one resync batch, made when the batch ends:
// a child of the oldest traced event it applied, linked to the others
// (package tracing's doc says why). nil when tracing is off.
type applyTrace struct {
	e        *Edge
	start    time.Time
	sessions int // reached; -1: the view did not change
}

func (e *Edge) startApply() *applyTrace {
	if !e.traced {
		return nil
	}
	return &applyTrace{e: e, start: time.Now(), sessions: -1}
}

func (a *applyTrace) reached(n int) {
	if a != nil {
		a.sessions = n
	}
}

// end makes the span of the batch that applied generation gen, after
// resync confirmed it: a trace context the reader notes after that (it
// tells of an event after the state holding it) is made into a span of
// its own by noteEventTrace.
func (a *applyTrace) end(st *events.State) {
	if a == nil {
		return
	}
	gen := st.Generation
	e := a.e
	e.evMu.Lock()
	var parent trace.SpanContext
	var links []trace.Link
	n := 0
	for _, et := range e.evTraces {
		if !reflects(gen, st.Regions, et.region, et.gen) {
			e.evTraces[n] = et
			n++
			continue
		}
		if !parent.IsValid() {
			parent = et.sc
		} else {
			links = append(links, trace.Link{SpanContext: et.sc, Attributes: []attribute.KeyValue{tracing.AttrEventGen.Int64(int64(et.gen))}})
		}
	}
	e.evTraces = e.evTraces[:n]
	e.evMu.Unlock()
	if parent.IsValid() {
		e.applied(parent, links, gen, a.start, a.sessions)
	}
}

// applied records the application of generation gen (caused by parent)
// as a span from start to now.
func (e *Edge) applied(parent trace.SpanContext, links []trace.Link, gen uint64, start time.Time, sessions int) {
	attrs := []attribute.KeyValue{tracing.AttrEventGen.Int64(int64(gen)), tracing.AttrEdge.String(e.opts.ID), tracing.AttrGeneration.Int64(int64(gen))}
	if sessions >= 0 {
		attrs = append(attrs, tracing.AttrSessions.Int(sessions))
	}
	_, sp := e.tracer.Start(trace.ContextWithRemoteSpanContext(context.Background(), parent), "fleetgate.apply",
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

// noteEventTrace keeps the trace context event ev carries for the batch
// that applies it (evMu held).
// An event whose generation a batch has confirmed already (the reader
// tells of an event after it published the state holding it) is made
// into its application's span at once.
func (e *Edge) noteEventTrace(r string, ev *eventspb.Event) {
	sc := tracing.SpanContextOf(ev.GetTraceparent())
	switch gen := ev.GetGeneration(); {
	case !sc.IsValid():
	case e.confirmedReflects(r, gen):
		e.applied(sc, nil, gen, time.Now(), -1)
	case len(e.evTraces) < maxEventTraces:
		e.evTraces = append(e.evTraces, eventTrace{region: r, gen: gen, sc: sc})
	}
}

// traceRequest starts the server span of an MCP request other than
// tools/call (which tracedForward spans) that the go-sdk server hands to
// the session's middleware: initialize, the lists, prompts/get,
// resources/read, completion/complete, subscriptions and the rest. The
// go-sdk client calls to backends made under it (prompts, resources,
// completions) carry its context in their traceparent header. end records
// the request's error, if any, and ends the span.
func (e *Edge) traceRequest(ctx context.Context, s *session.Session, method string, req interface{ GetExtra() *mcp.RequestExtra }) (context.Context, func(error)) {
	if x := req.GetExtra(); x != nil && x.Header != nil {
		ctx = tracing.Propagator().Extract(ctx, propagation.HeaderCarrier(x.Header))
	}
	ctx, sp := e.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer))
	if sp.IsRecording() {
		attrs := []attribute.KeyValue{tracing.AttrMethod.String(method), tracing.AttrTransport.String("tcp"), tracing.AttrProtoName.String("http"),
			tracing.AttrEdge.String(e.opts.ID)}
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
