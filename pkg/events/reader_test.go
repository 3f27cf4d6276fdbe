package events

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestReaderPurgeGap(t *testing.T) {
	f, _ := singleNode(t)
	ctx := testContext(t)
	l := f.openLog(t, ctx)
	publishN(t, ctx, l, 10, "a")

	// A reader caught up at 10 stops.
	r := NewReader(l, nil)
	stop := runReader(t, ctx, r)
	eventually(t, 30*time.Second, "reader at 10", func() bool { return r.State().Generation == 10 })
	stop()

	// Meanwhile the writer moves on, snapshots at 20 and retention purges
	// everything before 21.
	publishN(t, ctx, l, 10, "b")
	s20, err := l.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SaveSnapshot(ctx, s20); err != nil {
		t.Fatal(err)
	}
	publishN(t, ctx, l, 5, "c")
	if err := l.stream.Purge(ctx, jetstream.WithPurgeSequence(21)); err != nil {
		t.Fatal(err)
	}
	want, err := l.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// The follow from 11 meets generation 21 first: a gap, recovered by
	// re-snapshotting.
	if err := r.follow(ctx); err == nil {
		t.Fatal("follow across a purge: no gap reported")
	} else {
		var gap *gapError
		if !errors.As(err, &gap) || gap.from != 11 || gap.to != 20 {
			t.Fatalf("follow: %v, want gap 11..20", err)
		}
		r.resnapshot(ctx, gap)
	}
	if g := r.State().Generation; g != 20 {
		t.Fatalf("after resnapshot at %d, want 20", g)
	}
	stop = runReader(t, ctx, r)
	eventually(t, 30*time.Second, "reader at 25", func() bool { return r.State().Generation == 25 })
	stop()
	assertSameState(t, r.State(), want)

	// Without a covering snapshot the gap is reported and skipped, never
	// silently ignored.
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	var mu sync.Mutex
	var errs []error
	fresh := NewReader(l, &ReaderOptions{Metrics: m, OnError: func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }})
	if err := l.snapshots.Purge(ctx, snapshotKey); err != nil {
		t.Fatal(err)
	}
	stop = runReader(t, ctx, fresh)
	eventually(t, 30*time.Second, "fresh reader at 25", func() bool { return fresh.State().Generation == 25 })
	stop()
	mu.Lock()
	defer mu.Unlock()
	if len(errs) == 0 || !errors.Is(errs[0], ErrPurged) {
		t.Fatalf("errors %v, want ErrPurged first", errs)
	}
	if got := testutil.ToFloat64(m.gaps); got != 1 {
		t.Fatalf("gap metric %v, want 1", got)
	}
}

func TestReaderSkipsUndecodableEvent(t *testing.T) {
	f, _ := singleNode(t)
	ctx := testContext(t)
	l := f.openLog(t, ctx)
	publishN(t, ctx, l, 3, "a")
	// A foreign writer stores garbage at generation 4.
	if _, err := l.js.PublishMsg(ctx, &nats.Msg{Subject: l.Subject("default", "b0"), Data: []byte("not an event")},
		jetstream.WithExpectLastSequence(3)); err != nil {
		t.Fatal(err)
	}
	w, _ := NewWriter(ctx, l, "ctl")
	if _, err := w.Publish(ctx, healthEvent("b0", 2), "after"); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	var mu sync.Mutex
	var errs []error
	r := NewReader(l, &ReaderOptions{Metrics: m, OnError: func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }})
	stop := runReader(t, ctx, r)
	defer stop()
	eventually(t, 30*time.Second, "reader at 5", func() bool { return r.State().Generation == 5 })
	if s := r.State().Backend("default", "b0"); s == nil || s.Status != "healthy" || s.Generation != 5 {
		t.Fatalf("event after the bad one not applied: %+v", s)
	}
	mu.Lock()
	defer mu.Unlock()
	var le *Error
	if len(errs) != 1 || !errors.As(errs[0], &le) || le.Code != CodeDecode || le.Generation != 4 {
		t.Fatalf("reported %v, want one decode error at generation 4", errs)
	}
	if got := testutil.ToFloat64(m.decodeErrors); got != 1 {
		t.Fatalf("decode error metric %v, want 1", got)
	}
}

func TestReplay(t *testing.T) {
	f, _ := singleNode(t)
	ctx := testContext(t)
	l := f.openLog(t, ctx)
	publishN(t, ctx, l, 30, "a")
	var all []*State
	s := NewState()
	_, _, evs := readAll(t, ctx, l)
	for _, ev := range evs {
		var err error
		if s, err = Apply(s, ev); err != nil {
			t.Fatal(err)
		}
		all = append(all, s)
	}
	for _, g := range []uint64{1, 3, 10, 29, 30} {
		got, err := l.Replay(ctx, g, nil)
		if err != nil {
			t.Fatalf("replay %d: %v", g, err)
		}
		assertSameState(t, got, all[g-1])
	}
	if _, err := l.Replay(ctx, 31, nil); err == nil {
		t.Fatal("replay past the head succeeded")
	}
	// Snapshot at 20, purge before 21: generations >= 20 replay from the
	// snapshot; earlier ones are reported as purged.
	if err := l.SaveSnapshot(ctx, all[19]); err != nil {
		t.Fatal(err)
	}
	if err := l.stream.Purge(ctx, jetstream.WithPurgeSequence(21)); err != nil {
		t.Fatal(err)
	}
	got, err := l.Replay(ctx, 25, nil)
	if err != nil {
		t.Fatalf("replay 25 after purge: %v", err)
	}
	assertSameState(t, got, all[24])
	if _, err := l.Replay(ctx, 10, nil); !errors.Is(err, ErrPurged) {
		t.Fatalf("replay 10 after purge: %v, want ErrPurged", err)
	}
}

func TestAttachLogWaitsForTheStream(t *testing.T) {
	f, _ := singleNode(t)
	ctx := testContext(t)
	js := f.connect(t)
	done := make(chan error, 1)
	go func() {
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, err := AttachLog(actx, js, &LogOptions{Stream: testStream})
		done <- err
	}()
	f.openLog(t, ctx)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestEventsJSON(t *testing.T) {
	f, _ := singleNode(t)
	ctx := testContext(t)
	l := f.openLog(t, ctx)
	publishN(t, ctx, l, 6, "a")
	got, err := l.Events(ctx, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Generation != 2 || got[2].Generation != 4 {
		t.Fatalf("events(2, 3) = %+v", got)
	}
	if got[0].Kind != "backend_added" || got[0].Config == nil || got[2].Kind != "health_changed" || got[2].Health == nil {
		t.Fatalf("kinds/payloads: %+v", got)
	}
	if all, _ := l.Events(ctx, 5, 100); len(all) != 2 {
		t.Fatalf("events(5, 100) returned %d, want 2", len(all))
	}
	if none, _ := l.Events(ctx, 7, 10); len(none) != 0 {
		t.Fatalf("events past the head: %+v", none)
	}
}
