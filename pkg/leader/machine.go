package leader

import "time"

// Op is the next operation the driver of a Machine performs on the lease.
type Op int

const (
	// OpGet reads the lease.
	OpGet Op = iota + 1
	// OpCreate writes the lease where the key is absent (or deleted).
	OpCreate
	// OpTakeover overwrites an expired lease at Action.Rev (compare and
	// set).
	OpTakeover
	// OpRenew rewrites the machine's own lease at Action.Rev (compare and
	// set) with term Action.Term.
	OpRenew
)

func (o Op) String() string {
	switch o {
	case OpGet:
		return "get"
	case OpCreate:
		return "create"
	case OpTakeover:
		return "takeover"
	case OpRenew:
		return "renew"
	}
	return "op?"
}

// Event is a change of leadership a step produced.
type Event int

const (
	// EventNone: no change.
	EventNone Event = iota
	// EventElected: the machine leads from now on, in term Action.Term.
	EventElected
	// EventLost: the machine no longer leads; Action.Term was its term.
	EventLost
)

// Action is what a step of the Machine asks of its driver: report Event,
// then perform Op at time At (at once if At is not after now).
type Action struct {
	Op Op
	// Rev is the expected revision of OpTakeover and OpRenew.
	Rev uint64
	// At is when to perform Op.
	At time.Time
	// Event is the leadership change of this step.
	Event Event
	// Term is the term of Event, and for OpRenew the term to write.
	Term uint64
}

// Observation is the result of OpGet.
type Observation struct {
	// Found is false when the key is absent or deleted.
	Found bool
	// Revision is the KV revision of the lease.
	Revision uint64
	// Lease is the decoded value; a value that could not be decoded is
	// observed as a zero Lease (a foreign lease with the machine's TTL).
	Lease Lease
}

// Machine is the election logic of one elector: a pure state machine. The
// driver feeds it the outcome of each operation together with the local
// monotonic time, and gets back the next Action. It never reads a clock,
// sleeps or starts a goroutine.
//
// Rules:
//   - No key: create it.
//   - A lease of another revision than the one last seen: remember the
//     revision and the local time it was first seen; poll again.
//   - A lease held by the machine's own id (SetID), left by a previous run
//     of the same controller: take it over at once with compare-and-set
//     on its revision. That run is gone (an id runs once), so there is no
//     one to wait for; the takeover moves the revision, so a renewal of
//     the old run fails, and the event log's fencing (a publish expects
//     the stream's last sequence) stops anything it would still write.
//   - A lease whose revision has not changed for its own TTL since first
//     seen: take it over with compare-and-set on that revision.
//   - Leading: renew every TTL/3 by compare-and-set on the own revision.
//     The lease is valid for Validity (9/10 of the TTL, leaving a margin
//     for clock-rate differences) from the moment the successful write was
//     sent; a standby cannot take over before TTL after it first saw that
//     revision, which is later. A renewal that meets another revision, or
//     that does not succeed within the validity, loses leadership at once.
//
// A Machine is not safe for concurrent use.
type Machine struct {
	ttl, poll, retry time.Duration
	id               string // own holder id ("": none, every lease is foreign)

	// Standby: the lease revision last observed, the local time it was
	// first observed and the TTL it carries.
	seenRev uint64
	seenAt  time.Time
	seenTTL time.Duration

	leading    bool
	term       uint64
	rev        uint64    // revision of the own lease
	validUntil time.Time // leadership is certain until then
}

// NewMachine returns a Machine whose leases last ttl. A standby polls the
// lease every ttl/4, and failed operations are retried after ttl/10.
func NewMachine(ttl time.Duration) *Machine {
	return &Machine{ttl: ttl, poll: ttl / 4, retry: max(ttl/10, time.Millisecond)}
}

// SetID names the machine's holder id, the Holder of the leases its driver
// writes, so that a lease it finds under its own id (a previous run's) is
// resumed at once instead of waited out.
func (m *Machine) SetID(id string) { m.id = id }

// Validity is how long a successful write makes its writer leader,
// counted from when the write was sent: 9/10 of the TTL.
func (m *Machine) Validity() time.Duration { return m.ttl - m.ttl/10 }

// Start returns the first Action: read the lease now.
func (m *Machine) Start(now time.Time) Action { return Action{Op: OpGet, At: now} }

// Leading reports whether the machine leads at time now, with its term and
// the end of the validity of its lease.
func (m *Machine) Leading(now time.Time) (term uint64, validUntil time.Time, ok bool) {
	if !m.leading || !now.Before(m.validUntil) {
		return 0, time.Time{}, false
	}
	return m.term, m.validUntil, true
}

// Observed steps the machine with the result of OpGet at time now.
func (m *Machine) Observed(now time.Time, o Observation) Action {
	if m.leading {
		// A leader does not poll, but a read showing another revision
		// than its own means someone else wrote the key.
		if !o.Found || o.Revision != m.rev {
			return m.lose(now)
		}
		return m.renewAt(now, now)
	}
	if !o.Found {
		m.seenRev = 0
		return Action{Op: OpCreate, At: now}
	}
	if m.id != "" && o.Lease.Holder == m.id {
		return Action{Op: OpTakeover, Rev: o.Revision, At: now}
	}
	if o.Revision != m.seenRev {
		ttl := o.Lease.TTL
		if ttl <= 0 {
			ttl = m.ttl
		}
		m.seenRev, m.seenAt, m.seenTTL = o.Revision, now, ttl
	}
	expiry := m.seenAt.Add(m.seenTTL)
	if !now.Before(expiry) {
		return Action{Op: OpTakeover, Rev: m.seenRev, At: now}
	}
	return Action{Op: OpGet, At: earliest(now.Add(m.poll), expiry)}
}

// GetFailed steps the machine after OpGet failed (not for an absent key,
// which is an Observation with Found false).
func (m *Machine) GetFailed(now time.Time) Action {
	if m.leading {
		return m.renewAt(now, now)
	}
	return Action{Op: OpGet, At: now.Add(m.retry)}
}

// Written steps the machine after a successful OpCreate, OpTakeover or
// OpRenew that was sent at time sent, answered at time now with the new
// revision rev.
func (m *Machine) Written(sent, now time.Time, rev uint64) Action {
	if m.leading && !now.Before(m.validUntil) {
		// The renewal succeeded, but too late: leadership lapsed before it
		// was confirmed. Step down; the next read starts over.
		return m.lose(now)
	}
	validUntil := sent.Add(m.Validity())
	if !now.Before(validUntil) {
		// Acquired too slowly to be sure of anything. Read again.
		return Action{Op: OpGet, At: now}
	}
	var ev Event
	if !m.leading {
		m.leading, m.term, ev = true, rev, EventElected
		m.seenRev = 0
	}
	m.rev, m.validUntil = rev, validUntil
	a := m.renewAt(now, sent.Add(m.ttl/3))
	a.Event = ev
	return a
}

// WriteFailed steps the machine after OpCreate, OpTakeover or OpRenew
// failed at time now. conflict is true when the key was not at the expected
// revision (or already existed): someone else wrote it.
func (m *Machine) WriteFailed(now time.Time, conflict bool) Action {
	if m.leading {
		if conflict || !now.Before(m.validUntil) {
			return m.lose(now)
		}
		return m.renewAt(now, earliest(now.Add(m.retry), m.validUntil))
	}
	if conflict {
		return Action{Op: OpGet, At: now}
	}
	return Action{Op: OpGet, At: now.Add(m.retry)}
}

// Lapse tells a leading machine that its driver saw the validity of the
// lease pass before it could publish the latest renewal (its expiry timer
// fired first): the machine steps down so that leadership, as published,
// never comes back without a new election. Otherwise it asks for a read.
func (m *Machine) Lapse(now time.Time) Action {
	if m.leading {
		return m.lose(now)
	}
	return Action{Op: OpGet, At: now}
}

// Resign ends the machine's leadership, as the driver does on shutdown. It
// returns the revision of the own lease to delete and the term that ended,
// or ok false if the machine did not lead.
func (m *Machine) Resign() (rev, term uint64, ok bool) {
	if !m.leading {
		return 0, 0, false
	}
	rev, term = m.rev, m.term
	m.leading, m.rev, m.term = false, 0, 0
	return rev, term, true
}

func (m *Machine) renewAt(now, at time.Time) Action {
	return Action{Op: OpRenew, Rev: m.rev, Term: m.term, At: at}
}

func (m *Machine) lose(now time.Time) Action {
	term := m.term
	m.leading, m.rev, m.term, m.validUntil = false, 0, 0, time.Time{}
	m.seenRev = 0 // time any lease from now on, including our old one
	return Action{Op: OpGet, At: now, Event: EventLost, Term: term}
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
