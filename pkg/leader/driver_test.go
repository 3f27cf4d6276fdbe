package leader

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// memStore is an in-memory lease key with revisions and compare-and-set,
// shared by the electors of a synctest bubble.
type memStore struct {
	mu    sync.Mutex
	seq   uint64 // last revision written (never decreases)
	cur   uint64 // revision of the live lease; 0 when absent
	lease Lease
}

func (s *memStore) Get(ctx context.Context) (Observation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == 0 {
		return Observation{}, errNoLease
	}
	return Observation{Found: true, Revision: s.cur, Lease: s.lease}, nil
}

func (s *memStore) write(ctx context.Context, l Lease, expect uint64) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != expect {
		return 0, fmt.Errorf("at revision %d, want %d: %w", s.cur, expect, errConflict)
	}
	s.seq++
	s.cur, s.lease = s.seq, l
	return s.cur, nil
}

func (s *memStore) Create(ctx context.Context, l Lease) (uint64, error) { return s.write(ctx, l, 0) }

func (s *memStore) Update(ctx context.Context, l Lease, rev uint64) (uint64, error) {
	if rev == 0 {
		return 0, errConflict
	}
	return s.write(ctx, l, rev)
}

func (s *memStore) Delete(ctx context.Context, rev uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != rev {
		return errConflict
	}
	s.seq++
	s.cur = 0
	return nil
}

// recorder collects an elector's callbacks with the (bubble) time.
type recorder struct {
	mu      sync.Mutex
	elected []uint64
	lost    []uint64
	at      time.Time // time of the last election
}

func (r *recorder) options(ttl time.Duration) *Options {
	return &Options{TTL: ttl,
		OnElected: func(term uint64) {
			r.mu.Lock()
			r.elected, r.at = append(r.elected, term), time.Now()
			r.mu.Unlock()
		},
		OnLost: func(term uint64) {
			r.mu.Lock()
			r.lost = append(r.lost, term)
			r.mu.Unlock()
		},
	}
}

func (r *recorder) snapshot() (elected, lost []uint64, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]uint64(nil), r.elected...), append([]uint64(nil), r.lost...), r.at
}

// bubbleElector starts an elector on s; stop cancels it and waits for Run.
type bubbleElector struct {
	e      *Elector
	rec    *recorder
	cancel context.CancelFunc
	done   chan struct{}
}

func startBubble(t *testing.T, s store, id string, ttl time.Duration, hook func(*Elector)) *bubbleElector {
	rec := &recorder{}
	e, err := newElector(id, rec.options(ttl))
	if err != nil {
		t.Fatal(err)
	}
	if hook != nil {
		hook(e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &bubbleElector{e: e, rec: rec, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(b.done); _ = e.drive(ctx, s) }()
	t.Cleanup(b.stop) // inside the bubble, also when the test fails
	return b
}

func (b *bubbleElector) stop() { b.cancel(); <-b.done }

func leading(bs ...*bubbleElector) []string {
	var ids []string
	for _, b := range bs {
		if _, ok := b.e.Leader(); ok {
			ids = append(ids, b.e.id)
		}
	}
	return ids
}

// TestDriverHandoff checks, in fake time, that of two electors exactly one
// leads and that a graceful stop hands over within one poll (TTL/4).
func TestDriverHandoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = time.Second
		s := &memStore{}
		a := startBubble(t, s, "a", ttl, nil)
		synctest.Wait()
		b := startBubble(t, s, "b", ttl, nil)
		for range 10 { // across several renewals
			time.Sleep(ttl / 2)
			synctest.Wait()
			if ids := leading(a, b); len(ids) != 1 || ids[0] != "a" {
				t.Fatalf("leaders %v, want [a]", ids)
			}
		}
		stopped := time.Now()
		a.stop()
		time.Sleep(ttl / 4)
		synctest.Wait()
		elected, _, at := b.rec.snapshot()
		if len(elected) != 1 || at.Sub(stopped) > ttl/4 {
			t.Fatalf("b elected %v at +%v after a stopped, want once within %v", elected, at.Sub(stopped), ttl/4)
		}
		aElected, aLost, _ := a.rec.snapshot()
		if len(aElected) != 1 || len(aLost) != 1 || aLost[0] != aElected[0] || elected[0] <= aElected[0] {
			t.Fatalf("a elected %v lost %v, b elected %v: want a's one term ended and b's term above it", aElected, aLost, elected)
		}
		b.stop()
	})
}

// TestDriverCrash checks that a leader that stops renewing without
// releasing is replaced after at most TTL plus one poll.
func TestDriverCrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = time.Second
		s := &memStore{}
		a := startBubble(t, s, "a", ttl, nil)
		synctest.Wait()
		b := startBubble(t, s, "b", ttl, nil)
		time.Sleep(1500 * time.Millisecond)
		a.e.noRelease.Store(true)
		crashed := time.Now()
		a.stop()
		time.Sleep(2 * ttl)
		synctest.Wait()
		elected, _, at := b.rec.snapshot()
		took := at.Sub(crashed)
		if len(elected) != 1 || took > ttl+ttl/4 || took < ttl-ttl/3 {
			t.Fatalf("b elected %v %v after the crash, want once within [%v, %v]", elected, took, ttl-ttl/3, ttl+ttl/4)
		}
		b.stop()
	})
}

// TestDriverPausedLeader pauses the leader before a renewal: its Leader()
// turns false and its term context ends when its validity passes, the
// standby takes over, and on waking the old leader reports the loss.
func TestDriverPausedLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = time.Second
		s := &memStore{}
		var pause sync.Mutex
		pauseRenew := make(chan struct{})
		var wake sync.Once
		paused := false
		a := startBubble(t, s, "a", ttl, func(e *Elector) {
			e.beforeOp = func(op Op) {
				pause.Lock()
				p := paused
				pause.Unlock()
				if p && op == OpRenew {
					<-pauseRenew
				}
			}
		})
		t.Cleanup(func() { wake.Do(func() { close(pauseRenew) }) }) // runs before a's stop
		synctest.Wait()
		lead, term, err := a.e.Await(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		b := startBubble(t, s, "b", ttl, nil)
		pause.Lock()
		paused = true
		pause.Unlock()
		time.Sleep(ttl)
		synctest.Wait()
		if _, ok := a.e.Leader(); ok {
			t.Fatal("a paused past its validity still says it leads")
		}
		if lead.Err() == nil {
			t.Fatal("a's term context is not cancelled after its validity")
		}
		time.Sleep(ttl)
		synctest.Wait()
		bTerm, ok := b.e.Leader()
		if !ok || bTerm <= term {
			t.Fatalf("b leads %v term %d, want a term above a's %d", ok, bTerm, term)
		}
		if _, lost, _ := a.rec.snapshot(); len(lost) != 0 {
			t.Fatalf("a reported lost %v while paused", lost)
		}
		pause.Lock()
		paused = false
		pause.Unlock()
		wake.Do(func() { close(pauseRenew) })
		synctest.Wait()
		if _, lost, _ := a.rec.snapshot(); len(lost) != 1 || lost[0] != term {
			t.Fatalf("a woke up and reported lost %v, want [%d]", lost, term)
		}
		if ids := leading(a, b); len(ids) != 1 || ids[0] != "b" {
			t.Fatalf("leaders %v, want [b]", ids)
		}
		a.stop()
		b.stop()
	})
}

// TestDriverTermsIncrease hands leadership around three electors and checks
// that every new term is above every earlier one.
func TestDriverTermsIncrease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = time.Second
		s := &memStore{}
		var last uint64
		for round := range 6 {
			e := startBubble(t, s, fmt.Sprintf("e%d", round), ttl, nil)
			time.Sleep(2 * ttl)
			synctest.Wait()
			term, ok := e.e.Leader()
			if !ok || term <= last {
				t.Fatalf("round %d: leads %v term %d, want a term above %d", round, ok, term, last)
			}
			last = term
			if round%2 == 1 {
				e.e.noRelease.Store(true) // crash every other time
			}
			e.stop()
		}
	})
}
