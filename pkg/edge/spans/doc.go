// Package spans makes the edge's own OpenTelemetry spans (package tracing
// holds the conventions and installs the provider; the call plane makes
// the spans of tools/call, package calls). With tracing off none of this
// runs: Tracer.On is false, StartBatch returns nil and the edge takes its
// untraced paths.
//
// A request other than tools/call that a session server hands to the
// edge's middleware (initialize, the lists, prompts/get, resources/read,
// completion/complete, subscriptions and the rest) is a server span named
// for its method (Tracer.Request), a child of the trace context of the
// request's traceparent header.
//
// A resync batch is a span "fleetgate.apply" made when the batch ends: a
// child of the oldest traced event it applied, linked to the others
// (package tracing's doc says why). The trace contexts events carry wait
// in Events until the batch that applies them; an event the edge had
// applied already when it was read is a span of its own at once.
//
//	t := spans.New(provider, "edge-1")
//	b := t.StartBatch()           // nil untraced
//	defer b.End(gen, takeApplied) // the traced events the batch applied
package spans
