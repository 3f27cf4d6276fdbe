package evidence

import (
	"time"

	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// The write protocol of a record, for the writer that stores it: one
// write at a time (BeginWrite, EndWrite); Due says what to write and
// clears the change; the outcome is reported with Wrote, Failed or
// Conflicted.

// Write kinds Due returns.
const (
	WriteCreate = "create" // never stored: create the key
	WriteUpdate = "update" // changed: update at the revision
	WriteTouch  = "touch"  // unchanged: renew the TTL if due
)

// Queue marks the record as in a writer's flush set; false when it was
// already.
func (r *Record) Queue() bool { return !r.queued.Swap(true) }

// Unqueue takes the record out of the flush set (it is being written).
func (r *Record) Unqueue() { r.queued.Store(false) }

// BeginWrite starts the one write of this record in progress; EndWrite
// ends it.
func (r *Record) BeginWrite() { r.wmu.Lock() }

// EndWrite ends a write BeginWrite started.
func (r *Record) EndWrite() { r.wmu.Unlock() }

// Write is one write of a record Due returns.
type Write struct {
	Rec   sessionstore.Record // to store; LastSeen the later of the stored one and Seen
	Rev   uint64              // the revision it replaces; 0 for a create
	Kind  string              // WriteCreate, WriteUpdate or WriteTouch
	Seen  time.Time           // the session's last request
	Dirty bool                // it carries a change (owed again if it fails)
}

// Due returns what to write, as edge, and clears the change: ok is false
// when nothing is (the record is not live, or unchanged, stored, and not
// seen since its last write).
func (r *Record) Due(edge string) (w Write, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.phase != PhaseLive || (!r.dirty && r.rev != 0 && !r.seen.After(r.rec.LastSeen)) {
		return Write{}, false
	}
	w = Write{Rec: r.rec, Rev: r.rev, Kind: WriteTouch, Seen: r.seen, Dirty: r.dirty}
	w.Rec.Edge = edge
	switch {
	case w.Rev == 0:
		w.Kind = WriteCreate
	case w.Dirty:
		w.Kind = WriteUpdate
	}
	if w.Kind != WriteTouch && w.Seen.After(w.Rec.LastSeen) {
		w.Rec.LastSeen = w.Seen
	}
	r.dirty = false
	return w, true
}

// Wrote notes a successful write of rec at revision rev.
func (r *Record) Wrote(rev uint64, rec *sessionstore.Record) {
	r.mu.Lock()
	r.rev, r.rec.LastSeen, r.rec.Edge = rev, rec.LastSeen, rec.Edge
	r.mu.Unlock()
}

// Failed notes that w failed: its change is owed again.
func (r *Record) Failed(w *Write) {
	r.mu.Lock()
	r.dirty = r.dirty || w.Dirty
	r.mu.Unlock()
}

// Conflicted notes that the stored record is at revision rev (another
// writer's): the next write overrides it.
func (r *Record) Conflicted(rev uint64) {
	r.mu.Lock()
	r.rev, r.dirty = rev, true
	r.mu.Unlock()
}

// End makes the record gone; was is the phase it had.
func (r *Record) End() (was Phase) {
	r.mu.Lock()
	defer r.mu.Unlock()
	was, r.phase = r.phase, PhaseGone
	return was
}

// Stored reports whether the record is live and its revision.
func (r *Record) Stored() (live bool, rev uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.phase == PhaseLive, r.rev
}
