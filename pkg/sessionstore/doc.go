// Package sessionstore is the shared store of MCP session records that lets
// any fleetgate edge serve a session another edge created.
//
// A Record holds what an edge needs to rebuild a session without the
// client's initialize: the owner (OwnerHash of the authenticated identity),
// group, mode, the initialize params verbatim, the negotiated protocol
// version and listChanged capability, the applied generation and registry
// digest, the edge that last served it, and the session's convergence
// evidence. Records live in a JetStream KV bucket, one key per session id,
// at most RecordLimit of the bucket's size (MaxRecordSize) each.
//
//	store, err := sessionstore.Open(ctx, js, &sessionstore.Options{Replicas: 3})
//
//	// initialize, on the edge that accepted it:
//	rev, err := store.Create(ctx, &sessionstore.Record{ID: id, Owner: sessionstore.OwnerHash(identity), ...})
//
//	// any later request, on any edge:
//	rec, rev, err := store.Get(ctx, r.Header.Get("Mcp-Session-Id")) // ErrBadID, ErrNotFound
//	rev, _, err = store.Touch(ctx, rec, rev, now)                    // at most one write per TouchEvery
//	rec.AppliedGeneration = gen
//	rev, err = store.Update(ctx, rec, rev)                           // ErrConflict: Get again, reapply
//
//	// DELETE /mcp:
//	err = store.Delete(ctx, id)
//
// Ids come from clients; every method checks them with ValidateID before
// they reach NATS. Writes are compare-and-set on the key's revision, so an
// edge holding a stale copy gets ErrConflict instead of overwriting another
// edge's write.
//
// # Expiry
//
// A record expires Options.IdleTimeout after the last request that touched
// it (up to TouchEvery later). Every write, Create, Update and Touch alike,
// carries a per-message TTL of IdleTimeout+TouchEvery. The KV Update and Put
// calls send no TTL and would leave the key without one (nats-server#6959),
// so Update and Touch publish to the key's subject with the TTL and the
// expected revision. Touch writes only when TouchEvery has passed since
// rec.LastSeen: a session costs at most 60s/TouchEvery KV writes a minute,
// however many requests it makes. The bucket keeps History 1 (a longer
// history raises every TTL to the marker TTL); a Delete leaves a marker
// that expires after a minute.
//
// # Hardening and limits
//
// The controller creates the bucket (Provision) with MaxBytes (default
// DefaultMaxBytes: when full, the least recently written records are
// evicted, and a write over an evicted record fails with ErrLost so that
// the edge serving it creates it again), a per-record limit of
// RecordLimit(MaxBytes) that the server enforces, and hardened against what subject permissions cannot
// refuse: roll-ups (a Nats-Rollup: all header on any key would wipe the
// bucket) and purges are off. Roll-ups cannot be off while the server
// leaves subject delete markers, so a record that expires by its TTL
// simply disappears: a watcher of the bucket sees deletes and other
// edges' writes, not expiries (an edge ends an idle session by its own
// idle timeout, the same value). Edges open the bucket as it is.
package sessionstore
