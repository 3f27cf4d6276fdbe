// Package tracing sets up OpenTelemetry tracing for fleetgate's
// processes from the standard OTEL_* environment variables, and holds the
// few conventions the controller and the edges share: the W3C trace
// context propagator, the trace context carried by an event
// (Traceparent, ContextFrom) and the one carried in an MCP request's
// params._meta (InjectMeta).
//
// # Configuration
//
// Tracing is on when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set and OTEL_SDK_DISABLED is not
// "true"; otherwise New returns a provider whose tracers are no-ops, and
// nothing is started, exported or allocated per span. The exporter is
// OTLP over HTTP/protobuf, or gRPC when OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
// (or OTEL_EXPORTER_OTLP_PROTOCOL) is "grpc"; the exporters read their
// other variables themselves (headers, timeout, compression, TLS). The SDK
// reads OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (default
// parentbased_always_on), OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
//
// # From a probe to the sessions it reached
//
// A probe whose result changes a backend's health is the cause of the
// health event the controller publishes, and of that event's application
// on every edge. The probe's span context is carried in the event itself
// (Event.traceparent, written with Traceparent): the controller's
// publication span and each edge's application span are children of the
// probe span, so one trace holds the failure, the generation it was
// published as, and its application on each edge with the number of
// sessions it reached (all three carry fleetgate.generation).
//
// Parents rather than links: the publication and the applications are
// caused by the probe alone and happen once per event, which is what a
// parent says, and a trace viewer shows a parent's children in one trace
// while it shows a link only as a reference to follow. An edge applies
// events in batches, though: a batch that folds several traced events has
// the oldest one as its parent and links to the others, so no cause is
// lost and no span has two parents.
package tracing
