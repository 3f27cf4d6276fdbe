package events

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// RelayOptions configure a Relay. A nil *RelayOptions means defaults.
type RelayOptions struct {
	Metrics *Metrics
	Logger  *zerolog.Logger
	// OnPublished is called after each event is stored, in generation
	// order, with the folded state that includes it. It must not block.
	OnPublished func(ev *eventspb.Event, s *State)
	// TracerProvider receives a span per published event (trace.go); nil:
	// the global one, a no-op unless tracing is on.
	TracerProvider trace.TracerProvider
	// AttemptTimeout bounds one publish attempt; default 5s.
	AttemptTimeout time.Duration
	// MinBackoff and MaxBackoff bound the retry delay while NATS is
	// unreachable; defaults 50ms and 2s.
	MinBackoff, MaxBackoff time.Duration
	// SnapshotEvery writes a snapshot after this many events; default 500.
	SnapshotEvery int
	// SnapshotInterval writes a snapshot this long after the last one
	// when events arrived since; default 1 minute.
	SnapshotInterval time.Duration
	// Batch is the most entries relayed before their outbox removal is
	// synced; default 64.
	Batch int
}

// Relay moves events from the outbox into the event log, in order and
// exactly once, keeps the folded state of what it published and writes
// snapshots of it.
type Relay struct {
	outbox *Outbox
	writer *Writer
	log    *Log
	opts   RelayOptions
	zl     zerolog.Logger

	state     *State
	published atomic.Pointer[State]
	// expected is the published state at start with the outbox's pending
	// entries folded in: what the log holds once they are published
	// (Expected).
	expected   atomic.Pointer[State]
	sinceSnap  int
	lastSnapAt time.Time

	tracer trace.Tracer // trace.go; traced: it records or propagates
	traced bool
}

// NewRelay returns a relay from outbox to the writer's log.
func NewRelay(outbox *Outbox, writer *Writer, o *RelayOptions) *Relay {
	r := &Relay{outbox: outbox, writer: writer, log: writer.log, zl: zerolog.Nop()}
	if o != nil {
		r.opts = *o
	}
	if r.opts.Logger != nil {
		r.zl = *r.opts.Logger
	}
	if r.opts.AttemptTimeout == 0 {
		r.opts.AttemptTimeout = 5 * time.Second
	}
	if r.opts.MinBackoff == 0 {
		r.opts.MinBackoff = 50 * time.Millisecond
	}
	if r.opts.MaxBackoff == 0 {
		r.opts.MaxBackoff = 2 * time.Second
	}
	if r.opts.SnapshotEvery == 0 {
		r.opts.SnapshotEvery = 500
	}
	if r.opts.SnapshotInterval == 0 {
		r.opts.SnapshotInterval = time.Minute
	}
	if r.opts.Batch == 0 {
		r.opts.Batch = 64
	}
	r.setTracing(r.opts.TracerProvider)
	return r
}

// Run relays until ctx ends (returning nil) or the writer is fenced
// (returning an error matching ErrFenced; the entries stay in the outbox).
func (r *Relay) Run(ctx context.Context) error {
	if err := r.start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	ticker := time.NewTicker(r.opts.SnapshotInterval)
	defer ticker.Stop()
	for {
		entries, err := r.outbox.peek(r.opts.Batch)
		if err != nil {
			return fmt.Errorf("relay: %w", err)
		}
		r.opts.Metrics.depth(r.outbox.Depth())
		if len(entries) == 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-r.outbox.wake:
			case <-ticker.C:
				r.maybeSnapshot(ctx, true)
			}
			continue
		}
		for i, e := range entries {
			if err := r.publish(ctx, e); err != nil {
				if i > 0 {
					if rerr := r.outbox.remove(entries[i-1].key, r.state.Generation); rerr != nil {
						return errors.Join(err, rerr)
					}
				}
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
		if err := r.outbox.remove(entries[len(entries)-1].key, r.state.Generation); err != nil {
			return fmt.Errorf("relay: %w", err)
		}
		r.maybeSnapshot(ctx, false)
	}
}

// start loads the published state and settles the outbox head:
//   - after a crash between a publish and the removal of its entry, the
//     stream's last message is one of the pending entries: that entry and
//     all before it are already stored and are removed;
//   - when the stream moved past the last generation this outbox stored
//     (another controller led meanwhile), the pending entries describe an
//     old term's observations: they are dropped, not published over the
//     new leader's events. The controller reconciles from current state.
func (r *Relay) start(ctx context.Context) error {
	if err := r.retry(ctx, "resync writer", func(ctx context.Context) error { return r.writer.Resync(ctx) }); err != nil {
		return err
	}
	var last *rawLast
	err := r.retry(ctx, "read stream head", func(ctx context.Context) error {
		m, err := r.log.lastMessage(ctx)
		if err == nil && m != nil {
			last = &rawLast{seq: m.Sequence, msgID: m.Header.Get("Nats-Msg-Id")}
		}
		return err
	})
	if err != nil {
		return err
	}
	if err := r.settle(last); err != nil {
		return fmt.Errorf("relay: start: %w", err)
	}
	return r.retry(ctx, "load state", func(ctx context.Context) error {
		s, err := r.log.Load(ctx)
		if err == nil {
			r.state = s
			r.published.Store(s)
			r.expected.Store(r.withPending(s))
			r.lastSnapAt = time.Now()
		}
		return err
	})
}

// withPending is s with the outbox's pending entries (those this relay is
// about to publish: a previous term's that no other writer overtook)
// folded in.
func (r *Relay) withPending(s *State) *State {
	pending, err := r.outbox.peek(r.outbox.Depth() + 1)
	if err != nil {
		return s
	}
	for _, e := range pending {
		// Numbered as they will be (the writer numbers them on publish).
		ev := proto.Clone(e.entry.Event).(*eventspb.Event)
		ev.Generation = s.Generation + 1
		if next, err := Apply(s, ev); err == nil {
			s = next
		}
	}
	return s
}

// Expected returns the state the log holds once the entries pending in
// the outbox at start are published (nil before Run has loaded it): what
// a new term reconciles from, so that it does not publish again what a
// previous term of this controller left in the outbox.
func (r *Relay) Expected() *State { return r.expected.Load() }

func (r *Relay) settle(last *rawLast) error {
	if last == nil || r.outbox.Depth() == 0 {
		return nil
	}
	pending, err := r.outbox.peek(r.outbox.Depth() + 1)
	if err != nil {
		return err
	}
	lastID, _, _ := strings.Cut(last.msgID, "/too-large-")
	for _, e := range pending {
		if e.entry.MsgId == lastID {
			r.zl.Info().Uint64("generation", last.seq).Uint64("through_key", e.key).Msg("outbox entries already stored before restart")
			return r.outbox.remove(e.key, last.seq)
		}
	}
	if stored := r.outbox.LastGeneration(); last.seq != stored {
		r.zl.Warn().Uint64("outbox_generation", stored).Uint64("stream_generation", last.seq).
			Int("dropped", len(pending)).Msg("another writer published since this outbox last did; dropping its stale entries")
		return r.outbox.remove(pending[len(pending)-1].key, last.seq)
	}
	return nil
}

// State returns the folded state of everything published so far (nil
// before Run has loaded it).
func (r *Relay) State() *State { return r.published.Load() }

type rawLast struct {
	seq   uint64
	msgID string
}

// publish stores one entry, retrying transient failures with backoff. An
// event the server cannot take for its size is replaced by its too-large
// stand-ins (see ReasonTooLarge), so that it never stays at the head of
// the outbox in front of every other backend's events.
func (r *Relay) publish(ctx context.Context, e outboxEntry) error {
	err := r.publishEvent(ctx, keepWithdrawn(r.state, e.entry.Event), e.entry.MsgId)
	if !errors.Is(err, ErrTooLarge) {
		return err
	}
	ev := e.entry.Event
	size, limit := encodedSize(ev), r.writer.MaxEventBytes()
	from := ""
	if b := r.state.Backend(ev.Group, ev.Backend); b != nil {
		from = b.Status
	}
	subs := tooLargeReplacement(ev, from, size, limit)
	r.opts.Metrics.tooLargeEvent(Kind(ev))
	r.zl.Error().Str("kind", Kind(ev)).Str("group", ev.Group).Str("backend", ev.Backend).Int("bytes", size).
		Int("limit", limit).Bool("replaced", len(subs) > 0).Msg("event larger than the NATS max_payload: not published")
	for i, sub := range subs {
		// Stand-in i reuses the entry's id with a suffix, so that a retry
		// after a lost acknowledgement is still deduplicated.
		if err := r.publishEvent(ctx, sub, fmt.Sprintf("%s/too-large-%d", e.entry.MsgId, i)); err != nil {
			return err
		}
	}
	return nil
}

// publishEvent stores one event and folds it into the state.
func (r *Relay) publishEvent(ctx context.Context, ev *eventspb.Event, msgID string) (err error) {
	var gen uint64
	if r.traced {
		sp := r.publishSpan(ev)
		defer func() { endPublish(sp, gen, err) }()
	}
	err = r.retry(ctx, "publish", func(ctx context.Context) error {
		var err error
		gen, err = r.writer.Publish(ctx, ev, msgID)
		if errors.Is(err, ErrFenced) {
			r.opts.Metrics.fencedPublish()
		}
		return err
	})
	if err != nil {
		return err
	}
	if reason := tooLargeMarkOf(ev); reason != "" && !strings.Contains(msgID, "/too-large-") {
		// A stand-in the outbox made at Append: report it here, where
		// there is a logger and metrics.
		r.opts.Metrics.tooLargeEvent(Kind(ev))
		r.zl.Error().Str("group", ev.Group).Str("backend", ev.Backend).Str("reason", reason).
			Msg("catalog event larger than the outbox limit: not published")
	}
	r.opts.Metrics.publishedEvent(Kind(ev), time.Since(ev.GetTime().AsTime()))
	next, aerr := Apply(r.state, ev)
	if aerr != nil {
		r.zl.Warn().Err(aerr).Uint64("generation", gen).Msg("published event does not apply to the fleet state")
	}
	r.state = next
	r.published.Store(next)
	r.sinceSnap++
	if r.opts.OnPublished != nil {
		r.opts.OnPublished(ev, next)
	}
	return nil
}

// retry runs f until it succeeds, fails permanently (fenced, too large) or
// ctx ends.
func (r *Relay) retry(ctx context.Context, op string, f func(context.Context) error) error {
	delay := r.opts.MinBackoff
	for {
		actx, cancel := context.WithTimeout(ctx, r.opts.AttemptTimeout)
		err := f(actx)
		cancel()
		if err == nil {
			return nil
		}
		if errors.Is(err, ErrFenced) || errors.Is(err, ErrTooLarge) {
			return fmt.Errorf("relay: %s: %w", op, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.zl.Warn().Err(err).Str("op", op).Dur("retry_in", delay.Round(time.Millisecond)).Msg("event log unavailable; events stay in the outbox")
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, r.opts.MaxBackoff)
	}
}

func (r *Relay) maybeSnapshot(ctx context.Context, timer bool) {
	if r.sinceSnap == 0 || (r.sinceSnap < r.opts.SnapshotEvery && (!timer || time.Since(r.lastSnapAt) < r.opts.SnapshotInterval)) {
		return
	}
	if err := r.log.SaveSnapshot(ctx, r.state); err != nil {
		r.zl.Warn().Err(err).Uint64("generation", r.state.Generation).Msg("snapshot not written")
		return
	}
	r.opts.Metrics.snapshot()
	r.sinceSnap = 0
	r.lastSnapAt = time.Now()
}
