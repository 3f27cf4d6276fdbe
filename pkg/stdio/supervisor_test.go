package stdio

import (
	"testing"
	"time"
)

// TestSupervisor runs scripted inputs through a Supervisor and checks the
// action, state and wake after each.
func TestSupervisor(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	ms := time.Millisecond
	pol := Policy{MinBackoff: 100 * ms, MaxBackoff: 400 * ms, MaxRestartsPerMinute: 3, Grace: time.Second}
	type step struct {
		in     Input
		action Action
		state  State
		wake   time.Duration // from t0; -1 for none
	}
	in := func(k InputKind, d time.Duration) Input { return Input{Kind: k, At: at(d), Reason: "r"} }
	spawn, none, term, kill := Action{Spawn: true}, Action{}, Action{Terminate: true}, Action{Kill: true}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"start, ready, stop, exit", []step{
			{in(Start, 0), spawn, Starting, -1},
			{in(Ready, 10*ms), none, Up, -1},
			{in(Stop, 20*ms), term, Stopping, 20*ms + time.Second},
			{in(Tick, 500*ms), none, Stopping, 20*ms + time.Second},
			{in(Exited, 600*ms), none, Stopped, -1},
			{in(Start, 700*ms), none, Stopped, -1},
		}},
		{"SIGKILL after the grace", []step{
			{in(Start, 0), spawn, Starting, -1},
			{in(Ready, 0), none, Up, -1},
			{in(Stop, 0), term, Stopping, time.Second},
			{in(Tick, time.Second), kill, Stopping, -1},
			{in(Tick, 2*time.Second), none, Stopping, -1},
			{in(Exited, 2*time.Second), none, Stopped, -1},
		}},
		{"backoff doubles, capped at MaxBackoff", []step{
			{in(Start, 0), spawn, Starting, -1},
			{in(Failed, 0), none, Backoff, 100 * ms},
			{in(Tick, 50*ms), none, Backoff, 100 * ms},
			{in(Tick, 100*ms), spawn, Starting, -1},
			{in(Failed, 100*ms), none, Backoff, 300 * ms},
			{in(Tick, 300*ms), spawn, Starting, -1},
			{in(Failed, 300*ms), none, Backoff, 700 * ms},
			// The cap: 3 starts in the minute; the 4th waits for the first to leave it.
			{in(Tick, 700*ms), none, Backoff, time.Minute + 1},
			{in(Kick, 800*ms), none, Backoff, time.Minute + 1},
			{in(Tick, time.Minute+1), spawn, Starting, -1},
			{in(Failed, time.Minute+1), none, Backoff, time.Minute + 1 + 400*ms},
		}},
		{"an exit after a long run restarts after MinBackoff", []step{
			{in(Start, 0), spawn, Starting, -1},
			{in(Failed, 0), none, Backoff, 100 * ms},
			{in(Tick, 100*ms), spawn, Starting, -1},
			{in(Ready, 100*ms), none, Up, -1},
			{in(Exited, 10*time.Second), none, Backoff, 10*time.Second + 100*ms},
		}},
		{"an exit soon after start keeps backing off", []step{
			{in(Start, 0), spawn, Starting, -1},
			{in(Ready, 0), none, Up, -1},
			{in(Exited, 10*ms), none, Backoff, 110 * ms},
			{in(Tick, 110*ms), spawn, Starting, -1},
			{in(Ready, 110*ms), none, Up, -1},
			{in(Exited, 120*ms), none, Backoff, 320 * ms},
		}},
		{"kick restarts at once", []step{
			{in(Start, 0), spawn, Starting, -1},
			{in(Ready, 0), none, Up, -1},
			{in(Exited, 10*ms), none, Backoff, 110 * ms},
			{in(Kick, 20*ms), spawn, Starting, -1},
			{in(Kick, 30*ms), none, Starting, -1},
		}},
		{"stop while starting, then ready", []step{
			{in(Start, 0), spawn, Starting, -1},
			{in(Stop, 0), none, Starting, -1},
			{in(Ready, 10*ms), term, Stopping, 10*ms + time.Second},
			{in(Exited, 20*ms), none, Stopped, -1},
		}},
		{"stop while starting, then failed", []step{
			{in(Start, 0), spawn, Starting, -1},
			{in(Stop, 0), none, Starting, -1},
			{in(Failed, 10*ms), none, Stopped, -1},
		}},
		{"stop in backoff", []step{
			{in(Start, 0), spawn, Starting, -1},
			{in(Failed, 0), none, Backoff, 100 * ms},
			{in(Stop, 10*ms), none, Stopped, -1},
			{in(Tick, time.Second), none, Stopped, -1},
		}},
		{"stop before start", []step{
			{in(Stop, 0), none, Stopped, -1},
			{in(Start, 0), none, Stopped, -1},
		}},
		{"stray inputs ignored", []step{
			{in(Ready, 0), none, Idle, -1},
			{in(Exited, 0), none, Idle, -1},
			{in(Tick, 0), none, Idle, -1},
			{in(Kick, 0), none, Idle, -1},
			{in(Start, 0), spawn, Starting, -1},
			{in(Exited, 0), none, Starting, -1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSupervisor(pol)
			for i, st := range tc.steps {
				s.Step(st.in)
				a := s.Take()
				var wake time.Duration = -1
				if w := s.Wake(); !w.IsZero() {
					wake = w.Sub(t0)
				}
				if a != st.action || s.State() != st.state || wake != st.wake {
					t.Fatalf("step %d (%v at %v): action %+v state %v wake %v; want %+v %v %v",
						i, st.in.Kind, st.in.At.Sub(t0), a, s.State(), wake, st.action, st.state, st.wake)
				}
				if a2 := s.Take(); a2 != none {
					t.Fatalf("step %d: Take twice gave %+v", i, a2)
				}
			}
		})
	}
}

// TestSupervisorRestartCap: however inputs come, no minute holds more
// than MaxRestartsPerMinute spawns, and the wait never exceeds MaxBackoff
// except for the cap.
func TestSupervisorRestartCap(t *testing.T) {
	pol := Policy{MinBackoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond, MaxRestartsPerMinute: 5}
	s := NewSupervisor(pol)
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var spawns []time.Time
	s.Step(Input{Kind: Start, At: now})
	for i := 0; i < 5000; i++ {
		if s.Take().Spawn {
			spawns = append(spawns, now)
			s.Step(Input{Kind: Failed, At: now})
			if w := s.Wake().Sub(now); w > pol.MaxBackoff && !s.Capped() {
				t.Fatalf("wait %v over MaxBackoff without the cap", w)
			}
		}
		now = now.Add(7 * time.Millisecond)
		if i%3 == 0 {
			s.Step(Input{Kind: Kick, At: now})
		} else {
			s.Step(Input{Kind: Tick, At: now})
		}
	}
	for i := range spawns {
		n := 0
		for j := i; j < len(spawns) && spawns[j].Sub(spawns[i]) < time.Minute; j++ {
			n++
		}
		if n > pol.MaxRestartsPerMinute {
			t.Fatalf("%d spawns in the minute from %v", n, spawns[i])
		}
	}
	if len(spawns) < 5 {
		t.Fatalf("only %d spawns", len(spawns))
	}

}
