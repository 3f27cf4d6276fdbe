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
	// Apply applies a Ready with Apply or Ready set (package doc). It
	// runs on the loop's goroutine.
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
		in := Input{Events: l.takeNoted(), CaughtUp: l.Source.CaughtUp(), State: l.Source.State()}
		r := l.Planner.Step(now(), in)
		for r.Apply || r.Ready {
			l.Apply(r)
			if !r.Apply {
				break
			}
			r = l.Planner.Step(now(), Input{Applied: true, State: l.Source.State()})
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
