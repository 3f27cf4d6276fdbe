// Package evidence is the record an edge keeps of one client session: the
// stored session record as this edge last wrote it, the write state of
// that record, and the convergence evidence it carries. It is pure: every
// method is a state transition under the record's own lock, given the
// values (time, digests, generations) it needs; the I/O that stores it
// (package records) and the session that owns it (package session) call
// it.
package evidence
