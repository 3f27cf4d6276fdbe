package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/singleflight"

	"github.com/fleetgate/fleetgate/pkg/convergence"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// RecordOptions configure the shared session records that let a session
// continue on another edge (see the package doc, "Sessions across edges").
type RecordOptions struct {
	// JetStream holds the session store's KV bucket; required.
	JetStream jetstream.JetStream
	// Store configures the bucket: name, replicas, idle timeout (the
	// record's TTL, renewed by activity) and touch interval. Nil means
	// sessionstore defaults. Its Metrics are replaced by the edge's.
	Store *sessionstore.Options
	// FlushEvery is the most time a changed record (evidence, applied
	// view, activity) waits before it is written; default
	// min(2s, TouchEvery/2). Changes within it cost one write.
	FlushEvery time.Duration
}

// Phases of a session record.
const (
	phaseNone = iota // not initialized yet: nothing to write
	phaseLive        // this edge serves the session and writes its record
	phaseGone        // deleted, expired or taken over: never written again
)

// sessionRecord is the record state of one session: the stored record as
// this edge last wrote it, with its convergence evidence. The zero value
// is ready (a session without a store keeps its evidence in memory only).
type sessionRecord struct {
	wmu sync.Mutex // serializes the writes of this record

	mu sync.Mutex
	// rec.Owner is the OwnerHash of the creator's identity.
	rec    sessionstore.Record // Convergence is the session's evidence
	rev    uint64              // revision of the last write; 0: not stored
	seen   time.Time           // last request
	stc    uint64              // LastSignal.Seq whose signal-to-converged was observed
	phase  int32
	dirty  bool        // rec changed since the last write
	queued atomic.Bool // in the recorder's flush set
}

// recorder writes the records of this edge's sessions to the store and
// follows the bucket for sessions deleted, expired or taken over
// elsewhere. A nil *recorder (no store) records nothing.
type recorder struct {
	e          *Edge
	store      *sessionstore.Store
	kv         jetstream.KeyValue
	flushEvery time.Duration
	halted     atomic.Bool // a killed edge: no more writes (tests)

	mu  sync.Mutex
	set map[*sessionRecord]*session // records with a pending write

	replaying sync.Map // session id -> struct{}: an initialize being replayed
	flights   singleflight.Group
	cancel    context.CancelFunc
	done      sync.WaitGroup
}

// newRecorder opens the session store; nil without RecordOptions.
func newRecorder(e *Edge, o *RecordOptions) (*recorder, error) {
	if o == nil {
		return nil, nil
	}
	if o.JetStream == nil {
		return nil, errors.New("edge: session records: no JetStream")
	}
	var so sessionstore.Options
	if o.Store != nil {
		so = *o.Store
	}
	if so.Bucket == "" {
		so.Bucket = sessionstore.DefaultBucket
	}
	if so.IdleTimeout == 0 {
		so.IdleTimeout = sessionstore.DefaultIdleTimeout
	}
	if so.TouchEvery == 0 {
		so.TouchEvery = so.IdleTimeout / 10
	}
	so.Metrics = sessionstore.NewMetrics(e.opts.Registry)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store, err := sessionstore.Open(ctx, o.JetStream, &so)
	if err != nil {
		return nil, fmt.Errorf("edge: session records: %w", err)
	}
	kv, err := o.JetStream.KeyValue(ctx, so.Bucket)
	if err != nil {
		return nil, fmt.Errorf("edge: session records: bucket %q: %w", so.Bucket, err)
	}
	flush := o.FlushEvery
	if flush <= 0 {
		flush = min(2*time.Second, so.TouchEvery/2)
	}
	return &recorder{e: e, store: store, kv: kv, flushEvery: flush, set: map[*sessionRecord]*session{}}, nil
}

// start runs the flusher and the bucket watcher until stop.
func (r *recorder) start() {
	if r == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	watching := make(chan struct{})
	r.done.Go(func() { r.watch(ctx, watching) })
	<-watching
	r.done.Go(func() {
		t := time.NewTicker(r.flushEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				r.flush()
			}
		}
	})
}

// stop ends the flusher and the watcher, then writes what is pending
// (the final records of a graceful shutdown).
func (r *recorder) stop() {
	if r == nil || r.cancel == nil {
		return
	}
	r.cancel()
	r.done.Wait()
	r.flush()
}

// enqueue schedules a write of st.
func (r *recorder) enqueue(s *session) {
	if r == nil || s.rec.queued.Swap(true) {
		return
	}
	r.mu.Lock()
	r.set[&s.rec] = s
	r.mu.Unlock()
}

// flush writes every queued record.
func (r *recorder) flush() {
	r.mu.Lock()
	batch := r.set
	r.set = map[*sessionRecord]*session{}
	r.mu.Unlock()
	for st, s := range batch {
		st.queued.Store(false)
		if err := r.write(s, false); err != nil {
			r.e.log.Warn().Err(err).Str("session", s.id).Msg("session record not written")
		}
	}
}

// write stores s's record if it changed or a touch is due. With claim, a
// conflicting write by another edge is overridden (a rehydration takes the
// session over); without, it means the session moved and is dropped here.
func (r *recorder) write(s *session, claim bool) error {
	if r == nil || r.halted.Load() {
		return nil
	}
	st := &s.rec
	st.wmu.Lock()
	defer st.wmu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for attempt := 0; ; attempt++ {
		st.mu.Lock()
		if st.phase != phaseLive || (!st.dirty && st.rev != 0 && !st.seen.After(st.rec.LastSeen)) {
			st.mu.Unlock()
			return nil
		}
		rec, rev, dirty := st.rec, st.rev, st.dirty
		rec.Edge = r.e.opts.ID
		st.dirty = false
		st.mu.Unlock()
		var (
			err  error
			kind = "update"
		)
		switch {
		case rev == 0:
			kind = "create"
			rec.LastSeen = latest(rec.LastSeen, st.seenAt())
			rev, err = r.store.Create(ctx, &rec)
		case dirty:
			rec.LastSeen = latest(rec.LastSeen, st.seenAt())
			rev, err = r.store.Update(ctx, &rec, rev)
		default:
			var wrote bool
			kind = "touch"
			rev, wrote, err = r.store.Touch(ctx, &rec, rev, st.seenAt())
			if !wrote && err == nil {
				return nil
			}
		}
		if err == nil {
			r.e.rm.written.WithLabelValues(kind).Inc()
			st.mu.Lock()
			st.rev, st.rec.LastSeen, st.rec.Edge = rev, rec.LastSeen, rec.Edge
			st.mu.Unlock()
			return nil
		}
		st.mu.Lock()
		st.dirty = st.dirty || dirty
		st.mu.Unlock()
		switch {
		case errors.Is(err, sessionstore.ErrNotFound):
			r.drop(s, "record deleted or expired")
			return nil
		case errors.Is(err, sessionstore.ErrConflict) && attempt < 3:
			cur, curRev, gerr := r.store.Get(ctx, s.id)
			if gerr != nil {
				if errors.Is(gerr, sessionstore.ErrNotFound) {
					r.drop(s, "record deleted or expired")
					return nil
				}
				return fmt.Errorf("session %q: reread after conflict: %w", s.id, gerr)
			}
			if cur.Edge != r.e.opts.ID && !claim {
				r.drop(s, "taken over by edge "+cur.Edge)
				return nil
			}
			st.mu.Lock()
			st.rev, st.dirty = curRev, true
			st.mu.Unlock()
		default:
			return fmt.Errorf("session %q: %s record: %w", s.id, kind, err)
		}
	}
}

func (st *sessionRecord) phaseOf() int32 {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.phase
}

func (st *sessionRecord) seenAt() time.Time {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.seen
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// drop ends this edge's copy of a session whose record is gone or was
// taken over by another edge; the record is left alone.
func (r *recorder) drop(s *session, why string) {
	st := &s.rec
	st.mu.Lock()
	was := st.phase
	st.phase = phaseGone
	st.mu.Unlock()
	if was != phaseLive {
		return
	}
	r.e.log.Info().Str("session", s.id).Str("reason", why).Msg("session ended on this edge")
	r.e.forget(s)
	r.e.wg.Go(s.close)
}

// watch follows the bucket: a session this edge serves whose record was
// deleted, expired or written by another edge ends here.
func (r *recorder) watch(ctx context.Context, started chan<- struct{}) {
	w, err := r.kv.WatchAll(ctx, jetstream.UpdatesOnly())
	close(started)
	if err != nil {
		r.e.log.Error().Err(err).Msg("session records: cannot watch the bucket; moved sessions are not released")
		return
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return
		case ent, ok := <-w.Updates():
			if !ok {
				return
			}
			if ent != nil {
				r.observe(ent)
			}
		}
	}
}

func (r *recorder) observe(ent jetstream.KeyValueEntry) {
	s := r.e.lookup(ent.Key())
	if s == nil {
		return
	}
	s.rec.mu.Lock()
	live, rev := s.rec.phase == phaseLive, s.rec.rev
	s.rec.mu.Unlock()
	if !live || ent.Revision() <= rev {
		return
	}
	if ent.Operation() != jetstream.KeyValuePut {
		r.drop(s, "record deleted or expired")
		return
	}
	var who struct {
		Edge string `json:"edge"`
	}
	if json.Unmarshal(ent.Value(), &who) == nil && who.Edge != r.e.opts.ID {
		r.drop(s, "taken over by edge "+who.Edge)
	}
}

// sessionCreated starts the record of a session this edge initialized
// and, with a store, writes it before the initialize response leaves.
func (e *Edge) sessionCreated(s *session, owner string, params json.RawMessage, conv convergence.Record, now time.Time) {
	st := &s.rec
	st.mu.Lock()
	st.phase = phaseLive
	st.seen = now
	st.rec = sessionstore.Record{ID: s.id, Owner: owner, Group: e.opts.Group, Mode: sessionstore.Mode(e.opts.Mode),
		InitializeParams: params, ProtocolVersion: conv.ProtocolVersion, ClientListChanged: conv.ClientListChanged,
		AppliedGeneration: conv.CurrentGeneration, RegistryDigest: conv.CurrentDigest, Edge: e.opts.ID,
		CreatedAt: now, LastSeen: now, Convergence: conv}
	st.dirty = true
	st.mu.Unlock()
	if e.recs == nil {
		return
	}
	if err := e.recs.write(s, false); err != nil {
		e.log.Warn().Err(err).Str("session", s.id).Msg("session record not created; retried in the background")
		e.recs.enqueue(s)
	}
}

// levelSet notes the log level the client of s set, in its record too:
// its calls are the go-sdk's from now on (they relay log messages).
func (e *Edge) levelSet(s *session, level string) {
	s.flags.Or(flagLogs)
	s.rec.mu.Lock()
	changed := s.rec.rec.LogLevel != level
	s.rec.rec.LogLevel = level
	s.rec.dirty = s.rec.dirty || changed
	s.rec.mu.Unlock()
	if changed {
		e.recs.enqueue(s)
	}
}

// touched notes a request of s.
func (r *recorder) touched(s *session, now time.Time) {
	s.rec.mu.Lock()
	s.rec.seen = now
	s.rec.mu.Unlock()
	r.enqueue(s)
}

// deleted removes the record of a session its client ended.
func (r *recorder) deleted(ctx context.Context, id string, s *session) {
	if s != nil {
		s.rec.mu.Lock()
		s.rec.phase = phaseGone
		s.rec.mu.Unlock()
	}
	if r == nil {
		return
	}
	if err := r.store.Delete(ctx, id); err != nil {
		r.e.log.Warn().Err(err).Str("session", id).Msg("session record not deleted; it expires on its own")
		return
	}
	r.e.rm.written.WithLabelValues("delete").Inc()
}

// startRecords starts the record writer and the call trail; the returned
// function, called after the sessions were closed, writes the last
// records and drains the trail.
func (e *Edge) startRecords() (stop func()) {
	e.recs.start()
	var trail sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	if t := e.opts.CallTrail; t != nil {
		trail.Go(func() {
			if err := t.Run(ctx); err != nil {
				e.log.Warn().Err(err).Msg("call trail")
			}
		})
	}
	return func() {
		e.recs.stop()
		cancel()
		trail.Wait()
	}
}

// storedInfo describes a session this edge does not serve from its
// stored record (another edge serves it, or none does at the moment).
func (e *Edge) storedInfo(ctx context.Context, id string) (SessionInfo, bool) {
	if e.recs == nil || sessionstore.ValidateID(id) != nil {
		return SessionInfo{}, false
	}
	rec, _, err := e.recs.store.Get(ctx, id)
	if err != nil || rec.Group != e.opts.Group {
		return SessionInfo{}, false
	}
	verdict, reason := convergence.Explain(rec.Convergence)
	conv := rec.Convergence
	return SessionInfo{ID: rec.ID, Kind: kindSession, ProtocolVersion: rec.ProtocolVersion,
		AppliedGeneration: rec.AppliedGeneration, Digest: rec.RegistryDigest, Verdict: string(verdict),
		VerdictReason: reason, Created: rec.CreatedAt, Tools: conv.Traversal.Tools, Edge: rec.Edge,
		Convergence: &conv}, true
}
