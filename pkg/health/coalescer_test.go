package health

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// cstep is one call on a Coalescer[bool] in a scripted test.
type cstep struct {
	at   time.Duration // since scenarioEpoch
	op   string        // "offer", "tick" or "stop"
	v    bool          // offered value
	emit bool          // expected emit (for stop: expected cancelled)
	val  bool          // expected emitted value
	// deadline expected after the call: <0 none, else since scenarioEpoch.
	deadline time.Duration
}

const none = -1

func runScript(t *testing.T, c *Coalescer[bool], steps []cstep) {
	t.Helper()
	for i, s := range steps {
		now := scenarioEpoch.Add(s.at)
		var emit, val bool
		switch s.op {
		case "offer":
			emit, val = c.Offer(now, s.v)
		case "tick":
			emit, val = c.Tick(now)
		case "stop":
			emit = c.Stop()
		default:
			t.Fatalf("step %d: bad op %q", i, s.op)
		}
		if emit != s.emit || (emit && val != s.val) || (!emit && val) {
			t.Fatalf("step %d (%v %s %v): got emit=%v value=%v, want emit=%v value=%v", i, s.at, s.op, s.v, emit, val, s.emit, s.val)
		}
		d, ok := c.Deadline()
		switch {
		case s.deadline < 0 && ok:
			t.Fatalf("step %d (%v %s): deadline %v, want none", i, s.at, s.op, d.Sub(scenarioEpoch))
		case s.deadline >= 0 && (!ok || !d.Equal(scenarioEpoch.Add(s.deadline))):
			t.Fatalf("step %d (%v %s): deadline %v (%v), want %v", i, s.at, s.op, d.Sub(scenarioEpoch), ok, s.deadline)
		}
	}
}

func TestCoalescerScripts(t *testing.T) {
	const w = 5 * time.Second
	tests := []struct {
		name   string
		window time.Duration
		steps  []cstep
	}{
		{"leading edge is immediate", w, []cstep{
			{0, "offer", true, true, true, none},
		}},
		{"offering the published value in a quiet period does nothing", w, []cstep{
			{0, "offer", false, false, false, none},
			{time.Second, "tick", false, false, false, none},
		}},
		{"trailing event carries the final value at the window end", w, []cstep{
			{0, "offer", true, true, true, none},
			{time.Second, "offer", false, false, false, w},
			{4 * time.Second, "tick", false, false, false, w}, // early tick: nothing
			{w, "tick", false, true, false, none},
		}},
		{"a trailing emission ends the burst: the next change is a leading edge", w, []cstep{
			{0, "offer", true, true, true, none},
			{time.Second, "offer", false, false, false, w},
			{w, "tick", false, true, false, none},
			{w + time.Second, "offer", true, true, true, none}, // at once, opens a window
			{w + 2*time.Second, "offer", false, false, false, 2*w + time.Second},
			{2*w + time.Second, "tick", false, true, false, none},
		}},
		{"a late tick emits late and opens no window", w, []cstep{
			{0, "offer", true, true, true, none},
			{time.Second, "offer", false, false, false, w},
			{7 * time.Second, "tick", false, true, false, none},
			{8 * time.Second, "offer", true, true, true, none},
			{9 * time.Second, "offer", false, false, false, 13 * time.Second},
		}},
		{"after a quiet window closes the next change is a leading edge again", w, []cstep{
			{0, "offer", true, true, true, none},
			{w, "tick", false, false, false, none},
			{w + time.Second, "offer", false, true, false, none},
		}},
		{"a missed deadline: the next offer settles the window", w, []cstep{
			{0, "offer", true, true, true, none},
			{time.Second, "offer", false, false, false, w},
			// No tick at 5s. At 9s the input is back to the published
			// value: no event at all, and nothing pending.
			{9 * time.Second, "offer", true, false, false, none},
			{10 * time.Second, "offer", false, true, false, none},
		}},
		{"a missed deadline with a net change publishes the newest value", w, []cstep{
			{0, "offer", true, true, true, none},
			{time.Second, "offer", false, false, false, w},
			{9 * time.Second, "offer", false, true, false, none},
			{10 * time.Second, "offer", true, false, false, 14 * time.Second},
		}},
		{"pending returns to the published value: deadline withdrawn", w, []cstep{
			{0, "offer", true, true, true, none},
			{time.Second, "offer", false, false, false, w},
			{2 * time.Second, "offer", true, false, false, none},
			{w, "tick", false, false, false, none},
		}},
		{"zero window publishes every change", 0, []cstep{
			{0, "offer", true, true, true, none},
			{0, "offer", false, true, false, none},
			{0, "offer", false, false, false, none},
			{time.Millisecond, "offer", true, true, true, none},
		}},
		{"negative window acts as zero", -w, []cstep{
			{0, "offer", true, true, true, none},
			{0, "offer", false, true, false, none},
		}},
		{"stop cancels the pending trailing event", w, []cstep{
			{0, "offer", true, true, true, none},
			{time.Second, "offer", false, false, false, w},
			{2 * time.Second, "stop", false, true, false, none},
			{w, "tick", false, false, false, none},
			{3 * w, "offer", false, false, false, none},
			{3 * w, "offer", true, false, false, none},
			{4 * w, "stop", false, false, false, none},
		}},
		{"stop without anything pending reports false", w, []cstep{
			{0, "offer", true, true, true, none},
			{time.Second, "stop", false, false, false, none},
			{2 * w, "offer", false, false, false, none},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runScript(t, NewCoalescer(tc.window, false), tc.steps)
		})
	}
}

func TestCoalescerBurst(t *testing.T) {
	const w = 5 * time.Second
	for _, flips := range []int{9, 10} { // odd: net change; even: back to the start
		t.Run(fmt.Sprintf("%d flips", flips), func(t *testing.T) {
			c := NewCoalescer(w, false)
			var events []bool
			v := false
			for i := range flips {
				v = !v
				if emit, val := c.Offer(scenarioEpoch.Add(time.Duration(i)*400*time.Millisecond), v); emit {
					events = append(events, val)
				}
			}
			if len(events) != 1 || events[0] != true {
				t.Fatalf("events during the burst %v, want just the leading [true]", events)
			}
			d, ok := c.Deadline()
			wantTrailing := v != true // a net change since the leading event
			if ok != wantTrailing {
				t.Fatalf("deadline pending %v, want %v", ok, wantTrailing)
			}
			if emit, val := c.Tick(scenarioEpoch.Add(w)); emit {
				events = append(events, val)
			}
			if ok && !d.Equal(scenarioEpoch.Add(w)) {
				t.Errorf("deadline %v, want the window end", d)
			}
			if len(events) > 2 {
				t.Fatalf("%d events in one window: %v", len(events), events)
			}
			if c.Published() != v || events[len(events)-1] != v {
				t.Fatalf("final published %v (events %v), want the final input %v", c.Published(), events, v)
			}
			if wantTrailing && len(events) != 2 {
				t.Fatalf("events %v: the net change was not published", events)
			}
		})
	}
}

// TestCoalescerFlapProperty drives a coalescer with long seeded random flap
// sequences, with a punctual and with a late driver, and checks: every event
// is a net change; no window of length W ever holds more than two events;
// and once the input settles the
// published value converges to it.
func TestCoalescerFlapProperty(t *testing.T) {
	const w = 3 * time.Second
	for seed := uint64(1); seed <= 30; seed++ {
		for _, late := range []bool{false, true} {
			rng := rand.New(rand.NewPCG(seed, 42))
			c := NewCoalescer(w, false)
			now := scenarioEpoch
			var times []time.Time
			published, input := false, false
			record := func(at time.Time, emit, v bool) {
				if !emit {
					return
				}
				if v == published {
					t.Fatalf("seed %d late %v: event %v at %v is no net change", seed, late, v, at.Sub(scenarioEpoch))
				}
				published = v
				times = append(times, at)
			}
			for range 3000 {
				next := now.Add(time.Duration(rng.IntN(1500)) * time.Millisecond)
				// The driver ticks at the deadline (or late, at a random
				// later moment, possibly never before the next offer).
				if d, ok := c.Deadline(); ok && !d.After(next) {
					at := d
					if late {
						at = d.Add(time.Duration(rng.IntN(4000)) * time.Millisecond)
					}
					if !at.After(next) {
						emit, v := c.Tick(at)
						record(at, emit, v)
					}
				}
				now = next
				if rng.IntN(3) > 0 {
					input = !input
				}
				emit, v := c.Offer(now, input)
				record(now, emit, v)
			}
			// Settle: tick until nothing is pending.
			for d, ok := c.Deadline(); ok; d, ok = c.Deadline() {
				emit, v := c.Tick(d)
				record(d, emit, v)
			}
			if published != input || c.Published() != input {
				t.Fatalf("seed %d late %v: settled on %v (coalescer %v), input %v", seed, late, published, c.Published(), input)
			}
			if len(times) < 10 {
				t.Fatalf("seed %d late %v: only %d events; the sequence does not flap", seed, late, len(times))
			}
			// Any span [t, t+W) holds at most two events: every three
			// consecutive events span at least W.
			for i := 2; i < len(times); i++ {
				if d := times[i].Sub(times[i-2]); d < w {
					t.Fatalf("seed %d late %v: events %d..%d within %v, three in one window", seed, late, i-2, i, d)
				}
			}
		}
	}
}

func TestCoalescerGenericStatus(t *testing.T) {
	c := NewCoalescer[Status](time.Second, Unknown)
	if emit, v := c.Offer(scenarioEpoch, Healthy); !emit || v != Healthy {
		t.Fatalf("leading: %v %v", emit, v)
	}
	c.Offer(scenarioEpoch.Add(100*time.Millisecond), Degraded)
	c.Offer(scenarioEpoch.Add(200*time.Millisecond), Unhealthy)
	if emit, v := c.Tick(scenarioEpoch.Add(time.Second)); !emit || v != Unhealthy {
		t.Fatalf("trailing: %v %v, want the last status", emit, v)
	}
	if c.Window() != time.Second || c.Published() != Unhealthy {
		t.Fatalf("window %v published %v", c.Window(), c.Published())
	}
}

// With false urgent (a withdrawal), a withdrawal inside a window is
// published at once and opens a window; a recovery is coalesced.
func TestCoalescerUrgent(t *testing.T) {
	const w = 5 * time.Second
	s := time.Second
	tests := []struct {
		name    string
		initial bool
		steps   []cstep
	}{
		{"a withdrawal right after an advertisement goes at once", false, []cstep{
			{0, "offer", true, true, true, none},
			{s, "offer", false, true, false, none},            // urgent: at once, window [1s, 6s)
			{2 * s, "offer", true, false, false, w + s},       // recovery: held to the window's end
			{w + s, "tick", false, true, true, none},          // trailing; closes the window
			{w + 2*s, "offer", false, true, false, none},      // urgent again
			{w + 3*s, "offer", true, false, false, 2*w + 2*s}, // held
		}},
		{"a withdrawal cancels a pending recovery", true, []cstep{
			{0, "offer", false, true, false, none},
			{s, "offer", true, false, false, w},
			{2 * s, "offer", false, false, false, none}, // back to the published value
			{w, "tick", false, false, false, none},
		}},
		{"ten flips from up: withdrawal at once, one trailing recovery", true, []cstep{
			{0, "offer", false, true, false, none},
			{100 * time.Millisecond, "offer", true, false, false, w},
			{200 * time.Millisecond, "offer", false, false, false, none},
			{300 * time.Millisecond, "offer", true, false, false, w},
			{w, "tick", false, true, true, none},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runScript(t, NewCoalescer(w, tc.initial).Urgent(false), tc.steps)
		})
	}
}

// The flap property with an urgent value: random flaps never put three
// events in one window, and the published value settles on the input.
func TestCoalescerUrgentFlapProperty(t *testing.T) {
	const w = 3 * time.Second
	for seed := uint64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		c := NewCoalescer(w, false).Urgent(false)
		now := scenarioEpoch
		var times []time.Time
		input := false
		record := func(at time.Time, emit bool) {
			if emit {
				times = append(times, at)
			}
		}
		for range 3000 {
			next := now.Add(time.Duration(rng.IntN(1500)) * time.Millisecond)
			if d, ok := c.Deadline(); ok && !d.After(next) {
				emit, _ := c.Tick(d)
				record(d, emit)
			}
			now = next
			if rng.IntN(3) > 0 {
				input = !input
			}
			emit, _ := c.Offer(now, input)
			record(now, emit)
		}
		for d, ok := c.Deadline(); ok; d, ok = c.Deadline() {
			emit, _ := c.Tick(d)
			record(d, emit)
		}
		if c.Published() != input {
			t.Fatalf("seed %d: settled on %v, input %v", seed, c.Published(), input)
		}
		for i := 2; i < len(times); i++ {
			if d := times[i].Sub(times[i-2]); d < w {
				t.Fatalf("seed %d: events %d..%d within %v", seed, i-2, i, d)
			}
		}
	}
}
