package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ErrProtocol is wrapped by New's error for an OTLP protocol it does not
// speak (http/json).
var ErrProtocol = errors.New("unsupported OTLP protocol")

// Options configure New. A nil *Options means all defaults.
type Options struct {
	// ServiceName is service.name when OTEL_SERVICE_NAME (or
	// OTEL_RESOURCE_ATTRIBUTES) does not set one, e.g. "fleetgate-edge".
	ServiceName string
	// Getenv reads the environment (default os.Getenv): tests set it.
	Getenv func(string) string
	// Exporter replaces the OTLP exporter (tests: tracetest's); tracing is
	// then on whatever the environment says.
	Exporter sdktrace.SpanExporter
	// Sampler replaces the sampler the environment names (benchmarks).
	Sampler sdktrace.Sampler
	// ShutdownTimeout bounds the flush at Shutdown; default 5s.
	ShutdownTimeout time.Duration
}

// Provider is the process's tracer provider: an SDK one exporting spans,
// or a no-op one when tracing is off.
type Provider struct {
	tp      trace.TracerProvider
	sdk     *sdktrace.TracerProvider // nil when off
	timeout time.Duration
}

// Enabled reports whether getenv (nil: os.Getenv) turns tracing on.
func Enabled(getenv func(string) string) bool {
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// New makes the provider the environment asks for and installs it, with
// the W3C trace context propagator, as the process's global one
// (otel.SetTracerProvider). Nothing is exported before a span ends; the
// exporter connects lazily.
func New(ctx context.Context, o *Options) (*Provider, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 5 * time.Second
	}
	p := &Provider{tp: noop.NewTracerProvider(), timeout: opts.ShutdownTimeout}
	otel.SetTextMapPropagator(Propagator())
	if opts.Exporter == nil && !Enabled(opts.Getenv) {
		otel.SetTracerProvider(p.tp)
		return p, nil
	}
	exp := opts.Exporter
	if exp == nil {
		var err error
		if exp, err = newExporter(ctx, opts.Getenv); err != nil {
			return nil, err
		}
	}
	// Later detectors win: the environment's service name over ours.
	ropts := []resource.Option{resource.WithTelemetrySDK()}
	if opts.ServiceName != "" {
		ropts = append(ropts, resource.WithAttributes(attribute.String("service.name", opts.ServiceName)))
	}
	res, err := resource.New(ctx, append(ropts, resource.WithFromEnv())...)
	if err != nil && res == nil { // a partial resource (a malformed OTEL_RESOURCE_ATTRIBUTES) is kept
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tpo := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}
	if opts.Sampler != nil {
		tpo = append(tpo, sdktrace.WithSampler(opts.Sampler))
	}
	p.sdk = sdktrace.NewTracerProvider(tpo...)
	p.tp = p.sdk
	otel.SetTracerProvider(p.tp)
	return p, nil
}

// newExporter is the OTLP exporter of the protocol getenv names.
func newExporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error) {
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch strings.TrimSpace(proto) {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("tracing: OTEL_EXPORTER_OTLP_PROTOCOL %q: %w (want http/protobuf or grpc)", proto, ErrProtocol)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP %s exporter: %w", proto, err)
	}
	return exp, nil
}

// TracerProvider is the provider to hand to components (never nil).
func (p *Provider) TracerProvider() trace.TracerProvider { return p.tp }

// Enabled reports whether spans are recorded and exported.
func (p *Provider) Enabled() bool { return p.sdk != nil }

// Run waits for ctx to end, then shuts the provider down (flushing the
// spans not yet exported, within Options.ShutdownTimeout).
func (p *Provider) Run(ctx context.Context) error {
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.timeout)
	defer cancel()
	return p.Shutdown(sctx)
}

// Shutdown flushes the spans not yet exported and stops the exporter. It
// is a no-op when tracing is off.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p.sdk == nil {
		return nil
	}
	if err := p.sdk.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: shutdown: %w", err)
	}
	return nil
}

// ForceFlush exports the spans ended so far (tests).
func (p *Provider) ForceFlush(ctx context.Context) error {
	if p.sdk == nil {
		return nil
	}
	return p.sdk.ForceFlush(ctx)
}

// Propagator is the W3C trace context propagator (traceparent and
// tracestate).
func Propagator() propagation.TextMapPropagator { return propagation.TraceContext{} }

// Or returns tp, or the global provider when tp is nil (an Options field's
// default).
func Or(tp trace.TracerProvider) trace.TracerProvider {
	if tp == nil {
		return otel.GetTracerProvider()
	}
	return tp
}
