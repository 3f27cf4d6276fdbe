package records

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// bucketUpdate is one change of a key of the bucket.
type bucketUpdate struct {
	key   string
	rev   uint64 // the stream sequence, the entry's revision
	op    jetstream.KeyValueOp
	value []byte
}

// Tuning of the bucket watch's consumer.
const (
	// kvOperation is the header of a KV delete or purge.
	kvOperation = "KV-Operation"

	// watchHeartbeat is the consumer's idle heartbeat: two missed mean
	// the consumer is gone (the server removed it while the edge was
	// away) and a new one starts where the last left off.
	watchHeartbeat = 5 * time.Second
	// watchInactive is how long the server keeps the consumer once
	// nobody listens: the edge stopped, or lost its connection for
	// longer than this.
	watchInactive = 30 * time.Second
	// watchRetry is the pause before a failed consumer is recreated.
	watchRetry = time.Second
)

// bucketWatch follows the updates of a KV bucket from the moment it
// starts, in order, with an ephemeral push consumer it creates itself.
//
// It replaces jetstream.KeyValue.WatchAll, whose consumer nats.go deletes
// when the watch stops: an edge may create consumers on the session
// bucket but not delete them (package natsnode: ephemeral consumers
// expire on their own), so every clean stop of an edge logged a
// permission violation. This consumer is never deleted by the edge: when
// the edge stops listening, the server removes it after watchInactive.
type bucketWatch struct {
	js     jetstream.JetStream
	stream string // KV_<bucket>
	prefix string // $KV.<bucket>.
	log    zerolog.Logger
	// heartbeat and retry are watchHeartbeat and watchRetry (tests
	// shorten them).
	heartbeat, retry time.Duration

	// next is the first stream sequence not yet delivered (0: from now).
	next uint64
}

func newBucketWatch(js jetstream.JetStream, bucket string, log zerolog.Logger) *bucketWatch {
	return &bucketWatch{js: js, stream: "KV_" + bucket, prefix: "$KV." + bucket + ".", log: log,
		heartbeat: watchHeartbeat, retry: watchRetry}
}

// errWatchRestart ends one consumer of the watch: it is recreated from
// the first update not delivered.
var errWatchRestart = errors.New("bucket watch: consumer restarts")

// run delivers every update to on until ctx ends. started is closed once
// the first consumer follows the bucket (or could not be created: the
// error is then returned, as WatchAll's was).
func (w *bucketWatch) run(ctx context.Context, started chan<- struct{}, on func(bucketUpdate)) error {
	var once sync.Once
	ready := func() { once.Do(func() { close(started) }) }
	defer ready()
	for followed := false; ; {
		err := w.follow(ctx, func() { followed = true; ready() }, on)
		switch {
		case ctx.Err() != nil:
			return nil
		case !followed:
			return err
		}
		w.log.Debug().Err(err).Uint64("from", w.next).Msg("session records: bucket watch restarts")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(w.retry):
		}
	}
}

// follow runs one consumer until ctx ends or the consumer fails.
func (w *bucketWatch) follow(ctx context.Context, ready func(), on func(bucketUpdate)) error {
	cfg := jetstream.ConsumerConfig{
		DeliverSubject:    w.js.Conn().NewInbox(),
		DeliverPolicy:     jetstream.DeliverNewPolicy,
		AckPolicy:         jetstream.AckNonePolicy,
		FilterSubject:     w.prefix + ">",
		FlowControl:       true,
		IdleHeartbeat:     w.heartbeat,
		InactiveThreshold: watchInactive,
		MemoryStorage:     true,
		Replicas:          1,
	}
	if w.next > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, w.next
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	cons, err := w.js.CreatePushConsumer(cctx, w.stream, cfg)
	cancel()
	if err != nil {
		return fmt.Errorf("bucket watch on %s: %w", w.stream, err)
	}
	if w.next == 0 {
		// From now: the first update is the one after the stream's last.
		w.next = cons.CachedInfo().Delivered.Stream + 1
	}
	updates := make(chan bucketUpdate, 256)
	failed := make(chan error, 1)
	// over ends the handler's sends once this consumer is given up.
	over := make(chan struct{})
	defer close(over)
	fail := func(err error) {
		select {
		case failed <- err:
		default:
		}
	}
	var consumerSeq uint64 // the consumer sequence of the last message
	var mu sync.Mutex      // the handler runs on the subscription's goroutine
	cc, err := cons.Consume(func(m jetstream.Msg) {
		meta, err := m.Metadata()
		if err != nil {
			return
		}
		mu.Lock()
		gap := meta.Sequence.Consumer != consumerSeq+1
		if !gap {
			consumerSeq = meta.Sequence.Consumer
		}
		mu.Unlock()
		if gap {
			// A message was lost: start again after the last delivered.
			fail(fmt.Errorf("%w: consumer sequence %d after %d", errWatchRestart, meta.Sequence.Consumer, consumerSeq))
			return
		}
		subj := m.Subject()
		if len(subj) <= len(w.prefix) {
			return
		}
		u := bucketUpdate{key: subj[len(w.prefix):], rev: meta.Sequence.Stream, op: jetstream.KeyValuePut, value: m.Data()}
		h := m.Headers()
		switch {
		case h.Get(kvOperation) == "DEL":
			u.op = jetstream.KeyValueDelete
		case h.Get(kvOperation) == "PURGE":
			u.op = jetstream.KeyValuePurge
		case h.Get(jetstream.MarkerReasonHeader) == "Remove":
			u.op = jetstream.KeyValueDelete
		case h.Get(jetstream.MarkerReasonHeader) != "": // MaxAge (a TTL expired), Purge
			u.op = jetstream.KeyValuePurge
		}
		select {
		case updates <- u:
		case <-over:
		}
	}, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if errors.Is(err, jetstream.ErrNoHeartbeat) || errors.Is(err, jetstream.ErrConsumerDeleted) {
			fail(fmt.Errorf("%w: %w", errWatchRestart, err))
		}
	}))
	if err != nil {
		return fmt.Errorf("bucket watch on %s: %w", w.stream, err)
	}
	// Unsubscribe only: the consumer is not deleted (see bucketWatch).
	defer cc.Stop()
	ready()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-failed:
			return err
		case u := <-updates:
			w.next = u.rev + 1
			on(u)
		}
	}
}
