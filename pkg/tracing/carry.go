package tracing

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// MaxMeta bounds the _meta object InjectMeta and ExtractMeta read; a
// larger one is passed on untouched and yields no trace context.
const MaxMeta = 64 << 10

// maxValue bounds a traceparent or tracestate value read from a hostile
// carrier: a traceparent is 55 characters; a longer tracestate is dropped
// (W3C lets a propagator cut it; 512 is what vendors are asked to keep).
const maxValue = 512

// Active reports whether tp records or propagates spans: false for a
// no-op provider (and the global one before a provider is set), true for
// an SDK provider, whatever its sampler. Components compute it once and
// skip their tracing work entirely when it is false. A provider of
// another kind is asked for one span (which it may export).
func Active(tp trace.TracerProvider) bool {
	switch tp.(type) {
	case nil, noop.TracerProvider, *noop.TracerProvider:
		return false
	case *sdktrace.TracerProvider:
		return true
	}
	_, sp := tp.Tracer("github.com/fleetgate/fleetgate/pkg/tracing").Start(context.Background(), "active")
	defer sp.End()
	return sp.SpanContext().IsValid()
}

// boundedCarrier is a MapCarrier that ignores oversized values.
type boundedCarrier map[string]string

func (c boundedCarrier) Get(k string) string {
	if v := c[k]; len(v) <= maxValue {
		return v
	}
	return ""
}
func (c boundedCarrier) Set(k, v string) { c[k] = v }
func (c boundedCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// Traceparent is the W3C traceparent of ctx's span ("" when ctx has none):
// what an event carries of the probe that caused it.
func Traceparent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := boundedCarrier{}
	Propagator().Inject(ctx, c)
	return c["traceparent"]
}

// ContextFrom returns ctx with the remote span context of traceparent, as
// Traceparent wrote it; ctx unchanged when traceparent is empty or not a
// valid W3C value.
func ContextFrom(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" || len(traceparent) > maxValue {
		return ctx
	}
	return Propagator().Extract(ctx, boundedCarrier{"traceparent": traceparent})
}

// SpanContextOf is the remote span context traceparent names (invalid
// when it names none).
func SpanContextOf(traceparent string) trace.SpanContext {
	return trace.SpanContextFromContext(ContextFrom(context.Background(), traceparent))
}

// Inject sets the traceparent and tracestate headers of ctx's span on h.
func Inject(ctx context.Context, h propagation.TextMapCarrier) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		Propagator().Inject(ctx, h)
	}
}

// ExtractMeta returns ctx with the trace context an MCP request carries
// in params._meta (the keys traceparent and tracestate, as SEP-414 and
// the OpenTelemetry MCP conventions place them); ctx unchanged when meta
// has none, is not an object, or is over MaxMeta.
func ExtractMeta(ctx context.Context, meta json.RawMessage) context.Context {
	if len(meta) == 0 || len(meta) > MaxMeta || !bytes.Contains(meta, []byte(`"traceparent"`)) {
		return ctx
	}
	var m struct {
		Traceparent string `json:"traceparent"`
		Tracestate  string `json:"tracestate"`
	}
	if json.Unmarshal(meta, &m) != nil || m.Traceparent == "" {
		return ctx
	}
	return Propagator().Extract(ctx, boundedCarrier{"traceparent": m.Traceparent, "tracestate": m.Tracestate})
}

// InjectMeta returns meta (a request's params._meta, nil for none) with
// the traceparent and tracestate of ctx's span set, replacing those it
// had: the span is the receiver's parent now. meta is returned unchanged
// when ctx has no span, and when it is not a JSON object or is over
// MaxMeta (it is then the receiver's to refuse, as it was sent).
func InjectMeta(ctx context.Context, meta json.RawMessage) json.RawMessage {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return meta
	}
	t := bytes.TrimSpace(meta)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		t = []byte("{}")
	}
	if len(t) > MaxMeta || t[0] != '{' {
		return meta
	}
	ts := sc.TraceState().String()
	if !bytes.Contains(t, []byte(`"trace`)) && json.Valid(t) {
		// The common case, without decoding: the members go first.
		rest := bytes.TrimSpace(t[1:])
		b := make([]byte, 0, len(t)+96+len(ts))
		b = append(b, `{"traceparent":"`...)
		b = AppendTraceparent(b, sc)
		b = append(b, '"')
		if ts != "" {
			b = append(b, `,"tracestate":`...)
			q, _ := json.Marshal(ts) // a string always encodes
			b = append(b, q...)
		}
		if len(rest) > 0 && rest[0] != '}' {
			b = append(b, ',')
		}
		return append(b, rest...)
	}
	m := map[string]json.RawMessage{}
	if json.Unmarshal(t, &m) != nil {
		return meta
	}
	delete(m, "tracestate")
	m["traceparent"], _ = json.Marshal(string(AppendTraceparent(nil, sc)))
	if ts != "" {
		m["tracestate"], _ = json.Marshal(ts)
	}
	out, err := json.Marshal(m)
	if err != nil {
		return meta
	}
	return out
}

// AppendTraceparent appends the W3C traceparent of sc (version 00) to b.
func AppendTraceparent(b []byte, sc trace.SpanContext) []byte {
	tid, sid := sc.TraceID(), sc.SpanID()
	b = append(b, "00-"...)
	b = hex.AppendEncode(b, tid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, sid[:])
	b = append(b, '-')
	return hex.AppendEncode(b, []byte{byte(sc.TraceFlags() & trace.FlagsSampled)})
}
