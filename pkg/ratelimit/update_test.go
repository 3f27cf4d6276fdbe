package ratelimit_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/ratelimit"
)

func TestUpdate(t *testing.T) {
	base := ratelimit.Limits{
		Identity: &ratelimit.IdentityLimits{RequestsPerSecond: 1, Burst: 1, ConcurrentCalls: 1},
		Tools: []ratelimit.ToolRule{
			{Name: "shared", Tools: []string{"s"}, RequestsPerSecond: 1, Burst: 1},
			{Name: "mine", Tools: []string{"m"}, RequestsPerSecond: 1, Burst: 1, PerIdentity: true},
		},
		FailedAuth: &ratelimit.FailedAuthLimits{PerAddressPerMinute: 1, Burst: 1},
	}
	lim := mustNew(t, base, nil)
	lim.Request(t0, "a")
	_, inflight := lim.Call(t0, "a", "s") // spends "shared", holds a's slot
	_, r := lim.Call(t0, "b", "m")        // spends b's "mine"
	r()
	lim.FailedAuth(t0, "addr")

	// The same rules in another order, "shared" renamed: all state carries on.
	same := base
	same.Tools = []ratelimit.ToolRule{base.Tools[1], base.Tools[0]}
	same.Tools[1].Name = "renamed"
	if err := lim.Update(same); err != nil {
		t.Fatal(err)
	}
	if lim.Request(t0, "a").Allowed {
		t.Fatal("identity budget reset by an unchanged rule")
	}
	if d, _ := lim.Call(t0, "a", "x"); d.Reason != ratelimit.ReasonConcurrency {
		t.Fatalf("in-flight slot lost: %+v", d)
	}
	if d, _ := lim.Call(t0, "c", "s"); d.Allowed || d.Rule != "renamed" {
		t.Fatalf("shared budget reset or label kept: %+v", d)
	}
	if d, _ := lim.Call(t0, "b", "m"); d.Allowed {
		t.Fatal("per-identity budget reset by an unchanged rule")
	}
	if lim.AuthBlocked(t0, "addr").Allowed {
		t.Fatal("failed-auth budget reset by an unchanged rule")
	}

	// Changed rates start afresh; the in-flight call still counts.
	changed := ratelimit.Limits{
		Identity:   &ratelimit.IdentityLimits{RequestsPerSecond: 2, ConcurrentCalls: 1},
		Tools:      []ratelimit.ToolRule{{Name: "shared", Tools: []string{"s"}, RequestsPerSecond: 2}},
		FailedAuth: &ratelimit.FailedAuthLimits{PerAddressPerMinute: 2},
	}
	if err := lim.Update(changed); err != nil {
		t.Fatal(err)
	}
	if !lim.Request(t0, "a").Allowed || !lim.AuthBlocked(t0, "addr").Allowed {
		t.Fatal("a changed rule kept its state")
	}
	if d, r := lim.Call(t0, "c", "s"); !d.Allowed {
		t.Fatalf("changed shared rule kept its state: %+v", d)
	} else {
		r()
	}
	if d, _ := lim.Call(t0, "a", "x"); d.Reason != ratelimit.ReasonConcurrency {
		t.Fatalf("in-flight slot lost: %+v", d)
	}
	if s := lim.Sizes(); s.IdentityTools != 0 {
		t.Fatalf("removed rule's budgets kept: %+v", s)
	}
	if got := lim.Limits(); got.Tools[0].RequestsPerSecond != 2 || got.Identity.RequestsPerSecond != 2 {
		t.Fatalf("Limits() = %+v", got)
	}
	inflight()

	// An invalid update changes nothing.
	bad := ratelimit.Limits{Identity: &ratelimit.IdentityLimits{RequestsPerSecond: -1}}
	if err := lim.Update(bad); !errors.Is(err, ratelimit.ErrInvalidLimits) {
		t.Fatalf("Update(bad) = %v", err)
	}
	if lim.Limits().Identity.RequestsPerSecond != 2 {
		t.Fatal("an invalid update took effect")
	}
	// Removing every limit drops the keyed state.
	if err := lim.Update(ratelimit.Limits{}); err != nil {
		t.Fatal(err)
	}
	if s := lim.Sizes(); s != (ratelimit.Sizes{}) {
		t.Fatalf("state kept without limits: %+v", s)
	}
}

// Parallel callers: the concurrency limit holds under the race detector,
// while the limits are swapped underneath.
func TestParallel(t *testing.T) {
	const limit = 3
	l := ratelimit.Limits{
		Identity:   &ratelimit.IdentityLimits{RequestsPerSecond: 1000, ConcurrentCalls: limit},
		Tools:      []ratelimit.ToolRule{{Tools: []string{"t*"}, RequestsPerSecond: 500, PerIdentity: true}},
		FailedAuth: &ratelimit.FailedAuthLimits{PerAddressPerMinute: 60},
	}
	lim := mustNew(t, l, &ratelimit.Options{MaxKeys: 64})
	ids := []string{"a", "b", "c", "d"}
	var inFlight [4]atomic.Int32
	var over atomic.Int32
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				now := at(time.Duration(i) * time.Millisecond)
				k := (g + i) % len(ids)
				lim.Request(now, ids[k])
				d, release := lim.Call(now, ids[k], "tool")
				if d.Allowed {
					if inFlight[k].Add(1) > limit {
						over.Add(1)
					}
					lim.AuthBlocked(now, "192.0.2.1")
					inFlight[k].Add(-1)
				}
				release()
				release()
				if i%500 == 0 {
					lim.FailedAuth(now, "192.0.2.1")
					_ = lim.Update(l)
				}
			}
		})
	}
	wg.Wait()
	if over.Load() != 0 {
		t.Fatalf("concurrency limit exceeded %d times", over.Load())
	}
	for _, id := range ids { // every slot came back
		var rs []func()
		for range limit {
			d, r := lim.Call(at(time.Hour), id, "x")
			if !d.Allowed {
				t.Fatalf("%s: slot leaked: %+v", id, d)
			}
			rs = append(rs, r)
		}
		for _, r := range rs {
			r()
		}
	}
}
