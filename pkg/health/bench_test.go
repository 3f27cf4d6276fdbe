package health

import (
	"testing"
	"time"
)

// BenchmarkTrackerStep measures one Step over a realistic mix: mostly fast
// successes, some slow ones, failures and the occasional auth failure.
func BenchmarkTrackerStep(b *testing.B) {
	tr := NewTracker(Policy{})
	obs := make([]Observation, 64)
	for i := range obs {
		o := Observation{At: scenarioEpoch.Add(time.Duration(i) * 5 * time.Second), Result: OK, Latency: 20 * time.Millisecond}
		switch {
		case i%16 == 3:
			o.Latency = 1500 * time.Millisecond
		case i%16 == 7, i%16 == 8:
			o.Result, o.Reason = Failure, "connection refused"
		case i == 40:
			o.Result, o.Reason = AuthFailure, "HTTP 401"
		}
		obs[i] = o
	}
	var changed int
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if tr.Step(obs[i%len(obs)]).Changed {
			changed++
		}
	}
	if changed == 0 {
		b.Fatal("no transitions: the benchmark input does not exercise the machine")
	}
}

// BenchmarkCoalescerOffer measures one Offer of a flapping value.
func BenchmarkCoalescerOffer(b *testing.B) {
	c := NewCoalescer(5*time.Second, false)
	now := scenarioEpoch
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		now = now.Add(time.Second)
		c.Offer(now, i%3 == 0)
		if d, ok := c.Deadline(); ok && !d.After(now) {
			c.Tick(now)
		}
	}
}
