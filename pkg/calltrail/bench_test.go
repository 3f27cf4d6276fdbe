package calltrail

import (
	"context"
	"sync"
	"testing"
)

// benchTrail is a Trail without a stream: Record's cost does not depend on
// NATS, only on the queue.
func benchTrail(b *testing.B, queue int) *Trail {
	b.Helper()
	opts, err := (&Options{QueueSize: queue}).withDefaults()
	if err != nil {
		b.Fatal(err)
	}
	t := &Trail{o: opts, queue: make(chan Entry, opts.QueueSize)}
	if t.m, err = newMetrics(nil, t); err != nil {
		b.Fatal(err)
	}
	return t
}

// BenchmarkRecord measures the call path's cost of auditing one call:
// with room in the queue (a consumer drains it), and with the queue full
// (the entry is dropped and counted).
func BenchmarkRecord(b *testing.B) {
	e := sample(1)
	b.Run("queue_has_room", func(b *testing.B) {
		t := benchTrail(b, DefaultQueueSize)
		var wg sync.WaitGroup
		done := make(chan struct{})
		wg.Go(func() {
			for {
				select {
				case <-t.queue:
				case <-done:
					return
				}
			}
		})
		b.ReportAllocs()
		for b.Loop() {
			t.Record(e)
		}
		close(done)
		wg.Wait()
	})
	b.Run("queue_full", func(b *testing.B) {
		t := benchTrail(b, 1)
		t.Record(e)
		b.ReportAllocs()
		for b.Loop() {
			t.Record(e)
		}
		if t.Stats().Dropped == 0 {
			b.Fatal("nothing dropped")
		}
	})
	b.Run("parallel_queue_full", func(b *testing.B) {
		t := benchTrail(b, 1)
		t.Record(e)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				t.Record(e)
			}
		})
	})
}

// BenchmarkPublish measures Run's throughput into an embedded single-node
// stream: chunks of a full queue are recorded and drained, acknowledgements
// included. ns/op is per entry.
func BenchmarkPublish(b *testing.B) {
	e := newEnv(b)
	tr, err := Open(b.Context(), e.js, nil)
	if err != nil {
		b.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	en := sample(1)
	b.ResetTimer()
	for left := b.N; left > 0; {
		chunk := min(left, DefaultQueueSize)
		for range chunk {
			tr.Record(en)
		}
		if err := tr.Run(cancelled); err != nil {
			b.Fatal(err)
		}
		left -= chunk
	}
	b.StopTimer()
	if s := tr.Stats(); s.Published != uint64(b.N) {
		b.Fatalf("published %d of %d", s.Published, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}
