package planner

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/fleetgate/fleetgate/pkg/events"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// applied records what a Loop applied, and when (the bubble's clock).
type applied struct {
	mu    sync.Mutex
	gens  []uint64
	at    []time.Duration
	ready bool
	start time.Time
}

func (a *applied) apply(r Ready) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ready = a.ready || r.Ready
	if r.Apply {
		a.gens = append(a.gens, r.Generation)
		a.at = append(a.at, time.Since(a.start))
	}
}

func (a *applied) take() ([]uint64, []time.Duration, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	g, at := a.gens, a.at
	a.gens, a.at = nil, nil
	return g, at, a.ready
}

// TestLoopPacesBursts runs a Loop over a Memory source in a synctest
// bubble: the start-up batch, then a leading batch at once and a burst
// applied together at its window's end, from the newest state.
func TestLoopPacesBursts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := newFleet()
		src := NewMemory(nil)
		a := &applied{start: time.Now()}
		loop := &Loop{Planner: New(&Options{Group: fleetGroup, Separator: "_", Coalesce: 100 * time.Millisecond,
			Initial: emptyView()}), Source: src, Apply: a.apply}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- loop.Run(ctx) }()

		set := func(op ...string) {
			if err := fl.do(op, &Input{}); err != nil {
				t.Fatal(err)
			}
			src.Set(fl.state)
		}
		set("up", "alpha", "tools=a")
		src.MarkCaughtUp()
		synctest.Wait()
		if g, _, ready := a.take(); len(g) != 1 || g[0] != 1 || !ready {
			t.Fatalf("start-up: applied %v, ready %v; want [1], ready", g, ready)
		}

		time.Sleep(time.Second) // the bubble's clock: a quiet second
		set("up", "alpha", "tools=a,b")
		synctest.Wait()
		if g, at, _ := a.take(); len(g) != 1 || g[0] != 2 || at[0] != time.Second {
			t.Fatalf("leading batch: applied %v at %v; want [2] at 1s", g, at)
		}
		time.Sleep(10 * time.Millisecond)
		set("up", "alpha", "tools=a,b,c")
		time.Sleep(40 * time.Millisecond)
		set("up", "alpha", "tools=a,b,c,d")
		synctest.Wait()
		if g, _, _ := a.take(); len(g) != 0 {
			t.Fatalf("inside the window: applied %v; want nothing yet", g)
		}
		time.Sleep(50 * time.Millisecond)
		synctest.Wait()
		if g, at, _ := a.take(); len(g) != 1 || g[0] != 4 || at[0] != 1100*time.Millisecond {
			t.Fatalf("trailing batch: applied %v at %v; want [4] at 1.1s", g, at)
		}

		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v; want context.Canceled", err)
		}
	})
}

// TestLoopNotesEvents: events noted before their state is published ride
// with the batch that applies it.
func TestLoopNotesEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := newFleet()
		src := NewMemory(nil)
		var got []time.Time
		var mu sync.Mutex
		loop := &Loop{Planner: New(&Options{Group: fleetGroup, Separator: "_", Initial: emptyView()}), Source: src,
			Apply: func(r Ready) {
				mu.Lock()
				got = append(got, r.EventTime)
				mu.Unlock()
			}}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- loop.Run(ctx) }()
		at := time.Now().Add(-3 * time.Millisecond)
		loop.Note(Event{Generation: 1, At: at})
		if err := fl.do([]string{"up", "alpha", "tools=a"}, &Input{}); err != nil {
			t.Fatal(err)
		}
		src.Set(fl.state)
		synctest.Wait()
		mu.Lock()
		if len(got) != 1 || !got[0].Equal(at) {
			t.Errorf("event times applied %v; want [%v]", got, at)
		}
		mu.Unlock()
		cancel()
		<-done
	})
}

// TestLoopNotesEventsDuringApply: an event noted, and its state
// published, while a batch is being applied rides with the batch planned
// right after it (its time and trace context), and is never late.
func TestLoopNotesEventsDuringApply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fl := newFleet()
		src := NewMemory(nil)
		var got []Ready
		var loop *Loop
		loop = &Loop{Planner: New(&Options{Group: fleetGroup, Separator: "_", Initial: emptyView()}), Source: src,
			Apply: func(r Ready) {
				got = append(got, r)
				if r.Generation == 1 { // a change arrives meanwhile
					loop.Note(Event{Generation: 2, At: time.Now(), Trace: traceOf(7)})
					if err := fl.do([]string{"up", "alpha", "tools=a,b"}, &Input{}); err != nil {
						t.Error(err)
					}
					src.Set(fl.state)
				}
			}}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- loop.Run(ctx) }()
		if err := fl.do([]string{"up", "alpha", "tools=a"}, &Input{}); err != nil {
			t.Fatal(err)
		}
		src.Set(fl.state)
		synctest.Wait()
		cancel()
		<-done
		if len(got) != 2 || got[1].Generation != 2 || got[1].EventTime.IsZero() || traceIDs(got[1].Traced) != "7" {
			t.Fatalf("applied %d batches; the second: %s", len(got), describe(got[len(got)-1]))
		}
		for _, r := range got {
			if len(r.Late) > 0 {
				t.Fatalf("late events %s", traceIDs(r.Late))
			}
		}
	})
}

// TestMemoryWatchCoalesces: signals raised while one is pending make one.
func TestMemoryWatchCoalesces(t *testing.T) {
	src := NewMemory(&events.State{})
	ch, stop := src.Watch()
	defer stop()
	src.Set(&events.State{Generation: 1})
	src.Set(&events.State{Generation: 2})
	<-ch
	select {
	case <-ch:
		t.Fatal("two signals for two sets in a row; want one")
	default:
	}
	if got := src.State().Generation; got != 2 {
		t.Fatalf("State generation %d; want 2", got)
	}
	if src.CaughtUp() {
		t.Fatal("caught up before MarkCaughtUp")
	}
}
