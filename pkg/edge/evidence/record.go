package evidence

import (
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetgate/fleetgate/pkg/convergence"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// Phase is where a record is in its life on this edge.
type Phase int32

// Phases of a record.
const (
	PhaseNone Phase = iota // not initialized yet: nothing to write
	PhaseLive              // this edge serves the session and writes its record
	PhaseGone              // deleted, expired or taken over: never written again
)

// Record is the record state of one session. The zero value is ready (a
// session without a store keeps its evidence in memory only).
type Record struct {
	wmu sync.Mutex // serializes the writes of this record (BeginWrite)

	mu sync.Mutex
	// rec.Owner is the OwnerHash of the creator's identity.
	rec    sessionstore.Record // Convergence is the session's evidence
	rev    uint64              // revision of the last write; 0: not stored
	seen   time.Time           // last request
	stc    uint64              // LastSignal.Seq whose signal-to-converged was observed
	phase  Phase
	dirty  bool        // rec changed since the last write
	queued atomic.Bool // in a writer's flush set
}

// Phase is the record's phase.
func (r *Record) Phase() Phase {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.phase
}

// SeenAt is the time of the session's last request.
func (r *Record) SeenAt() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen
}

// Touch notes a request at now.
func (r *Record) Touch(now time.Time) {
	r.mu.Lock()
	r.seen = now
	r.mu.Unlock()
}

// Owner is the OwnerHash of the session's creator.
func (r *Record) Owner() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rec.Owner
}

// Convergence is a copy of the session's evidence.
func (r *Record) Convergence() convergence.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rec.Convergence
}

// Create starts the record of a session this edge initialized: live, to
// be written.
func (r *Record) Create(rec sessionstore.Record, now time.Time) {
	r.mu.Lock()
	r.phase, r.seen, r.rec, r.dirty = PhaseLive, now, rec, true
	r.mu.Unlock()
}

// SetLogLevel notes the log level the client set; changed says the record
// must be written.
func (r *Record) SetLogLevel(level string) (changed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed = r.rec.LogLevel != level
	r.rec.LogLevel = level
	r.dirty = r.dirty || changed
	return changed
}

// SetTasks notes the session's tasks (oldest first).
func (r *Record) SetTasks(ts []sessionstore.TaskRef) (changed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed = !slices.Equal(r.rec.Tasks, ts)
	r.rec.Tasks = ts
	r.dirty = r.dirty || changed
	return changed
}

// SetSubscriptions notes the session's resource subscriptions (sorted).
func (r *Record) SetSubscriptions(uris []string) (changed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed = !slices.Equal(r.rec.Subscriptions, uris)
	r.rec.Subscriptions = uris
	r.dirty = r.dirty || changed
	return changed
}

// Listed records a tools/list page served at now: cursor is the request's,
// tools the page's tools as sent, next its nextCursor, digestOf the
// digest function of a traversal. holds says the client now holds the
// current list (a tools list_changed still owed for it is moot);
// toConverged, with observed, is the time from the last signal to this
// convergence, reported once per signal.
func (r *Record) Listed(now time.Time, cursor string, tools []json.RawMessage, next string,
	digestOf func([]json.RawMessage) (string, error)) (holds bool, toConverged time.Duration, observed bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	conv := &r.rec.Convergence
	err = conv.ListPage(now, cursor, tools, next, digestOf)
	if t := conv.Traversal; t.Complete() && t.Break == "" {
		r.rec.RegistryDigest = t.Digest // the client holds this list now
		holds = t.Digest == conv.CurrentDigest
	}
	if d, ok := convergence.SignalToConverged(*conv); ok && conv.LastSignal.Seq != r.stc {
		r.stc = conv.LastSignal.Seq
		toConverged, observed = d, true
	}
	r.dirty = true
	return holds, toConverged, observed, err
}

// Signalling records the tools list_changed about to be written to the
// session's stream at now, for the view of digest and generation gen
// (regions: its vector, nil on one log). It is recorded before the write
// (a client may list again before the write returns); undo takes it back
// when the write fails.
func (r *Record) Signalling(digest string, gen uint64, regions map[string]uint64, now time.Time) (undo func()) {
	r.mu.Lock()
	prevSignal, prevDigest := r.rec.Convergence.LastSignal, r.rec.RegistryDigest
	r.rec.Convergence.SetCurrent(digest, gen)
	r.rec.Convergence.CurrentRegions = regions
	r.rec.Convergence.Signal(now, gen)
	r.rec.RegistryDigest, r.rec.AppliedGeneration = digest, gen
	r.dirty = true
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		r.rec.Convergence.LastSignal, r.rec.RegistryDigest = prevSignal, prevDigest
		r.mu.Unlock()
	}
}

// StreamAttached records that the client opened its standalone stream: it
// listens for list_changed.
func (r *Record) StreamAttached() (changed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed = !r.rec.Convergence.ClientListChanged
	r.rec.ClientListChanged, r.rec.Convergence.ClientListChanged = true, true
	r.dirty = r.dirty || changed
	return changed
}

// ViewApplied records a new view given to the session; lag is how many
// generations its latest traversal trails.
func (r *Record) ViewApplied(digest string, gen uint64, regions map[string]uint64) (lag uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Convergence.SetCurrent(digest, gen)
	r.rec.Convergence.CurrentRegions = regions
	r.rec.AppliedGeneration = gen
	r.dirty = true
	return convergence.GenerationLag(r.rec.Convergence)
}

// Adopt gives a session rebuilt here at now its stored record rec (at
// revision rev), served by edge with the view of digest, gen and regions.
// owesTools says the view changed since the client last heard (its
// registry digest differs): a tools list_changed is owed to it.
func (r *Record) Adopt(rec *sessionstore.Record, rev uint64, now time.Time, edge, digest string, gen uint64,
	regions map[string]uint64) (owesTools bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phase, r.rev, r.seen = PhaseLive, rev, now
	r.rec = *rec
	r.rec.Edge = edge
	r.rec.AppliedGeneration = gen
	r.rec.Convergence.SetCurrent(digest, gen)
	r.rec.Convergence.CurrentRegions = regions
	r.dirty = true
	return rec.RegistryDigest != digest
}
