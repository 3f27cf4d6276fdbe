package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of Options.
const (
	DefaultBucket      = "fleetgate_sessions"
	DefaultIdleTimeout = 30 * time.Minute
)

// markerTTL is how long the bucket keeps the marker left by an expired or
// deleted record. It does not depend on Options, so edges configured with
// different idle timeouts agree on the bucket's configuration.
const markerTTL = time.Minute

// Options configure a Store. A nil *Options means defaults.
type Options struct {
	// Bucket is the KV bucket name; default DefaultBucket.
	Bucket string
	// Replicas of the bucket's stream; default 1. Use 3 on a cluster.
	Replicas int
	// IdleTimeout is how long a record lives without a write; default
	// DefaultIdleTimeout, at least one second.
	IdleTimeout time.Duration
	// TouchEvery throttles last-seen writes (see Store.Touch); default
	// IdleTimeout/10. It must be below IdleTimeout.
	TouchEvery time.Duration
	// Metrics receives the store's measurements; nil records none.
	Metrics *Metrics
}

// Stats counts the writes a Store made, by kind.
type Stats struct {
	Creates uint64 // records created
	Updates uint64 // records replaced by Update
	Touches uint64 // last-seen writes by Touch
	Deletes uint64 // records deleted
	// SkippedTouches counts Touch calls that did not write because the
	// last write was less than TouchEvery ago.
	SkippedTouches uint64
}

// Store is the shared store of session records. It is safe for concurrent
// use; Records passed to it are not, so each request works on its own.
type Store struct {
	js         jetstream.JetStream
	kv         jetstream.KeyValue
	st         jetstream.Stream // the bucket's stream (reads of a key's last message)
	limit      int              // the largest record the bucket takes
	stream     string           // the bucket's stream, KV_<bucket>
	subject    string           // publish prefix, $KV.<bucket>.
	ttl        time.Duration
	touchEvery time.Duration
	metrics    *Metrics

	creates, updates, touches, deletes, skipped atomic.Uint64
}

// Open returns a Store on the bucket: the one the controller provisioned
// (see Provision), used as it is, or, when there is none and the client
// may create it, a new one. Every edge of a fleet opens the same bucket.
//
// Each record is written with a per-message TTL of IdleTimeout+TouchEvery
// rounded up to whole seconds, so a session expires between IdleTimeout
// and IdleTimeout+TouchEvery after its last request even though Touch
// writes at most once per TouchEvery.
func Open(ctx context.Context, js jetstream.JetStream, o *Options) (*Store, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Bucket == "" {
		opts.Bucket = DefaultBucket
	}
	if opts.Replicas == 0 {
		opts.Replicas = 1
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.TouchEvery == 0 {
		opts.TouchEvery = opts.IdleTimeout / 10
	}
	switch {
	case opts.Replicas < 0:
		return nil, fmt.Errorf("sessionstore: open bucket %q: replicas %d", opts.Bucket, opts.Replicas)
	case opts.IdleTimeout < time.Second:
		return nil, fmt.Errorf("sessionstore: open bucket %q: idle timeout %s is below 1s", opts.Bucket, opts.IdleTimeout)
	case opts.TouchEvery <= 0 || opts.TouchEvery >= opts.IdleTimeout:
		return nil, fmt.Errorf("sessionstore: open bucket %q: touch interval %s not in (0, %s)", opts.Bucket, opts.TouchEvery, opts.IdleTimeout)
	}
	kv, err := attach(ctx, js, opts)
	if err != nil {
		return nil, fmt.Errorf("sessionstore: open bucket %q: %w", opts.Bucket, err)
	}
	st, err := js.Stream(ctx, "KV_"+opts.Bucket)
	if err != nil {
		return nil, fmt.Errorf("sessionstore: open bucket %q: stream info: %w", opts.Bucket, err)
	}
	return &Store{
		js:         js,
		kv:         kv,
		st:         st,
		limit:      bucketRecordLimit(st.CachedInfo().Config),
		stream:     "KV_" + opts.Bucket,
		subject:    "$KV." + opts.Bucket + ".",
		ttl:        ceilSecond(opts.IdleTimeout + opts.TouchEvery),
		touchEvery: opts.TouchEvery,
		metrics:    opts.Metrics,
	}, nil
}

// bucketRecordLimit is the largest record a bucket of cfg takes: its
// per-message limit less the overhead Provision allows for (a bucket made
// by another client without one: MaxRecordSize).
func bucketRecordLimit(cfg jetstream.StreamConfig) int {
	limit := MaxRecordSize
	if cfg.MaxMsgSize > recordOverhead {
		limit = min(limit, int(cfg.MaxMsgSize)-recordOverhead)
	}
	return limit
}

// RecordLimit is the largest encoded record this store writes: the
// bucket's (see RecordLimit).
func (s *Store) RecordLimit() int { return s.limit }

// encode checks and encodes r under the bucket's record limit.
func (s *Store) encode(r *Record) ([]byte, error) {
	b, err := encodeRecord(r)
	if err != nil {
		return nil, err
	}
	if len(b) > s.limit {
		return nil, &TooLargeError{ID: r.ID, Size: len(b), Limit: s.limit}
	}
	return b, nil
}

// ceilSecond rounds d up to whole seconds, the resolution of message TTLs.
func ceilSecond(d time.Duration) time.Duration {
	return (d + time.Second - 1).Truncate(time.Second)
}

// Create stores a new record and returns its revision. It fails with
// ErrExists if a live record has the same id; an expired or deleted id can
// be created again.
func (s *Store) Create(ctx context.Context, r *Record) (uint64, error) {
	b, err := s.encode(r)
	if err != nil {
		return 0, s.fail(kindCreate, err)
	}
	start := time.Now()
	rev, err := s.kv.Create(ctx, r.ID, b, jetstream.KeyTTL(s.ttl))
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) || wrongLastSeq(err) {
			return 0, s.fail(kindCreate, fmt.Errorf("session %s: %w", IDHash(r.ID), ErrExists))
		}
		return 0, s.fail(kindCreate, fmt.Errorf("session %s: %w", IDHash(r.ID), err))
	}
	s.metrics.wrote(kindCreate, time.Since(start))
	s.creates.Add(1)
	return rev, nil
}

// Get returns the live record with the id and its revision, or ErrNotFound.
func (s *Store) Get(ctx context.Context, id string) (*Record, uint64, error) {
	if err := ValidateID(id); err != nil {
		return nil, 0, s.fail("get", err)
	}
	e, err := s.kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, s.fail("get", fmt.Errorf("session %s: %w", IDHash(id), ErrNotFound))
	}
	if err != nil {
		return nil, 0, s.fail("get", fmt.Errorf("session %s: %w", IDHash(id), err))
	}
	r, err := decodeRecord(id, e.Value())
	if err != nil {
		return nil, 0, s.fail("get", err)
	}
	return r, e.Revision(), nil
}

// Update replaces the record if its revision is still rev and returns the
// new revision. It fails with ErrConflict if another write came first,
// with ErrNotFound if the record was deleted, and with ErrLost if it is
// gone without a delete (evicted from a full bucket, or expired). The
// write renews the record's TTL.
func (s *Store) Update(ctx context.Context, r *Record, rev uint64) (uint64, error) {
	return s.write(ctx, kindUpdate, r, rev)
}

// Touch records a request at now. It writes r with LastSeen = now only if
// now is at least TouchEvery after r.LastSeen, so a busy session costs at
// most one write per TouchEvery; otherwise it leaves r alone and returns
// rev. It reports whether it wrote, and fails like Update (r.LastSeen is
// then left unchanged).
func (s *Store) Touch(ctx context.Context, r *Record, rev uint64, now time.Time) (uint64, bool, error) {
	if now.Sub(r.LastSeen) < s.touchEvery {
		s.skipped.Add(1)
		return rev, false, nil
	}
	prev := r.LastSeen
	r.LastSeen = now
	next, err := s.write(ctx, kindTouch, r, rev)
	if err != nil {
		r.LastSeen = prev
		return rev, false, err
	}
	return next, true, nil
}

// write stores r over revision rev with a fresh TTL. The KV Update and Put
// calls send no TTL, which leaves the key without one (nats-server#6959),
// so the write is a publish to the key's subject with both the TTL and the
// per-subject revision check.
func (s *Store) write(ctx context.Context, kind string, r *Record, rev uint64) (uint64, error) {
	b, err := s.encode(r)
	if err != nil {
		return 0, s.fail(kind, err)
	}
	if rev == 0 {
		return 0, s.fail(kind, fmt.Errorf("session %s: revision 0: %w", IDHash(r.ID), ErrConflict))
	}
	m := &nats.Msg{Subject: s.subject + r.ID, Header: nats.Header{}, Data: b}
	start := time.Now()
	ack, err := s.js.PublishMsg(ctx, m,
		jetstream.WithMsgTTL(s.ttl),
		jetstream.WithExpectLastSequencePerSubject(rev),
		jetstream.WithExpectStream(s.stream))
	if err != nil {
		if wrongLastSeq(err) {
			return 0, s.fail(kind, s.conflict(ctx, r.ID, rev))
		}
		return 0, s.fail(kind, fmt.Errorf("session %s: revision %d: %w", IDHash(r.ID), rev, err))
	}
	s.metrics.wrote(kind, time.Since(start))
	if kind == kindTouch {
		s.touches.Add(1)
	} else {
		s.updates.Add(1)
	}
	return ack.Sequence, nil
}

// conflict explains a failed revision check from the key's last message:
// a delete (ErrNotFound), none at all (ErrLost: evicted or expired), or a
// write since rev (ErrConflict).
func (s *Store) conflict(ctx context.Context, id string, rev uint64) error {
	m, err := s.st.GetLastMsgForSubject(ctx, s.subject+id)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return fmt.Errorf("session %s: revision %d: %w", IDHash(id), rev, ErrLost)
	case err != nil:
		return fmt.Errorf("session %s: revision %d: read after a failed revision check: %w", IDHash(id), rev, err)
	case m.Header.Get("KV-Operation") != "":
		return fmt.Errorf("session %s: revision %d: %w", IDHash(id), rev, ErrNotFound)
	}
	return fmt.Errorf("session %s: revision %d: %w", IDHash(id), rev, ErrConflict)
}

// Delete removes the record for every edge. Deleting a missing record is
// not an error. The marker it leaves expires on its own.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := ValidateID(id); err != nil {
		return s.fail(kindDelete, err)
	}
	start := time.Now()
	if err := s.deleteMarker(ctx, id); err != nil {
		return s.fail(kindDelete, fmt.Errorf("session %s: %w", IDHash(id), err))
	}
	s.metrics.wrote(kindDelete, time.Since(start))
	s.deletes.Add(1)
	return nil
}

// Stats returns the writes made so far.
func (s *Store) Stats() Stats {
	return Stats{
		Creates:        s.creates.Load(),
		Updates:        s.updates.Load(),
		Touches:        s.touches.Load(),
		Deletes:        s.deletes.Load(),
		SkippedTouches: s.skipped.Load(),
	}
}

func (s *Store) fail(op string, err error) error {
	s.metrics.failed(op, err)
	return fmt.Errorf("sessionstore: %s: %w", op, err)
}

// wrongLastSeq reports a failed revision check: 10071 on a single node,
// 10164 on a replicated stream.
func wrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) &&
		(apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
