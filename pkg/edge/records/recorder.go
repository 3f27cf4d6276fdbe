package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/edge/evidence"
	"github.com/fleetgate/fleetgate/pkg/edge/internal/h1"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
	"github.com/fleetgate/fleetgate/pkg/stdio"
)

// Options configure a Recorder.
type Options struct {
	// JetStream holds the session store's KV bucket; required.
	JetStream jetstream.JetStream
	// Store configures the bucket: name, replicas, idle timeout (the
	// record's TTL, renewed by activity) and touch interval. Nil means
	// sessionstore defaults. Its Metrics are replaced by Registry's.
	Store *sessionstore.Options
	// FlushEvery is the most time a changed record (evidence, applied
	// view, activity) waits before it is written; default
	// min(2s, TouchEvery/2). Changes within it cost one write.
	FlushEvery time.Duration
}

// Wiring is what a Recorder is given by the edge it records for.
type Wiring struct {
	Edge     string                 // this edge's id, written in each record
	Sessions *session.Registry      // the sessions recorded
	Hijacks  *h1.Hijacks            // runs the closes of sessions ended here
	Log      *zerolog.Logger        // nil: none
	Registry prometheus.Registerer  // the store's metrics
	Written  *prometheus.CounterVec // writes by kind (create, update, touch, delete, lost); nil: not counted
	// Stdio is the status of the edge's stdio instances, kept in its
	// status record (status.go); nil: no status record.
	Stdio func() []stdio.Status
}

// Recorder writes the records of an edge's sessions to the store and
// follows the bucket for sessions deleted, expired or taken over
// elsewhere.
type Recorder struct {
	w          Wiring
	log        zerolog.Logger
	store      *sessionstore.Store
	js         jetstream.JetStream
	kv         jetstream.KeyValue
	flushEvery time.Duration
	halted     atomic.Bool // a killed edge: no more writes (tests)

	mu  sync.Mutex
	set map[*evidence.Record]*session.Session // records with a pending write

	// Replaying holds the ids of sessions whose initialize is being
	// replayed (a rebuild: their record exists).
	Replaying sync.Map
	cancel    context.CancelFunc
	done      sync.WaitGroup
}

// Open opens the session store; nil, nil without Options.
func Open(o *Options, w Wiring) (*Recorder, error) {
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
	so.Metrics = sessionstore.NewMetrics(w.Registry)
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
	r := &Recorder{w: w, log: zerolog.Nop(), store: store, js: o.JetStream, kv: kv, flushEvery: flush, set: map[*evidence.Record]*session.Session{}}
	if w.Log != nil {
		r.log = *w.Log
	}
	return r, nil
}

// Store is the session store (nil on a nil Recorder).
func (r *Recorder) Store() *sessionstore.Store {
	if r == nil {
		return nil
	}
	return r.store
}

// Halt stops every write for good, as a killed edge would (tests).
func (r *Recorder) Halt() { r.halted.Store(true) }

// Start runs the flusher and the bucket watcher until Stop. It returns
// once the watcher follows the bucket.
func (r *Recorder) Start() {
	if r == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	watching := make(chan struct{})
	r.done.Go(func() { r.watch(ctx, watching) })
	<-watching
	if r.w.Stdio != nil {
		r.done.Go(func() { r.runStatus(ctx) })
	}
	r.done.Go(func() {
		t := time.NewTicker(r.flushEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				r.Flush()
			}
		}
	})
}

// Stop ends the flusher and the watcher, then writes what is pending
// (the final records of a graceful shutdown).
func (r *Recorder) Stop() {
	if r == nil || r.cancel == nil {
		return
	}
	r.cancel()
	r.done.Wait()
	r.Flush()
}

// Enqueue schedules a write of s's record.
func (r *Recorder) Enqueue(s *session.Session) {
	if r == nil || !s.Record().Queue() {
		return
	}
	r.mu.Lock()
	r.set[s.Record()] = s
	r.mu.Unlock()
}

// Flush writes every queued record.
func (r *Recorder) Flush() {
	r.mu.Lock()
	batch := r.set
	r.set = map[*evidence.Record]*session.Session{}
	r.mu.Unlock()
	for st, s := range batch {
		st.Unqueue()
		if err := r.Write(s, false); err != nil {
			r.log.Warn().Err(err).Str("session_hash", sessionstore.IDHash(s.ID())).Msg("session record not written")
		}
	}
}

func (r *Recorder) written(kind string) {
	if r.w.Written != nil {
		r.w.Written.WithLabelValues(kind).Inc()
	}
}

// Write stores s's record if it changed or a touch is due. With claim, a
// conflicting write by another edge is overridden (a rehydration takes the
// session over); without, it means the session moved and is dropped here.
func (r *Recorder) Write(s *session.Session, claim bool) error {
	if r == nil || r.halted.Load() {
		return nil
	}
	st := s.Record()
	st.BeginWrite()
	defer st.EndWrite()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for attempt := 0; ; attempt++ {
		w, ok := st.Due(r.w.Edge)
		if !ok {
			return nil
		}
		var (
			err error
			rev uint64
		)
		switch w.Kind {
		case evidence.WriteCreate:
			rev, err = r.store.Create(ctx, &w.Rec)
		case evidence.WriteUpdate:
			rev, err = r.store.Update(ctx, &w.Rec, w.Rev)
		default:
			var wrote bool
			rev, wrote, err = r.store.Touch(ctx, &w.Rec, w.Rev, w.Seen)
			if !wrote && err == nil {
				return nil
			}
		}
		if err == nil {
			r.written(w.Kind)
			st.Wrote(rev, &w.Rec)
			return nil
		}
		st.Failed(&w)
		switch {
		case errors.Is(err, sessionstore.ErrLost) && attempt < 3:
			// Evicted from a full bucket (or expired while this edge
			// could not write): the session lives here, so its record
			// is made again.
			r.log.Info().Str("session_hash", sessionstore.IDHash(s.ID())).Msg("session record lost (evicted from a full bucket or expired); written again")
			r.written("lost")
			st.Conflicted(0)
		case errors.Is(err, sessionstore.ErrNotFound):
			r.drop(s, "record deleted or expired")
			return nil
		case errors.Is(err, sessionstore.ErrConflict) && attempt < 3:
			cur, curRev, gerr := r.store.Get(ctx, s.ID())
			if gerr != nil {
				if errors.Is(gerr, sessionstore.ErrNotFound) {
					r.drop(s, "record deleted or expired")
					return nil
				}
				return fmt.Errorf("session %q: reread after conflict: %w", s.ID(), gerr)
			}
			if cur.Edge != r.w.Edge && !claim {
				r.drop(s, "taken over by edge "+cur.Edge)
				return nil
			}
			st.Conflicted(curRev)
		default:
			return fmt.Errorf("session %q: %s record: %w", s.ID(), w.Kind, err)
		}
	}
}

// drop ends this edge's copy of a session whose record is gone or was
// taken over by another edge; the record is left alone.
func (r *Recorder) drop(s *session.Session, why string) {
	if s.Record().End() != evidence.PhaseLive {
		return
	}
	r.log.Info().Str("session_hash", sessionstore.IDHash(s.ID())).Str("reason", why).Msg("session ended on this edge")
	r.w.Sessions.Forget(s)
	r.w.Hijacks.Go(s.Close)
}

// watch follows the bucket: a session this edge serves whose record was
// deleted, expired or written by another edge ends here.
func (r *Recorder) watch(ctx context.Context, started chan<- struct{}) {
	w := newBucketWatch(r.js, r.kv.Bucket(), r.log)
	if err := w.run(ctx, started, r.observe); err != nil {
		r.log.Error().Err(err).Msg("session records: cannot watch the bucket; moved sessions are not released")
	}
}

func (r *Recorder) observe(u bucketUpdate) {
	s := r.w.Sessions.Lookup(u.key)
	if s == nil {
		return
	}
	live, rev := s.Record().Stored()
	if !live || u.rev <= rev {
		return
	}
	if u.op != jetstream.KeyValuePut {
		r.drop(s, "record deleted or expired")
		return
	}
	var who struct {
		Edge string `json:"edge"`
	}
	if json.Unmarshal(u.value, &who) == nil && who.Edge != r.w.Edge {
		r.drop(s, "taken over by edge "+who.Edge)
	}
}

// Created starts the record rec of s, a session this edge initialized at
// now, and, with a store, writes it before the initialize response
// leaves.
func (r *Recorder) Created(s *session.Session, rec sessionstore.Record, now time.Time) {
	s.Record().Create(rec, now)
	if r == nil {
		return
	}
	if err := r.Write(s, false); err != nil {
		r.log.Warn().Err(err).Str("session_hash", sessionstore.IDHash(s.ID())).Msg("session record not created; retried in the background")
		r.Enqueue(s)
	}
}

// Touched notes a request of s at now.
func (r *Recorder) Touched(s *session.Session, now time.Time) {
	s.Record().Touch(now)
	r.Enqueue(s)
}

// Deleted removes the record of session id, which its client ended (s:
// the session if this edge serves it).
func (r *Recorder) Deleted(ctx context.Context, id string, s *session.Session) {
	if s != nil {
		s.Record().End()
	}
	if r == nil {
		return
	}
	if err := r.store.Delete(ctx, id); err != nil {
		r.log.Warn().Err(err).Str("session_hash", sessionstore.IDHash(id)).Msg("session record not deleted; it expires on its own")
		return
	}
	r.written("delete")
}
