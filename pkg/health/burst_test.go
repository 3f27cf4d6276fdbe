package health

import (
	"testing"
	"time"
)

func TestBurst(t *testing.T) {
	const w = 250 * time.Millisecond
	ms := func(n int) time.Time { return scenarioEpoch.Add(time.Duration(n) * time.Millisecond) }
	type step struct {
		signal  int  // ms: a change is signalled
		due     int  // ms: the batch's expected due time
		changed bool // the batch changed the view
		urgent  bool
	}
	tests := []struct {
		name   string
		window time.Duration
		steps  []step
	}{
		{"quiet: at once", w, []step{{0, 0, true, false}, {1000, 1000, true, false}}},
		{"inside the window: at its end", w, []step{{0, 0, true, false}, {10, 250, true, false}}},
		{"after the trailing batch: at once", w, []step{{0, 0, true, false}, {10, 250, true, false}, {251, 251, true, false}, {260, 501, true, false}}},
		{"an unchanged leading batch opens no window", w, []step{{0, 0, false, false}, {10, 10, true, false}, {20, 260, true, false}}},
		{"an unchanged trailing batch still closes the window", w, []step{{0, 0, true, false}, {10, 250, false, false}, {255, 255, true, false}}},
		{"a signal after the window ended is a leading edge", w, []step{{0, 0, true, false}, {300, 300, true, false}, {310, 550, true, false}}},
		{"zero window: always at once", 0, []step{{0, 0, true, false}, {1, 1, true, false}, {2, 2, true, false}}},
		{"an urgent batch inside a window: at once, and it opens a window", w, []step{
			{0, 0, true, false}, {10, 10, true, true}, {20, 260, true, false}, {270, 270, true, false}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBurst(tc.window)
			for i, s := range tc.steps {
				due := b.Due(ms(s.signal), s.urgent)
				if !due.Equal(ms(s.due)) {
					t.Fatalf("step %d: due %v, want %dms", i, due.Sub(scenarioEpoch), s.due)
				}
				b.Applied(due, s.changed)
			}
		})
	}
}

// However often changes are signalled, no span of length W holds more
// than two batches, and a change is never held longer than W.
func TestBurstBound(t *testing.T) {
	const w = 100 * time.Millisecond
	b := NewBurst(w)
	var applied []time.Time
	next := scenarioEpoch
	for i := range 2000 {
		now := scenarioEpoch.Add(time.Duration(i*7) * time.Millisecond)
		if now.Before(next) {
			continue // the driver is waiting for the batch due at next
		}
		due := b.Due(now, false)
		if due.Sub(now) > w {
			t.Fatalf("held %v", due.Sub(now))
		}
		b.Applied(due, true)
		applied = append(applied, due)
		next = due
	}
	for i := 2; i < len(applied); i++ {
		if applied[i].Sub(applied[i-2]) < w {
			t.Fatalf("batches %d..%d within %v", i-2, i, applied[i].Sub(applied[i-2]))
		}
	}
	if len(applied) < 200 {
		t.Fatalf("only %d batches", len(applied))
	}
}
