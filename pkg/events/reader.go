package events

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// ReaderOptions configure a Reader. A nil *ReaderOptions means defaults.
type ReaderOptions struct {
	Metrics *Metrics
	// OnEvent is called from the reader's goroutine after each event is
	// applied, with the state that includes it, before that state is
	// published: a watcher that sees the state finds what OnEvent noted
	// of its events. It must not block.
	OnEvent func(ev *eventspb.Event, s *State)
	// OnError receives events that could not be decoded or applied and
	// purge gaps; the reader carries on. It must not block.
	OnError func(err error)
	// RetryDelay is the pause before re-subscribing after a failure;
	// default 250ms.
	RetryDelay time.Duration
}

// Reader follows the event log for a consumer (an edge, a controller
// standby): it loads the latest snapshot, follows the stream from the next
// generation with an ordered consumer and keeps the folded State current.
type Reader struct {
	log  *Log
	opts ReaderOptions

	state    atomic.Pointer[State]
	caughtUp atomic.Bool
	ready    chan struct{}
	once     sync.Once

	mu       sync.Mutex
	watchers map[chan struct{}]struct{}
}

// NewReader returns a reader of log; call Run to start it.
func NewReader(log *Log, o *ReaderOptions) *Reader {
	r := &Reader{log: log, ready: make(chan struct{}), watchers: map[chan struct{}]struct{}{}}
	if o != nil {
		r.opts = *o
	}
	if r.opts.RetryDelay == 0 {
		r.opts.RetryDelay = 250 * time.Millisecond
	}
	r.state.Store(NewState())
	return r
}

// State returns the current folded state (immutable; safe to share).
func (r *Reader) State() *State { return r.state.Load() }

// CaughtUp reports whether the reader has reached the stream head once.
func (r *Reader) CaughtUp() bool { return r.caughtUp.Load() }

// WaitCaughtUp blocks until the reader has caught up or ctx ends.
func (r *Reader) WaitCaughtUp(ctx context.Context) error {
	select {
	case <-r.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Watch returns a channel that receives a value whenever the state moved
// on (signals coalesce: read State after each one) and a func to stop
// watching.
func (r *Reader) Watch() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	r.mu.Lock()
	r.watchers[ch] = struct{}{}
	r.mu.Unlock()
	return ch, func() {
		r.mu.Lock()
		delete(r.watchers, ch)
		r.mu.Unlock()
	}
}

func (r *Reader) publish(s *State) {
	r.state.Store(s)
	r.mu.Lock()
	for ch := range r.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	r.mu.Unlock()
}

func (r *Reader) markCaughtUp() {
	r.caughtUp.Store(true)
	r.once.Do(func() { close(r.ready) })
}

// Run follows the log until ctx ends; it returns nil then. Failures of the
// subscription are retried; they never end Run.
func (r *Reader) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		if err := r.loadSnapshot(ctx); err != nil {
			r.report(err)
		} else {
			err := r.follow(ctx)
			var gap *gapError
			switch {
			case ctx.Err() != nil:
				return nil
			case errors.As(err, &gap):
				r.resnapshot(ctx, gap)
				continue
			case err != nil:
				r.report(err)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(r.opts.RetryDelay):
		}
	}
	return nil
}

func (r *Reader) report(err error) {
	if r.opts.OnError != nil {
		r.opts.OnError(err)
	}
}

// loadSnapshot adopts the stored snapshot when it is ahead of the state.
func (r *Reader) loadSnapshot(ctx context.Context) error {
	snap, err := r.log.LoadSnapshot(ctx)
	if err != nil {
		return err
	}
	if snap != nil && snap.Generation > r.State().Generation {
		r.publish(snap)
	}
	return nil
}

// resnapshot recovers from a purge gap: a snapshot covering the gap is
// adopted; without one the missing events are reported and skipped.
func (r *Reader) resnapshot(ctx context.Context, gap *gapError) {
	r.opts.Metrics.gap()
	snap, err := r.log.LoadSnapshot(ctx)
	if err == nil && snap != nil && snap.Generation >= gap.to {
		if snap.Generation > r.State().Generation {
			r.publish(snap)
		}
		return
	}
	r.report(errorf(CodePurged, gap.from, err, "events %d..%d were purged and no snapshot covers them; state skips them", gap.from, gap.to))
	r.publish(Skip(r.State(), gap.to))
}

// follow consumes the stream from the state's next generation until ctx
// ends, the subscription fails or a gap shows up.
func (r *Reader) follow(ctx context.Context) error {
	from := r.State().Generation + 1
	_, last, err := r.log.Bounds(ctx)
	if err != nil {
		return err
	}
	if last < from {
		r.markCaughtUp()
	}
	return r.log.scan(ctx, from, func(seq uint64, data []byte, md *jetstream.MsgMetadata) (bool, error) {
		s := r.State()
		next, ev, err := fold(s, seq, data, r.opts.Metrics, r.report)
		if err != nil {
			return false, err
		}
		if next == s {
			return true, nil
		}
		if r.opts.OnEvent != nil && ev != nil {
			r.opts.OnEvent(ev, next)
		}
		r.publish(next)
		r.opts.Metrics.appliedGeneration(seq, md.Timestamp, time.Now())
		if md.NumPending == 0 {
			r.markCaughtUp()
		}
		return true, nil
	})
}

// gapError reports that events from..to are missing from the stream.
type gapError struct{ from, to uint64 }

func (g *gapError) Error() string { return fmt.Sprintf("events %d..%d missing", g.from, g.to) }

// fold applies the message at seq to s and returns the new state and the
// decoded event (nil when it could not be decoded). It returns s itself for
// a redelivered event and a *gapError when seq skips generations.
func fold(s *State, seq uint64, data []byte, m *Metrics, report func(error)) (*State, *eventspb.Event, error) {
	switch {
	case seq <= s.Generation:
		return s, nil, nil
	case seq > s.Generation+1:
		return nil, nil, &gapError{from: s.Generation + 1, to: seq - 1}
	}
	ev, err := Decode(seq, data)
	if err != nil {
		m.decodeError()
		if report != nil {
			report(err)
		}
		return Skip(s, seq), nil, nil
	}
	next, err := Apply(s, ev)
	if err != nil {
		m.invalidEvent()
		if report != nil {
			report(err)
		}
	}
	return next, ev, nil
}
