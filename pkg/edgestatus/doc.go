// Package edgestatus is the status record each edge keeps in NATS KV for
// the operator's views: which edges are running and, for each, the state
// of its own instance of every stdio backend it serves (each edge runs its
// own; the dashboard shows them side by side).
//
// The record (record.go) is small, bounded and decoded strictly: the
// bucket is written by every edge, and the dashboard that reads it takes
// nothing on trust (DecodeRecord bounds size, counts and strings; a fuzz
// target covers it). The bucket (Provision) keeps one record per edge, at
// most MaxRecord bytes, for RecordTTL after it was last written, so an
// edge that stops disappears on its own; it is hardened (package kvbucket):
// no edge can roll it up, purge it or delete from it through the API.
//
// A Publisher writes an edge's record: at once, whenever the status it is
// given changes (looked at every Poll), and every Refresh otherwise so the
// record outlives its TTL while the edge runs. Its loop is driven as
//
//	p := &edgestatus.Publisher{Store: kv, Edge: "edge-1", Status: pool.StdioStatus}
//	go p.Run(ctx) // returns when ctx ends
//
// with the clock injected (Options.Now) and the store behind a one-method
// interface, so that the loop is tested under testing/synctest.
package edgestatus
