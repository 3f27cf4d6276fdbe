package events

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// The same writer and reader suite runs against one node and a 3-node
// cluster (replicas 3).
func TestLogSingleNode(t *testing.T) {
	runLogSuite(t, func(t *testing.T) *fleet { f, _ := singleNode(t); return f })
}

func TestLogCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster suite skipped in -short mode")
	}
	runLogSuite(t, threeNodes)
}

func runLogSuite(t *testing.T, newFleet func(*testing.T) *fleet) {
	t.Run("WriterFencing", func(t *testing.T) { testWriterFencing(t, newFleet(t)) })
	t.Run("RetryNeverDuplicates", func(t *testing.T) { testRetryNeverDuplicates(t, newFleet(t)) })
	t.Run("OutboxAcrossDisruption", func(t *testing.T) { testOutboxAcrossDisruption(t, newFleet(t)) })
	t.Run("ReaderSnapshotAndTail", func(t *testing.T) { testReaderSnapshotAndTail(t, newFleet(t)) })
	t.Run("ReaderAcrossDisruption", func(t *testing.T) { testReaderAcrossDisruption(t, newFleet(t)) })
}

func testWriterFencing(t *testing.T, f *fleet) {
	ctx := testContext(t)
	l := f.openLog(t, ctx)
	a, err := NewWriter(ctx, l, "ctl-a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewWriter(ctx, f.openLog(t, ctx), "ctl-b")
	if err != nil {
		t.Fatal(err)
	}
	if gen, err := a.Publish(ctx, healthEvent("alpha", 0), "a-1"); err != nil || gen != 1 {
		t.Fatalf("first writer: gen %d err %v", gen, err)
	}
	// b still believes the stream is empty: it is fenced and stores nothing.
	_, err = b.Publish(ctx, healthEvent("alpha", 1), "b-1")
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("second writer: err = %v, want ErrFenced", err)
	}
	var le *Error
	if !errors.As(err, &le) || le.Code != CodeFenced || le.Generation != 1 {
		t.Fatalf("fenced error details: %#v", le)
	}
	if gen, err := a.Publish(ctx, healthEvent("alpha", 2), "a-2"); err != nil || gen != 2 {
		t.Fatalf("first writer continues: gen %d err %v", gen, err)
	}
	_, ids, evs := readAll(t, ctx, l)
	if !slices.Equal(ids, []string{"a-1", "a-2"}) {
		t.Fatalf("stored ids %v, want [a-1 a-2]", ids)
	}
	for _, ev := range evs {
		if ev.ControllerId != "ctl-a" {
			t.Fatalf("event %d written by %q", ev.Generation, ev.ControllerId)
		}
	}
	// After a resync b may publish again, continuing the same sequence.
	if err := b.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	if gen, err := b.Publish(ctx, healthEvent("alpha", 3), "b-2"); err != nil || gen != 3 {
		t.Fatalf("resynced writer: gen %d err %v", gen, err)
	}
}

func testRetryNeverDuplicates(t *testing.T, f *fleet) {
	ctx := testContext(t)
	l := f.openLog(t, ctx)
	w, err := NewWriter(ctx, l, "ctl")
	if err != nil {
		t.Fatal(err)
	}
	ev := healthEvent("alpha", 0)
	if gen, err := w.Publish(ctx, ev, "m-1"); err != nil || gen != 1 {
		t.Fatalf("publish: %d %v", gen, err)
	}
	// The acknowledgement was "lost": the retry uses the same id and the
	// same expectation, and must settle on the stored generation.
	w.last = 0
	if gen, err := w.Publish(ctx, ev, "m-1"); err != nil || gen != 1 {
		t.Fatalf("retry: gen %d err %v, want 1 <nil>", gen, err)
	}
	if _, last, _ := l.Bounds(ctx); last != 1 {
		t.Fatalf("stream holds %d events after a retry, want 1", last)
	}
	if gen, err := w.Publish(ctx, healthEvent("alpha", 1), "m-2"); err != nil || gen != 2 {
		t.Fatalf("next publish: %d %v", gen, err)
	}
}

// testOutboxAcrossDisruption appends 1,000 events while the relay runs and
// the server (or the stream leader) is taken down mid-publish; every event
// arrives exactly once, in order.
func testOutboxAcrossDisruption(t *testing.T, f *fleet) {
	ctx := testContext(t)
	l := f.openLog(t, ctx)
	ob, err := OpenOutbox(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	w, err := NewWriter(ctx, l, "ctl")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var published []uint64
	relay := NewRelay(ob, w, &RelayOptions{MinBackoff: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		AttemptTimeout: time.Second, OnPublished: func(ev *eventspb.Event, _ *State) {
			mu.Lock()
			published = append(published, ev.Generation)
			mu.Unlock()
		}})
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- relay.Run(rctx) }()

	const n = 1000
	for i := range n {
		if err := ob.Append(healthEvent(fmt.Sprintf("b%d", i%7), i)); err != nil {
			t.Fatal(err)
		}
		if i == 300 {
			eventually(t, 30*time.Second, "some events relayed", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(published) > 50
			})
			restore := f.disrupt(t)
			time.AfterFunc(300*time.Millisecond, restore)
		}
	}
	eventually(t, 60*time.Second, "all events relayed", func() bool { return ob.Depth() == 0 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("relay: %v", err)
	}
	ctx2 := testContext(t)
	verifyInOrder(t, ctx2, f.openLog(t, ctx2), n)
	if !slices.IsSorted(published) || len(published) != n {
		t.Fatalf("OnPublished saw %d generations, sorted=%v", len(published), slices.IsSorted(published))
	}
	if st := relay.State(); st.Generation != n {
		t.Fatalf("relay state at %d, want %d", st.Generation, n)
	}
}

// publishN stores n events through a fresh writer.
func publishN(t *testing.T, ctx context.Context, l *Log, n int, prefix string) {
	t.Helper()
	w, err := NewWriter(ctx, l, "ctl")
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		b := fmt.Sprintf("b%d", i%3)
		ev := healthEvent(b, i)
		if i < 3 {
			ev = NewBackendAdded(time.Now(), "default", b, BackendConfig{URL: "http://" + b})
		}
		if _, err := w.Publish(ctx, ev, fmt.Sprintf("%s-%d", prefix, i)); err != nil {
			t.Fatal(err)
		}
	}
}

func runReader(t *testing.T, ctx context.Context, r *Reader) (stop func()) {
	t.Helper()
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("reader: %v", err)
		}
	}
}

func testReaderSnapshotAndTail(t *testing.T, f *fleet) {
	ctx := testContext(t)
	l := f.openLog(t, ctx)
	publishN(t, ctx, l, 10, "x")
	snap, err := l.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SaveSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	publishN(t, ctx, l, 10, "y")
	var mu sync.Mutex
	var seen []uint64
	r := NewReader(l, &ReaderOptions{OnEvent: func(ev *eventspb.Event, _ *State) {
		mu.Lock()
		seen = append(seen, ev.Generation)
		mu.Unlock()
	}})
	stop := runReader(t, ctx, r)
	defer stop()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := r.WaitCaughtUp(wctx); err != nil {
		t.Fatal(err)
	}
	if g := r.State().Generation; g != 20 {
		t.Fatalf("caught up at %d, want 20", g)
	}
	mu.Lock()
	if !slices.Equal(seen, []uint64{11, 12, 13, 14, 15, 16, 17, 18, 19, 20}) {
		t.Fatalf("applied %v after the snapshot at 10, want 11..20", seen)
	}
	mu.Unlock()
	want, err := l.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	assertSameState(t, r.State(), want)
	// Live tail: a new event reaches the reader and its watchers.
	ch, unwatch := r.Watch()
	defer unwatch()
	publishN(t, ctx, l, 1, "z")
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal("no change signal for a live event")
	}
	eventually(t, 30*time.Second, "generation 21", func() bool { return r.State().Generation == 21 })
	// OnEvent runs before the state is published: a watcher woken by a
	// state finds every event of it already noted (the edge takes event
	// times for its latency this way).
	for i := range 20 {
		ch, unwatch := r.Watch()
		publishN(t, ctx, l, 1, fmt.Sprintf("w%d", i))
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("no change signal for live event %d", i)
		}
		g := r.State().Generation
		mu.Lock()
		last := seen[len(seen)-1]
		mu.Unlock()
		unwatch()
		if last < g {
			t.Fatalf("watcher saw generation %d before OnEvent noted it (last noted %d)", g, last)
		}
	}
}

func testReaderAcrossDisruption(t *testing.T, f *fleet) {
	ctx := testContext(t)
	l := f.openLog(t, ctx)
	var mu sync.Mutex
	var seen []uint64
	r := NewReader(l, &ReaderOptions{OnEvent: func(ev *eventspb.Event, _ *State) {
		mu.Lock()
		seen = append(seen, ev.Generation)
		mu.Unlock()
	}})
	stop := runReader(t, ctx, r)
	defer stop()
	ob, err := OpenOutbox(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	w, err := NewWriter(ctx, l, "ctl")
	if err != nil {
		t.Fatal(err)
	}
	relay := NewRelay(ob, w, &RelayOptions{MinBackoff: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, AttemptTimeout: time.Second})
	stopRelay := runRelay(t, ctx, relay)
	defer stopRelay()
	const n = 300
	for i := range n {
		if err := ob.Append(healthEvent("alpha", i)); err != nil {
			t.Fatal(err)
		}
		if i == 100 {
			eventually(t, 30*time.Second, "reader progress", func() bool { return r.State().Generation > 20 })
			restore := f.disrupt(t)
			restored := make(chan struct{})
			time.AfterFunc(300*time.Millisecond, func() { restore(); close(restored) })
			// The node is back before the test ends, whether or not the
			// relay had published everything before it went down.
			defer func() { <-restored }()
		}
	}
	eventually(t, 60*time.Second, "reader reaches the head", func() bool { return r.State().Generation == n })
	mu.Lock()
	defer mu.Unlock()
	for i, g := range seen {
		if g != uint64(i+1) {
			t.Fatalf("reader applied generation %d at position %d: lost or repeated", g, i)
		}
	}
}

func runRelay(t *testing.T, ctx context.Context, r *Relay) func() {
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("relay: %v", err)
		}
	}
}

func assertSameState(t *testing.T, got, want *State) {
	t.Helper()
	if got.Generation != want.Generation {
		t.Fatalf("generation %d, want %d", got.Generation, want.Generation)
	}
	for _, g := range want.GroupNames() {
		for _, b := range want.Groups[g].BackendNames() {
			gb, wb := got.Backend(g, b), want.Backend(g, b)
			if gb == nil || gb.Status != wb.Status || gb.Generation != wb.Generation || !gb.Config.Equal(wb.Config) {
				t.Fatalf("backend %s/%s: got %+v want %+v", g, b, gb, wb)
			}
		}
	}
}

var _ = jetstream.MsgIDHeader
