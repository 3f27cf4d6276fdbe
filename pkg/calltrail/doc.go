// Package calltrail is the tool-call audit trail: every tools/call through
// an edge becomes an [Entry] on a JetStream stream, without slowing the
// call path.
//
//	trail, err := calltrail.Open(ctx, js, &calltrail.Options{Registerer: reg, Logger: &log})
//	if err != nil { ... }
//	go func() { _ = trail.Run(runCtx) }() // cancel runCtx at shutdown; Run drains, then returns
//
//	// in the tools/call path, after the call ended:
//	trail.Record(calltrail.Entry{Group: g, SessionID: sid, Tool: exposed, BackendTool: name,
//		Backend: backend, Generation: gen, Latency: d, Outcome: calltrail.OutcomeOK})
//
// # Storage
//
// Entries are JSON (snake_case keys) on the subject <SubjectPrefix>.<group>
// (default fleetgate.calls.<group>) of their own stream (default
// FLEETGATE_CALLS, subjects <SubjectPrefix>.>), with limits retention:
// oldest entries are discarded past MaxAge (default 7 days) or MaxBytes
// (default 1 GiB). Replicas is a deployment setting (1 on a single node, 3 on
// a cluster). Read the trail with any consumer, e.g.
// `nats stream view FLEETGATE_CALLS` or an ordered consumer filtered on one
// group's subject.
//
// # The call path never waits
//
// [Trail.Record] puts the entry on a bounded queue (QueueSize, default 4096)
// with a non-blocking send; when the queue is full the entry is dropped and
// counted in fleetgate_calltrail_dropped_total{reason="queue_full"}. It
// does not allocate. Arguments are dropped in Record unless
// IncludeArguments is set, so by default they never leave the call path.
//
// [Trail.Run] is the only consumer. It publishes with js.PublishAsync, in
// queue order. After a publish it lets entries gather for Linger (default
// 5ms) and then publishes them together, so that Record wakes it once per
// Linger rather than once per call. It keeps at most Window (default 256) publishes awaiting
// their acknowledgement; when the window is full it waits for the oldest
// before taking the next entry, and the queue absorbs the difference. A
// publish that fails, or is not acknowledged within AckTimeout, is counted
// (reason "publish_error") and not retried: the trail is best-effort
// evidence, not a transaction log, and a retry without deduplication could
// store an entry twice. Run starts no goroutines.
//
// On cancellation Run drains: it keeps publishing until the queue and the
// window are empty, for at most DrainTimeout (default 5s); what is left then
// is counted (reason "shutdown") and Run returns [ErrDrainIncomplete].
//
// Give js an ack timeout (jetstream.WithPublishAsyncTimeout) if it is
// shared: Run stops waiting for an acknowledgement after AckTimeout, but the
// jetstream client keeps its own record of the publish until it resolves.
//
// # Metrics
//
// fleetgate_calltrail_dropped_total{reason}, fleetgate_calltrail_published_total
// and fleetgate_calltrail_queue_depth; [Trail.Stats] gives the same counts.
package calltrail
