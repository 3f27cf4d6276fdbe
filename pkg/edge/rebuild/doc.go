// Package rebuild continues on this edge a session another edge (or none
// at the moment) holds, from its record in the shared store (package
// records): a request with an Mcp-Session-Id this edge does not hold is
// looked up in the bucket, and, if the caller's identity hashes to the
// record's owner, the session is rebuilt (R1): the stored initialize,
// then notifications/initialized (and the stored log level and resource
// subscriptions), go through the go-sdk's own handler into a session
// server with the same fixed id, marked with ReplayHeader. Concurrent
// requests for one session and owner share one rebuild. The record is
// then adopted (package ledger: a list_changed is owed when the view
// changed since the client last heard) and written under this edge's id;
// the edge that held the session sees that write and lets it go.
//
// A record comes from the bus: its initialize params are bounded like a
// client's before any parser sees them. Another identity gets ErrForeign
// (403), a record of another group is not found. DeleteStored ends a
// session this edge does not hold (DELETE /mcp on any edge).
//
//	b := rebuild.New(rebuild.Options{Group: "default", Sessions: reg, Records: recs, Ledger: l, ...})
//	s, err := b.Rebuild(stateful, r, sid, owner) // nil, sessionstore.ErrNotFound: 404
//
// Metrics: fleetgate_edge_sessions_rehydrated_total,
// fleetgate_edge_rehydration_seconds.
package rebuild
