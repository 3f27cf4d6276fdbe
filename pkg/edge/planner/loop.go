package planner

import (
	"context"
	"sync"
	"time"

	"github.com/fleetgate/fleetgate/pkg/events"
)

// Source is what a Loop follows: the fleet state folded from the event
// log (events.Reader), or merged from the regional logs
// (region.Follower), or held in memory (Memory).
type Source interface {
	// Watch returns a channel signalled (coalesced) whenever State moves
	// on, and a func that stops the watch.
	Watch() (<-chan struct{}, func())
	State() *events.State
	CaughtUp() bool
	// WaitCaughtUp returns nil once the source caught up, or ctx's error.
	WaitCaughtUp(ctx context.Context) error
}

var (
	_ Source = (*events.Reader)(nil)
	_ Source = (*Memory)(nil)
)

// Loop drives a Planner over a Source: it steps the planner on each
// signal of the source, each event noted and each wake-up the planner
// asked for, and gives each Ready to Apply. It reads the clock (Now) and
// owns one timer; everything it decides is the planner's.
type Loop struct {
	Planner *Planner
	Source  Source
	// Apply applies a Ready with Apply or Ready set, or Late events
	// (package doc). It runs on the loop's goroutine.
	Apply func(Ready)
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu    sync.Mutex
	noted []Event
}

// Note records an event of the group read from a log, for the next step.
// Safe for concurrent use (a reader's OnEvent calls it, before the state
// that holds the event is published); it never blocks on the loop.
func (l *Loop) Note(ev Event) {
	l.mu.Lock()
	if len(l.noted) < MaxEvents {
		l.noted = append(l.noted, ev)
	}
	l.mu.Unlock()
}

// takeNoted returns the events noted since the previous call.
func (l *Loop) takeNoted() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	evs := l.noted
	l.noted = nil
	return evs
}

// Run steps the planner until ctx ends. It returns ctx's error, after
// its goroutine (the wait for the source's catch-up) ended.
func (l *Loop) Run(ctx context.Context) error {
	now := l.Now
	if now == nil {
		now = time.Now
	}
	watch, stop := l.Source.Watch()
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	caught := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		if l.Source.WaitCaughtUp(ctx) == nil {
			close(caught)
		}
	})
	defer wg.Wait()
	defer cancel()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var wake <-chan time.Time
	// The state may have moved on before the watch began: the first step
	// reads it as if signalled.
	started := make(chan struct{})
	close(started)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-started:
			started = nil
		case <-watch:
		case <-caught:
			caught = nil
		case <-wake:
			wake = nil
		}
		// The state read below covers any signal raised so far.
		select {
		case <-watch:
		default:
		}
		// The state is read before the events are taken: a source notes
		// an event before it publishes the state holding it, so every
		// event the state reflects is among those taken.
		st := l.Source.State()
		in := Input{State: st, Events: l.takeNoted(), CaughtUp: l.Source.CaughtUp()}
		r := l.Planner.Step(now(), in)
		for r.Apply || r.Ready || len(r.Late) > 0 {
			l.Apply(r)
			if !r.Apply {
				break
			}
			// What came during the apply is planned now: its events too.
			st = l.Source.State()
			r = l.Planner.Step(now(), Input{Applied: true, State: st, Events: l.takeNoted()})
		}
		if r.Wake.IsZero() {
			timer.Stop()
			wake = nil
		} else {
			timer.Reset(r.Wake.Sub(now()))
			wake = timer.C
		}
	}
}

// Memory is a Source held in memory, for tests and simulations: Set
// publishes a state and signals the watchers, as an events.Reader does
// after folding an event. Safe for concurrent use.
type Memory struct {
	mu       sync.Mutex
	state    *events.State
	caught   bool
	caughtCh chan struct{}
	watchers map[chan struct{}]struct{}
}

// NewMemory returns a source holding st (nil: none yet), not caught up.
func NewMemory(st *events.State) *Memory {
	return &Memory{state: st, caughtCh: make(chan struct{}), watchers: map[chan struct{}]struct{}{}}
}

// Set publishes st and signals every watcher.
func (m *Memory) Set(st *events.State) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state = st
	m.signalLocked()
}

// MarkCaughtUp marks the source caught up (once; later calls do nothing).
func (m *Memory) MarkCaughtUp() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.caught {
		m.caught = true
		close(m.caughtCh)
		m.signalLocked()
	}
}

func (m *Memory) signalLocked() {
	for ch := range m.watchers {
		select {
		case ch <- struct{}{}:
		default: // a signal is pending already: it covers this one
		}
	}
}

// Watch returns a channel signalled whenever the state moves on.
func (m *Memory) Watch() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	m.mu.Lock()
	m.watchers[ch] = struct{}{}
	m.mu.Unlock()
	return ch, func() {
		m.mu.Lock()
		delete(m.watchers, ch)
		m.mu.Unlock()
	}
}

// State is the state last set.
func (m *Memory) State() *events.State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state
}

// CaughtUp reports whether MarkCaughtUp was called.
func (m *Memory) CaughtUp() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.caught
}

// WaitCaughtUp returns nil once MarkCaughtUp was called, or ctx's error.
func (m *Memory) WaitCaughtUp(ctx context.Context) error {
	select {
	case <-m.caughtCh:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
