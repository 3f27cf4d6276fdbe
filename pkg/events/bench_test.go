package events

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

func benchLog(b *testing.B) (*Log, context.Context) {
	f := &fleet{url: natstest.Start(b).ClientURL(), replicas: 1}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	js := f.connect(b)
	l, err := OpenLog(ctx, js, &LogOptions{Stream: testStream})
	if err != nil {
		b.Fatal(err)
	}
	return l, ctx
}

// BenchmarkOutboxThroughput: events appended one at a time (each synced
// to Pebble) and relayed to a one-node stream over loopback TCP; reports
// events/s end to end (appended and stored).
func BenchmarkOutboxThroughput(b *testing.B) {
	l, ctx := benchLog(b)
	ob, err := OpenOutbox(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ob.Close()
	w, err := NewWriter(ctx, l, "bench")
	if err != nil {
		b.Fatal(err)
	}
	relay := NewRelay(ob, w, &RelayOptions{SnapshotEvery: 1 << 30})
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- relay.Run(rctx) }()
	ev := healthEvent("alpha", 0)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if err := ob.Append(ev); err != nil {
			b.Fatal(err)
		}
	}
	for ob.Depth() > 0 {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
}

// BenchmarkPublishToDelivery: one event in flight at a time, from
// Outbox.Append (durably accepted) to its application by a Reader
// following the stream; reports p50 and p99.
func BenchmarkPublishToDelivery(b *testing.B) {
	l, ctx := benchLog(b)
	ob, err := OpenOutbox(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ob.Close()
	w, err := NewWriter(ctx, l, "bench")
	if err != nil {
		b.Fatal(err)
	}
	relay := NewRelay(ob, w, &RelayOptions{SnapshotEvery: 1 << 30})
	delivered := make(chan uint64, 1)
	r := NewReader(l, &ReaderOptions{OnEvent: func(ev *eventspb.Event, _ *State) { delivered <- ev.Generation }})
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 2)
	go func() { done <- relay.Run(rctx) }()
	go func() { done <- r.Run(rctx) }()
	if err := r.WaitCaughtUp(ctx); err != nil {
		b.Fatal(err)
	}
	if err := ob.Append(NewBackendAdded(time.Now(), "default", "alpha", BackendConfig{URL: "http://a"})); err != nil {
		b.Fatal(err)
	}
	<-delivered
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		if err := ob.Append(healthEvent("alpha", i)); err != nil {
			b.Fatal(err)
		}
		<-delivered
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	cancel()
	<-done
	<-done
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
