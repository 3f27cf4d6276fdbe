package calls

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/tracing"
)

// tracedForward is forward within the call's server span and, when the
// call has a Route, the backend's client span.
func (pl *Plane) tracedForward(ctx context.Context, c Call, rt Route, err error, start time.Time) backend.Reply {
	ctx = tracing.ExtractMeta(ctx, c.Meta)
	// Attributes are set on recording spans only: an unsampled call
	// costs its two span contexts and the propagation alone.
	ctx, sp := pl.tracer.Start(ctx, "tools/call "+c.Name, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start))
	defer sp.End()
	if sp.IsRecording() {
		sp.SetAttributes(pl.callAttributes(c, rt, err)...)
	}
	if err != nil {
		sp.SetStatus(codes.Error, "unavailable")
		sp.SetAttributes(tracing.AttrErrorType.String("unavailable"))
		return pl.Forward(ctx, c, rt, err, start)
	}
	if !sp.IsRecording() {
		// Unsampled: the backend span would not be sampled either (the
		// samplers are parent-based), so the call's own context goes on,
		// in the traceparent header only: params._meta is left as the
		// client sent it (a _meta member costs the backend the decoding of
		// _meta, which as much as doubles what tracing costs a call).
		return pl.Forward(ctx, c, rt, nil, start)
	}
	bctx, bsp := pl.tracer.Start(ctx, "tools/call "+rt.Tool.Original, trace.WithSpanKind(trace.SpanKindClient))
	if bsp.IsRecording() {
		bsp.SetAttributes(tracing.AttrMethod.String("tools/call"), tracing.AttrTool.String(rt.Tool.Original),
			tracing.AttrOperation.String("execute_tool"), tracing.AttrBackend.String(rt.Tool.Backend),
			tracing.AttrGeneration.Int64(int64(rt.Gen)), tracing.AttrProtocol.String(backend.Protocol),
			tracing.AttrTransport.String("tcp"), tracing.AttrProtoName.String("http"))
	}
	c.Meta = tracing.InjectMeta(bctx, c.Meta)
	reply := pl.Forward(bctx, c, rt, nil, start)
	if isErrorReply(reply) {
		for _, s := range []trace.Span{bsp, sp} {
			s.SetStatus(codes.Error, "tool error")
			s.SetAttributes(tracing.AttrErrorType.String("tool_error"))
		}
	}
	bsp.End()
	return reply
}

// callAttributes are the server span's attributes of call c by Route rt.
func (pl *Plane) callAttributes(c Call, rt Route, err error) []attribute.KeyValue {
	attrs := []attribute.KeyValue{tracing.AttrMethod.String("tools/call"), tracing.AttrTool.String(c.Name),
		tracing.AttrOperation.String("execute_tool"), tracing.AttrTransport.String("tcp"), tracing.AttrProtoName.String("http"),
		tracing.AttrGeneration.Int64(int64(rt.Gen)), tracing.AttrEdge.String(pl.o.Edge)}
	if c.Session != nil && c.Session.Kind() == session.KindSession {
		attrs = append(attrs, tracing.AttrSession.String(c.Session.ID()))
	}
	if c.Session != nil {
		if p := c.Session.ProtocolVersion(); p != "" {
			attrs = append(attrs, tracing.AttrProtocol.String(p))
		}
	}
	if err == nil {
		attrs = append(attrs, tracing.AttrBackend.String(rt.Tool.Backend))
	}
	return attrs
}

// isErrorReply reports whether reply is an isError result.
func isErrorReply(r backend.Reply) bool {
	if r.Res != nil {
		return r.Res.IsError
	}
	return r.IsError
}
