package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// BenchmarkRegionEventDeliveryAuth is the cost of authentication and of the
// account split on event delivery: the controller publishes b.N events (one
// at a time, each acknowledged), and an edge's reader applies them all:
// connected as an edge user of the edge account, reading the fleet
// account's log by sequence on wake-ups (auth), or without credentials on a
// one-account node with an ordered consumer (open).
// Reported: delivered events/s, measured from the first publish to the
// reader's last application.
func BenchmarkRegionEventDeliveryAuth(b *testing.B) {
	for _, auth := range []bool{false, true} {
		name := "open"
		if auth {
			name = "auth"
		}
		b.Run(name, func(b *testing.B) {
			node, err := natsnode.Start(&natsnode.Options{DataDir: b.TempDir(), Listen: "127.0.0.1:0", Auth: auth})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(node.Shutdown)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			jsCtl := benchJS(b, node.ClientURL(), node.ControllerAccess())
			lg, err := events.OpenLog(ctx, jsCtl, nil)
			if err != nil {
				b.Fatal(err)
			}
			w, err := events.NewWriter(ctx, lg, "c1")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := w.Publish(ctx, events.NewBackendAdded(time.Now(), "default", "alpha", events.BackendConfig{URL: "http://a/mcp"}), "add"); err != nil {
				b.Fatal(err)
			}
			ejs := benchJS(b, node.ClientURL(), node.EdgeAccess())
			fjs, split, err := natsnode.FleetJetStream(ctx, ejs.Conn(), "")
			if err != nil || split != auth {
				b.Fatalf("fleet JetStream: split %v, %v", split, err)
			}
			elog, err := events.AttachLog(ctx, fjs, &events.LogOptions{BySequence: split})
			if err != nil {
				b.Fatal(err)
			}
			target := uint64(b.N + 1)
			reached := make(chan struct{})
			r := events.NewReader(elog, &events.ReaderOptions{OnEvent: func(ev *eventspb.Event, _ *events.State) {
				if ev.Generation == target {
					close(reached)
				}
			}})
			rctx, rcancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- r.Run(rctx) }()
			defer func() { rcancel(); <-done }()
			if err := r.WaitCaughtUp(ctx); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				adv := i%2 == 0
				ev := events.NewHealthChanged(time.Now(), "default", "alpha", "healthy", "healthy", adv, "probe succeeded")
				if _, err := w.Publish(ctx, ev, fmt.Sprintf("h%d", i)); err != nil {
					b.Fatal(err)
				}
			}
			select {
			case <-reached:
			case <-ctx.Done():
				b.Fatal("the reader did not apply every event")
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		})
	}
}

func benchJS(b *testing.B, url string, access natsnode.Access) jetstream.JetStream {
	b.Helper()
	opts, err := access.Options()
	if err != nil {
		b.Fatal(err)
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	return js
}
