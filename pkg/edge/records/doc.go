// Package records keeps the session records of an edge in the shared
// store (package sessionstore, NATS KV), so that a session continues on
// another edge: it writes each session's record (package evidence) when
// it changed or its TTL is due, merging the changes of a flush interval
// into one write, and follows the bucket for the sessions of this edge
// deleted, expired or taken over elsewhere, which end here.
//
// A nil *Recorder records nothing: an edge without a store calls it all
// the same.
package records
