package tracing

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func TestEnabled(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OTEL_SERVICE_NAME": "x"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "TRUE"}, false},
	} {
		if got := Enabled(env(c.env)); got != c.want {
			t.Errorf("Enabled(%v) = %v, want %v", c.env, got, c.want)
		}
	}
}

func TestNewOff(t *testing.T) {
	p, err := New(context.Background(), &Options{Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if p.Enabled() || Active(p.TracerProvider()) {
		t.Error("tracing on without an endpoint")
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}

func TestNewProtocol(t *testing.T) {
	_, err := New(context.Background(), &Options{Getenv: env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})})
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("err = %v, want ErrProtocol", err)
	}
	defer otel.SetTracerProvider(noop.NewTracerProvider())
	for _, proto := range []string{"grpc", "http/protobuf"} {
		p, err := New(context.Background(), &Options{Getenv: env(map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": proto})})
		if err != nil {
			t.Fatalf("%s: %v", proto, err)
		}
		if !p.Enabled() || !Active(p.TracerProvider()) {
			t.Errorf("%s: tracing off", proto)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = p.Run(ctx) // nothing to flush: returns at once (the endpoint is never dialled)
	}
}

func TestRunFlushes(t *testing.T) {
	defer otel.SetTracerProvider(noop.NewTracerProvider())
	exp := &keptExporter{}
	p, err := New(context.Background(), &Options{Exporter: exp, ServiceName: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	_, sp := otel.Tracer("t").Start(context.Background(), "s") // the global one is set
	sp.End()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	spans := exp.spans
	if len(spans) != 1 || spans[0].Name() != "s" || !exp.shut {
		t.Fatalf("exported %v (shut down: %v)", spans, exp.shut)
	}
	if v, _ := spans[0].Resource().Set().Value("service.name"); v.AsString() != "svc" {
		t.Errorf("service.name %q", v.AsString())
	}
}

// keptExporter keeps what it exports past its shutdown.
type keptExporter struct {
	spans []sdktrace.ReadOnlySpan
	shut  bool
}

func (k *keptExporter) ExportSpans(_ context.Context, s []sdktrace.ReadOnlySpan) error {
	k.spans = append(k.spans, s...)
	return nil
}
func (k *keptExporter) Shutdown(context.Context) error { k.shut = true; return nil }

func tracedContext(t *testing.T) (context.Context, trace.Span) {
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tp.Tracer("t").Start(context.Background(), "s")
}

func TestTraceparentRoundTrip(t *testing.T) {
	ctx, sp := tracedContext(t)
	defer sp.End()
	tp := Traceparent(ctx)
	if len(tp) != 55 || !strings.HasPrefix(tp, "00-"+sp.SpanContext().TraceID().String()) {
		t.Fatalf("Traceparent = %q", tp)
	}
	if sc := SpanContextOf(tp); sc.SpanID() != sp.SpanContext().SpanID() || !sc.IsRemote() {
		t.Errorf("SpanContextOf = %v", sc)
	}
	for _, bad := range []string{"", "junk", "00-00000000000000000000000000000000-b7ad6b7169203331-01", strings.Repeat("0", 600)} {
		if SpanContextOf(bad).IsValid() {
			t.Errorf("SpanContextOf(%q) valid", bad)
		}
	}
	if Traceparent(context.Background()) != "" {
		t.Error("a traceparent without a span")
	}
}

func TestMeta(t *testing.T) {
	ctx, sp := tracedContext(t)
	defer sp.End()
	want := Traceparent(ctx)
	for _, c := range []struct{ in, keep string }{
		{"", ""},
		{"null", ""},
		{`{}`, ""},
		{` {"progressToken":"p"} `, "progressToken"},
		{`{"progressToken":7,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`, "progressToken"},
	} {
		out := InjectMeta(ctx, json.RawMessage(c.in))
		var m map[string]json.RawMessage
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("InjectMeta(%s) = %s: %v", c.in, out, err)
		}
		var got string
		json.Unmarshal(m["traceparent"], &got)
		if got != want {
			t.Errorf("InjectMeta(%s) traceparent %q, want %q", c.in, got, want)
		}
		if c.keep != "" && m[c.keep] == nil {
			t.Errorf("InjectMeta(%s) lost %s", c.in, c.keep)
		}
		if sc := trace.SpanContextFromContext(ExtractMeta(context.Background(), out)); sc.SpanID() != sp.SpanContext().SpanID() {
			t.Errorf("ExtractMeta(%s) = %v", out, sc)
		}
	}
	for _, in := range []string{`[1]`, `"x"`, `{"traceparent":`} {
		if out := InjectMeta(ctx, json.RawMessage(in)); string(out) != in {
			t.Errorf("InjectMeta(%s) = %s, want it untouched", in, out)
		}
	}
	if out := InjectMeta(context.Background(), json.RawMessage(`{"a":1}`)); string(out) != `{"a":1}` {
		t.Errorf("untraced InjectMeta changed meta: %s", out)
	}
}

func TestActive(t *testing.T) {
	if Active(nil) || Active(noop.NewTracerProvider()) {
		t.Error("a no-op provider is active")
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	defer tp.Shutdown(context.Background())
	if !Active(tp) {
		t.Error("an SDK provider sampling nothing still propagates: active")
	}
}
