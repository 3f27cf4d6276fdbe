package region

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/events"
)

// TestRegionPartitionCatchUp measures the catch-up after a 60 s cut with
// 1,000 events queued in region a: the time from the heal until region b's
// edge view reflects all of them. It takes about two minutes, so it runs
// only with FLEETGATE_REGION_CATCHUP=1.
func TestRegionPartitionCatchUp(t *testing.T) {
	if os.Getenv("FLEETGATE_REGION_CATCHUP") != "1" {
		t.Skip("set FLEETGATE_REGION_CATCHUP=1 to measure (about two minutes)")
	}
	const cut, queued = 60 * time.Second, 1000
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	e := startTwoRegions(t, ctx)
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
	_, v := waitVector(t, ctx, e.follow["b"], Vector{"a": 1 + queued})
	t.Logf("cut %v with %d events queued in a: link back after %v, b's view at %s %v after the heal",
		cut, queued, linked.Round(time.Millisecond), v, time.Since(healAt).Round(time.Millisecond))
}
