// Package events is fleetgate's durable, generation-numbered event log.
//
// Every change the controller observes (a backend added or removed, an
// advertisability flip, a catalog change, a new tool policy) becomes one
// Event on a JetStream
// stream. The stream sequence is the generation: the single Writer sets the
// event's generation to the expected next sequence and publishes with an
// expected-last-sequence check, so a stale or second writer fails with
// ErrFenced and publishes nothing, and a Nats-Msg-Id makes retries
// idempotent.
//
// The controller drives the write side through a Pebble Outbox: Append syncs
// events to disk, a Relay moves them to the stream in order and exactly
// once, keeps the folded State of what it published, and snapshots it into a
// KV bucket.
//
//	log, _ := events.OpenLog(ctx, js, &events.LogOptions{Replicas: 1})
//	outbox, _ := events.OpenOutbox(dir, nil)
//	writer, _ := events.NewWriter(ctx, log, controllerID)
//	relay := events.NewRelay(outbox, writer, nil)
//	go relay.Run(ctx) // returns on ctx end, or with ErrFenced
//	outbox.Append(events.NewHealthChanged(now, "default", "alpha", "healthy", "unknown", false, "ping: EOF"))
//
// Consumers (edges, standby controllers) follow the log with a Reader: it
// loads the latest snapshot, follows the stream with an ordered consumer,
// keeps an immutable State current, and says when it has caught up:
//
//	log, _ := events.AttachLog(ctx, js, nil)
//	r := events.NewReader(log, nil)
//	go r.Run(ctx)
//	changed, stop := r.Watch()
//	defer stop()
//	for range changed {
//		s := r.State() // level-based: act on the current state
//		...
//	}
//
// The tool policy is part of the state: a policy_changed event (no group,
// no backend) carries the authorization section, State.Authorization holds
// it with the generation it took effect at, and State.Policy returns it
// compiled (once per policy generation, shared by every later State).
//
// Naming is part of the state too: a naming_changed event (a group, no
// backend) carries what decides the group's exposed names (package naming:
// separator, conflict strategy, the backends in config order with their
// include, exclude and rename rules); Group.Naming holds it with its
// generation, so a replay to any generation gives the names in force
// there. A group with a naming stays in the state without backends; a
// naming_changed without a spec forgets it.
//
// The fold, Apply, is a pure function: an event at or below the state's
// generation is a no-op, so redelivery is harmless. Log.Replay rebuilds the
// state at any generation for audits.
package events
