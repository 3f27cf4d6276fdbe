package backend

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/fleetgate/fleetgate/pkg/tracing"
)

// Protocol is the protocol version of the pooled backend sessions (the
// backend spans' mcp.protocol.version).
const Protocol = backendProtocol

// traced reports whether ctx carries a span context to send to the
// backend (the edge's backend call span; never set with tracing off).
func traced(ctx context.Context) bool { return trace.SpanContextFromContext(ctx).IsValid() }

// traceTransport sets the W3C traceparent and tracestate headers of the
// request context's span on the go-sdk client's requests.
type traceTransport struct{ rt http.RoundTripper }

func (t traceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if traced(req.Context()) {
		req = req.Clone(req.Context()) // a RoundTripper may not modify the request
		tracing.Inject(req.Context(), propagation.HeaderCarrier(req.Header))
	}
	return t.rt.RoundTrip(req)
}

// CloseIdleConnections passes on to the transport wrapped.
func (t traceTransport) CloseIdleConnections() {
	if c, ok := t.rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// spanOnly is a background context with parent's span context, if any:
// a detached request keeps the call's trace.
func spanOnly(parent context.Context) context.Context {
	if sc := trace.SpanContextFromContext(parent); sc.IsValid() {
		return trace.ContextWithSpanContext(context.Background(), sc)
	}
	return context.Background()
}

// traceSID is the sid argument of h1.Transport.Post for a call in ctx:
// sid itself untraced; traced, sid followed by the traceparent (and
// tracestate) header lines. Post writes its sid argument as the value of
// the request's Mcp-Session-Id line, so the lines follow it as lines of
// their own, without a cached post target per trace context. sid is
// printable ASCII (post checks it), the traceparent is hex written here,
// and a tracestate that is not printable ASCII is left out: no value can
// end a line early.
func traceSID(ctx context.Context, sid string) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return sid
	}
	ts := sc.TraceState().String()
	b := make([]byte, 0, len(sid)+72+len(ts))
	b = append(b, sid...)
	b = append(b, "\r\nTraceparent: "...)
	b = tracing.AppendTraceparent(b, sc)
	if ts != "" && printable(ts) {
		b = append(b, "\r\nTracestate: "...)
		b = append(b, ts...)
	}
	return string(b)
}

// printable reports whether s is printable ASCII, spaces included.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
