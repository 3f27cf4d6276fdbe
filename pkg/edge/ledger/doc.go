// Package ledger keeps the convergence evidence of an edge's sessions as
// they are served, and has their records written (package records): the
// initialize a session server accepted (the record is created then,
// before the response leaves), every tools/list page served, each
// list_changed signalled, each view applied, the log level, tasks and
// resource subscriptions a session holds, and the record a rebuilt
// session adopts. The record itself and its transitions are package
// evidence's; the write and the bucket are package records'.
//
// What a session was served is digested once per served value: the
// catalog digest of its tools as served (the definitions the view holds),
// which a traversal that returned exactly them reuses. An optimizer edge
// serves another list than its view: it has no current digest, and its
// sessions' verdicts are unverifiable.
//
// A served value's generation and regional vector are those at which the
// edge last found it current (the confirmed state), or its own once it is
// no longer served.
//
// Metrics: fleetgate_edge_session_generation_lag,
// fleetgate_edge_signal_to_converged_seconds and
// fleetgate_edge_sessions_by_verdict (at scrape time).
//
//	l := ledger.New(&ledger.Options{Edge: "edge-1", Group: "default", Records: recs,
//		Sessions: reg, Confirmed: &confirmed, ConfirmedRegions: &regions, Registry: reg})
//	l.ViewApplied(targets, next) // after a resync's fan-out
package ledger
