package prober

import (
	"testing"
	"time"
)

func TestRetrySchedule(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	r := retry{first: 100 * time.Millisecond, period: 500 * time.Millisecond}
	// failures at (ms) -> expected wait (ms): the attempts fall at 100 (the
	// first retry), then 500, 1000, 1500... from the outage's start, even
	// when an attempt itself took time.
	steps := [][2]int{{0, 100}, {100, 400}, {520, 480}, {1000, 500}, {1610, 390}, {2000, 500}}
	for i, s := range steps {
		if got := r.next(ms(s[0])); got != time.Duration(s[1])*time.Millisecond {
			t.Fatalf("step %d: failure at %dms: wait %v, want %dms", i, s[0], got, s[1])
		}
	}
	r.reset()
	if got := r.next(ms(5000)); got != 100*time.Millisecond {
		t.Fatalf("after reset: %v, want the first retry", got)
	}
	if got := r.next(ms(5100)); got != 400*time.Millisecond {
		t.Fatalf("after reset: %v, want the new outage's period", got)
	}
	// A period shorter than the first retry: never less than first.
	short := retry{first: 100 * time.Millisecond, period: 10 * time.Millisecond}
	short.next(t0)
	if got := short.next(ms(100)); got != 100*time.Millisecond {
		t.Fatalf("short period: %v", got)
	}
}
