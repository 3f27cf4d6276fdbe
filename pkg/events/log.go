package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// DefaultMaxBytes bounds the event stream: far more than a fleet's
// 30 days of events, and with the session bucket and the call trail (256
// MiB each) within an embedded node's 1 GiB store.
const DefaultMaxBytes = 256 << 20

// LogOptions configure the JetStream event log. A nil *LogOptions means
// defaults.
type LogOptions struct {
	// Stream is the stream name; default "FLEETGATE_EVENTS".
	Stream string
	// SubjectPrefix; events go to <prefix>.<group>.<backend>. Default
	// "fleetgate.events".
	SubjectPrefix string
	// Replicas is a deployment setting: 1 on one node, 3 on a cluster.
	// Default 1.
	Replicas int
	// MaxAge is the event retention; default 30 days. Snapshots cover
	// events retention has removed.
	MaxAge time.Duration
	// Duplicates is the deduplication window; it must exceed the longest
	// NATS outage plus retry time. Default 10 minutes.
	Duplicates time.Duration
	// SnapshotBucket is the KV bucket for folded-state snapshots; default
	// "fleetgate_snapshots".
	SnapshotBucket string
	// MaxBytes bounds the event stream (the oldest events go first, as
	// with MaxAge); default DefaultMaxBytes, -1 unlimited. Every stream on
	// a JetStream store needs a bound, or one of them can fill the store
	// and stop all the others.
	MaxBytes int64
	// SnapshotHistory is how many snapshots the bucket keeps for replay;
	// default 16 (at most 64).
	SnapshotHistory int
	// BySequence reads the log by sequence, with no consumer: the way an
	// edge reads it through the fleet account's read services
	// (natsnode.FleetAPIPrefix), which offer no consumer. The event
	// subjects, when they reach the client, only wake the reader, which
	// then reads what is new from the stream; it also polls every
	// PollInterval. A message on those subjects is never taken for an
	// event.
	BySequence bool
	// PollInterval is how often a BySequence reader looks for new events
	// without a wake-up; default 1s.
	PollInterval time.Duration
}

func (o *LogOptions) withDefaults() LogOptions {
	var c LogOptions
	if o != nil {
		c = *o
	}
	if c.Stream == "" {
		c.Stream = "FLEETGATE_EVENTS"
	}
	if c.SubjectPrefix == "" {
		c.SubjectPrefix = "fleetgate.events"
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.MaxAge == 0 {
		c.MaxAge = 30 * 24 * time.Hour
	}
	if c.Duplicates == 0 {
		c.Duplicates = 10 * time.Minute
	}
	if c.SnapshotBucket == "" {
		c.SnapshotBucket = "fleetgate_snapshots"
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.SnapshotHistory == 0 {
		c.SnapshotHistory = 16
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	return c
}

// Log is the generation-numbered event log: a JetStream stream whose
// sequence is the generation, plus a KV bucket of folded-state snapshots.
type Log struct {
	js        jetstream.JetStream
	stream    jetstream.Stream
	snapshots jetstream.KeyValue
	opts      LogOptions
}

// OpenLog creates or updates the stream and the snapshot bucket.
func OpenLog(ctx context.Context, js jetstream.JetStream, o *LogOptions) (*Log, error) {
	opts := o.withDefaults()
	cfg := jetstream.StreamConfig{
		Name:        opts.Stream,
		Description: "fleetgate events; sequence = generation",
		Subjects:    []string{opts.SubjectPrefix + ".>"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Discard:     jetstream.DiscardOld,
		MaxAge:      opts.MaxAge,
		MaxBytes:    opts.MaxBytes,
		Duplicates:  opts.Duplicates,
		Replicas:    opts.Replicas,
	}
	st, err := retryCreate(ctx, func(ctx context.Context) (jetstream.Stream, error) {
		return js.CreateOrUpdateStream(ctx, cfg)
	})
	if err != nil {
		return nil, fmt.Errorf("open event log: stream %s: %w", opts.Stream, err)
	}
	kv, err := retryCreate(ctx, func(ctx context.Context) (jetstream.KeyValue, error) {
		return js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      opts.SnapshotBucket,
			Description: "fleetgate folded state snapshots",
			History:     uint8(min(opts.SnapshotHistory, 64)),
			Replicas:    opts.Replicas,
			Storage:     jetstream.FileStorage,
		})
	})
	if err != nil {
		return nil, fmt.Errorf("open event log: snapshot bucket %s: %w", opts.SnapshotBucket, err)
	}
	return &Log{js: js, stream: st, snapshots: kv, opts: opts}, nil
}

// AttachLog opens an existing event log without creating or changing it:
// readers (edges, audits) use it so that their options never alter the
// writer's stream. It waits, retrying, until ctx ends for the stream and
// the snapshot bucket to exist.
func AttachLog(ctx context.Context, js jetstream.JetStream, o *LogOptions) (*Log, error) {
	opts := o.withDefaults()
	for {
		st, err := js.Stream(ctx, opts.Stream)
		if err == nil {
			kv, kerr := js.KeyValue(ctx, opts.SnapshotBucket)
			if kerr == nil {
				return &Log{js: js, stream: st, snapshots: kv, opts: opts}, nil
			}
			err = kerr
		}
		if !errors.Is(err, jetstream.ErrStreamNotFound) && !errors.Is(err, jetstream.ErrBucketNotFound) && !retryable(err) {
			return nil, fmt.Errorf("attach event log %s: %w", opts.Stream, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("attach event log %s: %w (last error: %v)", opts.Stream, ctx.Err(), err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// retryCreate retries an idempotent create call with short timeouts: a
// freshly formed cluster may not answer the first requests.
func retryCreate[T any](ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	var zero T
	var last error
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		v, err := f(cctx)
		cancel()
		if err == nil {
			return v, nil
		}
		last = err
		if ctx.Err() != nil || attempt >= 15 || !retryable(err) {
			return zero, last
		}
		select {
		case <-ctx.Done():
			return zero, last
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func retryable(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled) || isAPICode(err, 10008 /* cluster not available */)
}

func isAPICode(err error, codes ...jetstream.ErrorCode) bool {
	var api *jetstream.APIError
	if !errors.As(err, &api) {
		return false
	}
	for _, c := range codes {
		if api.ErrorCode == c {
			return true
		}
	}
	return false
}

// Subject is the subject of an event of group/backend.
// A fleet-wide event (PolicyChanged: no group, no backend) goes to
// <prefix>._fleet, a name no group can take, and a group-wide one
// (NamingChanged: no backend) to <prefix>.<group>._group, a name no
// backend can take.
func (l *Log) Subject(group, backend string) string {
	if group == "" && backend == "" {
		return l.opts.SubjectPrefix + "._fleet"
	}
	if backend == "" {
		return l.opts.SubjectPrefix + "." + group + "._group"
	}
	return l.opts.SubjectPrefix + "." + group + "." + backend
}

// Options returns the log's effective options.
func (l *Log) Options() LogOptions { return l.opts }

// Stream exposes the underlying stream.
func (l *Log) Stream() jetstream.Stream { return l.stream }

// Bounds returns the first and last generation held by the stream. An empty
// stream has last = first-1.
func (l *Log) Bounds(ctx context.Context) (first, last uint64, err error) {
	info, err := l.stream.Info(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("event log %s: info: %w", l.opts.Stream, err)
	}
	return info.State.FirstSeq, info.State.LastSeq, nil
}

// LastGeneration returns the generation of the last event stored.
func (l *Log) LastGeneration(ctx context.Context) (uint64, error) {
	_, last, err := l.Bounds(ctx)
	return last, err
}

// lastMessage returns the last stored message, or nil for an empty stream.
func (l *Log) lastMessage(ctx context.Context) (*jetstream.RawStreamMsg, error) {
	m, err := l.stream.GetLastMsgForSubject(ctx, l.opts.SubjectPrefix+".>")
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("event log %s: last message: %w", l.opts.Stream, err)
	}
	return m, nil
}

// Event reads and decodes the event at generation gen.
func (l *Log) Event(ctx context.Context, gen uint64) (*eventspb.Event, error) {
	m, err := l.stream.GetMsg(ctx, gen)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, errorf(CodePurged, gen, err, "read event")
	}
	if err != nil {
		return nil, fmt.Errorf("read event %d: %w", gen, err)
	}
	return Decode(gen, m.Data)
}
