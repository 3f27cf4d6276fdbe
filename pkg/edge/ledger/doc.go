// Package ledger keeps the convergence evidence of an edge's sessions as
// they are served, and has their records written (package records): the
// initialize a session server accepted (the record is created then,
// before the response leaves), every tools/list page served, each
// list_changed signalled, each view applied, the log level, tasks and
// resource subscriptions a session holds, and the record a rebuilt
// session adopts. The list_changed a session's stream writes is recorded
// by the session itself (package session, from its served value and the
// registry's confirmed state); the ledger schedules the record's write. The record itself and its transitions are package
// evidence's; the write and the bucket are package records'.
//
// A session's convergence.Record holds the negotiated protocol version
// (from the InitializeResult), whether the client declared listChanged
// (MCP 2025-11-25 has no such client capability: a tools.listChanged in
// its capabilities or experimental capabilities counts, and so does
// opening the standalone GET stream, the only channel a list_changed can
// reach it on) and whether the server advertised it, the last change
// signal actually delivered, every tools/list page served (its
// definitions as the view holds them, digested with catalog.Digest) and
// the current digest of each applied view.
//
// A record's registry digest is the tool list the client is known to
// hold: the one its last list_changed announced or its last complete
// traversal served. When it differs from what a rebuilding edge serves,
// a list_changed is owed (Adopt). More generally, a list_changed that
// could not be delivered stays pending rather than lost, and a complete
// tools/list of the current view settles it.
//
// What a session was served is digested once per served value: the
// catalog digest of its tools as served (the definitions the view holds),
// which a traversal that returned exactly them reuses. An optimizer edge
// serves another list than its view: it has no current digest, and its
// sessions' verdicts are unverifiable.
//
// A served value's generation and regional vector are those at which the
// edge last found it current (the confirmed state, session.Registry's
// Confirm and Evidence), or its own once it is no longer served.
//
// Metrics: fleetgate_edge_session_generation_lag,
// fleetgate_edge_signal_to_converged_seconds and
// fleetgate_edge_sessions_by_verdict (at scrape time).
//
//	l := ledger.New(&ledger.Options{Edge: "edge-1", Group: "default", Records: recs,
//		Sessions: sessions, Registry: reg})
//	l.ViewAppliedTo(s, next, l.CurrentDigest(next)) // in a resync's pass, per session
package ledger
