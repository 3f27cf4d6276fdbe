package tracing

import (
	"context"
	"encoding/json"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// FuzzMeta: whatever _meta a client sends, ExtractMeta does not panic and
// InjectMeta returns valid JSON (or the input untouched).
func FuzzMeta(f *testing.F) {
	f.Add([]byte(`{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"a=b"}`))
	f.Add([]byte(`{"progressToken":1}`))
	f.Add([]byte(`{"traceparent":"ff-zz"}`))
	f.Add([]byte(`[`))
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	ctx, sp := tp.Tracer("f").Start(context.Background(), "s")
	defer sp.End()
	f.Fuzz(func(t *testing.T, meta []byte) {
		_ = ExtractMeta(context.Background(), meta)
		_ = SpanContextOf(string(meta))
		out := InjectMeta(ctx, meta)
		if !json.Valid(out) && string(out) != string(meta) {
			t.Fatalf("InjectMeta(%q) = %q", meta, out)
		}
	})
}
