package region

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/events"
)

// startKeepers runs a Keeper in each region (as its controller does) until
// the test ends, logging each mirror it re-creates.
func (e *twoRegions) startKeepers(t *testing.T, ctx context.Context) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, r := range e.regions {
		k, err := NewKeeper(e.fleetJSOf(t, r), r, e.regions, &KeeperOptions{
			OnNudge: func(o string, a Asset, reason string) {
				t.Logf("region %s re-created its mirror of %s's %s: %s", r, o, a, reason)
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { _ = k.Run(ctx) })
	}
}

// fleetJSOf is a controller's JetStream in region r (full rights).
func (e *twoRegions) fleetJSOf(t *testing.T, r string) jetstream.JetStream {
	t.Helper()
	_, js := connect(t, e.node[r].ClientURL(), e.node[r].ControllerAccess())
	return js
}

// TestRegionPartitionCatchUp measures the catch-up after a cut of the link
// (FLEETGATE_REGION_CUT, default 30s) with 1,000 events queued in region
// a: the time from the heal until region b's edge view reflects all of
// them, with each region's mirror Keeper (FLEETGATE_REGION_KEEPER=0: the
// server's retry timers alone). It takes the cut plus about half a minute,
// so it runs only with FLEETGATE_REGION_CATCHUP=1.
func TestRegionPartitionCatchUp(t *testing.T) {
	if os.Getenv("FLEETGATE_REGION_CATCHUP") != "1" {
		t.Skip("set FLEETGATE_REGION_CATCHUP=1 to measure (the cut plus about half a minute)")
	}
	cut, queued := 30*time.Second, 1000
	if s := os.Getenv("FLEETGATE_REGION_CUT"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("FLEETGATE_REGION_CUT: %v", err)
		}
		cut = d
	}
	keeper := os.Getenv("FLEETGATE_REGION_KEEPER") != "0"
	ctx, cancel := context.WithTimeout(context.Background(), cut+5*time.Minute)
	defer cancel()
	e := startTwoRegions(t, ctx)
	if keeper {
		e.startKeepers(t, ctx)
	}
	now := time.Now()
	if _, err := e.writer["a"].Publish(ctx, events.NewBackendAdded(now, "shared", "be-a", cfg("be-a")), "a-1"); err != nil {
		t.Fatal(err)
	}
	waitVector(t, ctx, e.follow["b"], Vector{"a": 1})
	e.link.Cut()
	e.waitLinked(t, false)
	cutAt := time.Now()
	for i := range queued {
		to, from := "healthy", "unhealthy"
		if i%2 == 1 {
			to, from = from, to
		}
		if _, err := e.writer["a"].Publish(ctx, events.NewHealthChanged(now, "shared", "be-a", from, to, to == "healthy", ""), fmt.Sprintf("a-h%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(cut - time.Since(cutAt)) // the cut's length is what is measured against
	healAt := time.Now()
	e.link.Heal()
	e.waitLinked(t, true)
	linked := time.Since(healAt)
	_, v := waitVector(t, ctx, e.follow["b"], Vector{"a": uint64(1 + queued)})
	took := time.Since(healAt)
	t.Logf("cut %v with %d events queued in a (keeper %v): link back after %v, b's view at %s %v after the heal",
		cut, queued, keeper, linked.Round(time.Millisecond), v, took.Round(time.Millisecond))
	if keeper && took > linked+5*time.Second {
		t.Errorf("caught up %v after the link came back, want at most 5s", (took - linked).Round(time.Millisecond))
	}
}
