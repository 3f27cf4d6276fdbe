package health_test

import (
	"fmt"
	"time"

	"github.com/fleetgate/fleetgate/pkg/health"
)

func ExampleTracker() {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tr := health.NewTracker(health.Policy{}) // interval 5s, timeout 2s, unhealthy_after 2
	obs := []health.Observation{
		{At: t0, Result: health.OK, Latency: 20 * time.Millisecond},
		{At: t0.Add(5 * time.Second), Result: health.OK, Latency: 1500 * time.Millisecond},
		{At: t0.Add(7 * time.Second), Result: health.Failure, Reason: "connection dropped"},
		{At: t0.Add(10 * time.Second), Result: health.Failure, Reason: "connection refused"},
		{At: t0.Add(15 * time.Second), Result: health.OK},
		{At: t0.Add(20 * time.Second), Result: health.OK},
		{At: t0.Add(25 * time.Second), Result: health.AuthFailure, Reason: "HTTP 401"},
	}
	for _, o := range obs {
		t := tr.Step(o)
		fmt.Printf("%-3v %-15s advertisable=%-5v %s\n", o.At.Sub(t0), t.To, health.Advertisable(t.To), t.Reason)
	}
	// Output:
	// 0s  healthy         advertisable=true  probe succeeded
	// 5s  degraded        advertisable=true  slow probe: latency 1.5s over 1s (half the timeout)
	// 7s  unknown         advertisable=false probe failed (1 of 2 failures before unhealthy): connection dropped
	// 10s unhealthy       advertisable=false 2 consecutive probe failures: connection refused
	// 15s degraded        advertisable=true  recovering: probes must succeed for 5s before healthy
	// 20s healthy         advertisable=true  probe succeeded
	// 25s unauthenticated advertisable=false authentication rejected: HTTP 401
}

func ExampleCoalescer() {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	co := health.NewCoalescer(5*time.Second, false) // published: not advertisable
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

	// A flapping backend: up, down, up, down within one window.
	for i, adv := range []bool{true, false, true, false} {
		if emit, v := co.Offer(at(i*1000), adv); emit {
			fmt.Println("publish at", at(i*1000).Sub(t0), "advertisable =", v)
		}
	}
	if d, ok := co.Deadline(); ok {
		fmt.Println("tick due at", d.Sub(t0))
		if emit, v := co.Tick(d); emit {
			fmt.Println("publish at", d.Sub(t0), "advertisable =", v)
		}
	}
	// Output:
	// publish at 0s advertisable = true
	// tick due at 5s
	// publish at 5s advertisable = false
}

func ExampleAdvertisable() {
	for _, s := range health.Statuses() {
		fmt.Println(s, health.Advertisable(s))
	}
	// Output:
	// healthy true
	// degraded true
	// unknown false
	// unhealthy false
	// unauthenticated false
}

func ExamplePolicy_Resolve() {
	p, err := (&health.Policy{Interval: 10 * time.Second}).Resolve()
	fmt.Println(p.Interval, p.Timeout, p.UnhealthyAfter, p.Debounce, err)
	_, err = (&health.Policy{UnhealthyAfter: -1}).Resolve()
	fmt.Println(err)
	// Output:
	// 10s 2s 2 10s <nil>
	// health policy: unhealthy_after: must not be negative (got -1)
}
