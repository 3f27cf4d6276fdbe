package region

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// FollowerOptions configure a Follower. A nil *FollowerOptions means
// defaults.
type FollowerOptions struct {
	// Reader configures every regional reader (OnEvent and OnError get
	// each region's events and errors; they must not block).
	Reader *events.ReaderOptions
	// OnEvent, when set, is called with each applied event and the region
	// whose log holds it (after Reader.OnEvent, from that region's reader
	// goroutine); it must not block.
	OnEvent func(region string, ev *eventspb.Event)
	// BySequence reads the logs by sequence, without consumers: a client
	// of the edge account reading the fleet account's read services
	// (events.LogOptions.BySequence).
	BySequence bool
	// MirrorPoll is how often the info of every regional log is read, for
	// how long each mirror has been silent (Mirrors); default
	// DefaultMirrorPoll. StaleAfter is the bound Mirrors judges it by;
	// default DefaultStaleAfter.
	MirrorPoll, StaleAfter time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// DefaultMirrorPoll is how often a Follower reads its logs' info.
const DefaultMirrorPoll = time.Second

// Follower follows every region's event log in one region's JetStream:
// the local region's own stream and the mirrors of the others. Its View
// merges the regional states.
type Follower struct {
	js      jetstream.JetStream
	regions []string
	opts    FollowerOptions

	mu       sync.Mutex
	readers  map[string]*events.Reader
	mirrors  map[string]MirrorState
	watchers map[chan struct{}]struct{}
	started  chan struct{}

	// The last merge (View): its regional states and what it gave, so
	// that the same states give the same *events.State (a driver tells a
	// new state from the last by identity).
	viewMu   sync.Mutex
	lastIn   map[string]*events.State
	lastView merged
	empty    *events.State // of a region whose log is not attached yet
}

// merged is what Merge gave.
type merged struct {
	state     *events.State
	vector    Vector
	conflicts []Conflict
}

// NewFollower returns a follower of regions (the local one included) in
// js; call Run to start it.
func NewFollower(js jetstream.JetStream, regions []string, o *FollowerOptions) (*Follower, error) {
	if len(regions) == 0 || len(regions) > MaxRegions {
		return nil, fmt.Errorf("%w: follow %d regions, want 1..%d", ErrName, len(regions), MaxRegions)
	}
	for _, r := range regions {
		if err := CheckName(r); err != nil {
			return nil, err
		}
	}
	f := &Follower{js: js, regions: slices.Sorted(slices.Values(regions)), readers: map[string]*events.Reader{},
		mirrors: map[string]MirrorState{}, watchers: map[chan struct{}]struct{}{}, started: make(chan struct{}), empty: events.NewState()}
	if o != nil {
		f.opts = *o
	}
	if f.opts.MirrorPoll <= 0 {
		f.opts.MirrorPoll = DefaultMirrorPoll
	}
	if f.opts.Now == nil {
		f.opts.Now = time.Now
	}
	return f, nil
}

// Run attaches every regional log (waiting for the local mirrors to
// exist) and follows them until ctx ends; it returns nil then.
func (f *Follower) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { f.pollMirrors(ctx) })
	for _, r := range f.regions {
		lo := LogOptions(r, 0)
		if f.opts.BySequence {
			if lo == nil {
				lo = &events.LogOptions{}
			}
			lo.BySequence = true
		}
		log, err := events.AttachLog(ctx, f.js, lo)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("follow region %s: %w", r, err)
		}
		rd := events.NewReader(log, f.readerOptions(r))
		f.mu.Lock()
		f.readers[r] = rd
		f.mu.Unlock()
		ch, stop := rd.Watch()
		wg.Add(2)
		go func() {
			defer wg.Done()
			_ = rd.Run(ctx)
		}()
		go func() {
			defer wg.Done()
			defer stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-ch:
					f.notify()
				}
			}
		}()
	}
	close(f.started)
	<-ctx.Done()
	return nil
}

// readerOptions are the options of region r's reader: the shared ones,
// with OnEvent naming r.
func (f *Follower) readerOptions(r string) *events.ReaderOptions {
	var o events.ReaderOptions
	if f.opts.Reader != nil {
		o = *f.opts.Reader
	}
	if on, each := f.opts.OnEvent, o.OnEvent; on != nil {
		o.OnEvent = func(ev *eventspb.Event, s *events.State) {
			if each != nil {
				each(ev, s)
			}
			on(r, ev)
		}
	}
	return &o
}

// CaughtUp reports whether every regional log is attached and its reader
// has caught up with it (a mirror: with what the region holds of it).
func (f *Follower) CaughtUp() bool {
	select {
	case <-f.started:
	default:
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.regions {
		if !f.readers[r].CaughtUp() {
			return false
		}
	}
	return true
}

// WaitCaughtUp blocks until CaughtUp or ctx ends.
func (f *Follower) WaitCaughtUp(ctx context.Context) error {
	if err := f.WaitStarted(ctx); err != nil {
		return err
	}
	f.mu.Lock()
	readers := make([]*events.Reader, 0, len(f.regions))
	for _, r := range f.regions {
		readers = append(readers, f.readers[r])
	}
	f.mu.Unlock()
	for _, rd := range readers {
		if err := rd.WaitCaughtUp(ctx); err != nil {
			return err
		}
	}
	return nil
}

// State is the merged view's state (View without the vector and the
// conflicts: the vector is its Regions).
func (f *Follower) State() *events.State {
	st, _, _ := f.View()
	return st
}

// WaitStarted blocks until every regional log is attached or ctx ends.
func (f *Follower) WaitStarted(ctx context.Context) error {
	select {
	case <-f.started:
		return nil
	case <-ctx.Done():
		return errors.Join(errors.New("region follower: not started"), ctx.Err())
	}
}

func (f *Follower) notify() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Watch returns a channel signalled whenever any region's state moved on
// (signals coalesce: read View after each) and a func to stop watching.
func (f *Follower) Watch() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	f.watchers[ch] = struct{}{}
	f.mu.Unlock()
	return ch, func() {
		f.mu.Lock()
		delete(f.watchers, ch)
		f.mu.Unlock()
	}
}

// States returns each region's current state (empty for a region not yet
// attached).
func (f *Follower) States() map[string]*events.State {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]*events.State, len(f.regions))
	for _, r := range f.regions {
		if rd := f.readers[r]; rd != nil {
			out[r] = rd.State()
		} else {
			out[r] = f.empty
		}
	}
	return out
}

// View returns the merged view, the vector it reflects and the conflicts
// the merge resolved.
//
// While no regional state changes, View gives the same state (the same
// pointer) and copies of the same vector and conflicts.
func (f *Follower) View() (*events.State, Vector, []Conflict) {
	in := f.States()
	f.viewMu.Lock()
	defer f.viewMu.Unlock()
	if f.lastView.state == nil || !maps.Equal(in, f.lastIn) {
		st, v, c := Merge(in)
		f.lastIn, f.lastView = in, merged{st, v, c}
	}
	return f.lastView.state, maps.Clone(f.lastView.vector), slices.Clone(f.lastView.conflicts)
}
