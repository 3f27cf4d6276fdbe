package sessionstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Steady traffic: 100 sessions, one request every 100 ms each, TouchEvery
// 1s. Touch is throttled, so the store writes each session at most once a
// second: 60 writes per session per minute, whatever the request rate.
const (
	trafficSessions = 100
	trafficInterval = 100 * time.Millisecond
	trafficTouch    = time.Second
)

// On a simulated clock the figure is exact: each session is written at 1s,
// 2s, ... after it was created.
func TestSteadyTrafficWrites(t *testing.T) {
	s := openStore(t, startNode(t), &Options{IdleTimeout: time.Minute, TouchEvery: trafficTouch})
	ctx := testContext(t)
	const span = 5 * time.Second
	type session struct {
		rec *Record
		rev uint64
	}
	sessions := make([]session, trafficSessions)
	for i := range sessions {
		rec := newRecord(fmt.Sprintf("sess-%04d", i), t0.Add(time.Duration(i)*time.Millisecond))
		rev, err := s.Create(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		sessions[i] = session{rec, rev}
	}
	requests := 0
	for step := trafficInterval; step <= span; step += trafficInterval {
		for i := range sessions {
			ss := &sessions[i]
			rev, _, err := s.Touch(ctx, ss.rec, ss.rev, ss.rec.CreatedAt.Add(step))
			if err != nil {
				t.Fatalf("session %d at %s: %v", i, step, err)
			}
			ss.rev = rev
			requests++
		}
	}
	st := s.Stats()
	perMin := float64(st.Touches) / trafficSessions / span.Minutes()
	t.Logf("%d requests, %d touch writes: %.1f writes/session/minute", requests, st.Touches, perMin)
	if want := uint64(trafficSessions * int(span/trafficTouch)); st.Touches != want {
		t.Errorf("touch writes = %d, want %d (one per session per %s)", st.Touches, want, trafficTouch)
	}
	if st.Touches+st.SkippedTouches != uint64(requests) {
		t.Errorf("writes %d + skipped %d != %d requests", st.Touches, st.SkippedTouches, requests)
	}
}

// BenchmarkSteadyTraffic runs the same traffic on the wall clock for 5s
// and reports the KV writes per session per minute it caused. The sessions
// are established (last seen TouchEvery ago), so the window measures the
// steady state, not the first second of a new session.
//
//	go test -run '^$' -bench SteadyTraffic -benchtime 1x ./pkg/sessionstore/
func BenchmarkSteadyTraffic(b *testing.B) {
	const span = 5 * time.Second
	s := openStore(b, startNode(b), &Options{IdleTimeout: time.Minute, TouchEvery: trafficTouch})
	ctx := context.Background()
	for b.Loop() {
		before := s.Stats()
		start := time.Now()
		var wg sync.WaitGroup
		for range trafficSessions {
			rec := newRecord(newID(), start.Add(-trafficTouch))
			rev, err := s.Create(ctx, rec)
			if err != nil {
				b.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				tick := time.NewTicker(trafficInterval)
				defer tick.Stop()
				for now := range tick.C {
					if now.Sub(start) > span {
						return
					}
					if rev, _, err = s.Touch(ctx, rec, rev, now); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		after := s.Stats()
		elapsed := time.Since(start)
		writes := after.Touches - before.Touches
		requests := writes + after.SkippedTouches - before.SkippedTouches
		b.ReportMetric(float64(writes)/trafficSessions/elapsed.Minutes(), "writes/session/min")
		b.ReportMetric(float64(requests)/trafficSessions/elapsed.Minutes(), "requests/session/min")
	}
}

// BenchmarkUpdate measures one CAS write with a TTL (Update and Touch).
func BenchmarkUpdate(b *testing.B) {
	s := openStore(b, startNode(b), nil)
	ctx := context.Background()
	rec := newRecord(newID(), t0)
	rev, err := s.Create(ctx, rec)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if rev, err = s.Update(ctx, rec, rev); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGet measures rehydration: one read and decode of a record.
func BenchmarkGet(b *testing.B) {
	s := openStore(b, startNode(b), nil)
	ctx := context.Background()
	rec := newRecord(newID(), t0)
	if _, err := s.Create(ctx, rec); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, _, err := s.Get(ctx, rec.ID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTouchSkipped measures the throttled path: no I/O.
func BenchmarkTouchSkipped(b *testing.B) {
	s := openStore(b, startNode(b), nil)
	ctx := context.Background()
	rec := newRecord(newID(), t0)
	rev, err := s.Create(ctx, rec)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, wrote, err := s.Touch(ctx, rec, rev, t0); err != nil || wrote {
			b.Fatalf("wrote=%v err=%v", wrote, err)
		}
	}
}
