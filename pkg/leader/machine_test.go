package leader

import (
	"testing"
	"time"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const ms = time.Millisecond

// mstep is one input to a Machine with the Action it must return. The
// machine's TTL is 6s: poll 1.5s, retry 600ms, validity 5.4s, renew 2s.
type mstep struct {
	at   time.Duration
	in   string        // start, absent, lease, getfail, written, conflict, fail, lapse
	rev  uint64        // lease: observed revision; written: new revision
	ttl  time.Duration // lease: the TTL written in the lease (0: none)
	sent time.Duration // written: when the write was sent
	want Action        // At is read as an offset from epoch
	lead uint64        // term the machine leads in after the step (0: none)
}

func act(op Op, rev uint64, at time.Duration) Action {
	return Action{Op: op, Rev: rev, At: epoch.Add(at)}
}

func renew(rev, term uint64, at time.Duration) Action {
	return Action{Op: OpRenew, Rev: rev, Term: term, At: epoch.Add(at)}
}

func ev(a Action, e Event, term uint64) Action { a.Event, a.Term = e, term; return a }

func runMachine(t *testing.T, m *Machine, steps []mstep) {
	t.Helper()
	for i, s := range steps {
		now := epoch.Add(s.at)
		var got Action
		switch s.in {
		case "start":
			got = m.Start(now)
		case "absent":
			got = m.Observed(now, Observation{})
		case "lease":
			got = m.Observed(now, Observation{Found: true, Revision: s.rev, Lease: Lease{Holder: "other", TTL: s.ttl}})
		case "own": // a lease under the machine's own id ("self")
			got = m.Observed(now, Observation{Found: true, Revision: s.rev, Lease: Lease{Holder: "self", TTL: s.ttl}})
		case "getfail":
			got = m.GetFailed(now)
		case "written":
			got = m.Written(epoch.Add(s.sent), now, s.rev)
		case "conflict":
			got = m.WriteFailed(now, true)
		case "fail":
			got = m.WriteFailed(now, false)
		case "lapse":
			got = m.Lapse(now)
		default:
			t.Fatalf("step %d: bad input %q", i, s.in)
		}
		want := s.want
		want.At = epoch.Add(s.want.At.Sub(epoch))
		if got != want {
			t.Fatalf("step %d (%s at %v):\n got %+v (at %v)\nwant %+v (at %v)", i, s.in, s.at, got, got.At.Sub(epoch), want, want.At.Sub(epoch))
		}
		term, _, ok := m.Leading(now)
		if (s.lead != 0) != ok || term != s.lead {
			t.Fatalf("step %d (%s at %v): leading term %d (%v), want %d", i, s.in, s.at, term, ok, s.lead)
		}
	}
}

func TestMachine(t *testing.T) {
	const ttl = 6 * time.Second
	s := time.Second
	tests := []struct {
		name  string
		steps []mstep
	}{
		{"absent key: create, elected with the revision as term, renew every TTL/3", []mstep{
			{at: 0, in: "start", want: act(OpGet, 0, 0)},
			{at: 0, in: "absent", want: act(OpCreate, 0, 0)},
			{at: 10 * ms, in: "written", sent: 0, rev: 7, want: ev(renew(7, 7, 2*s), EventElected, 7), lead: 7},
			{at: 2*s + 10*ms, in: "written", sent: 2 * s, rev: 8, want: renew(8, 7, 4*s), lead: 7},
			{at: 4*s + 10*ms, in: "written", sent: 4 * s, rev: 9, want: renew(9, 7, 6*s), lead: 7},
		}},
		{"foreign lease: wait its TTL from first sight, then take over", []mstep{
			{at: 0, in: "lease", rev: 5, ttl: ttl, want: act(OpGet, 0, 1500*ms)},
			{at: 1500 * ms, in: "lease", rev: 5, ttl: ttl, want: act(OpGet, 0, 3*s)},
			{at: 4500 * ms, in: "lease", rev: 5, ttl: ttl, want: act(OpGet, 0, 6*s)},
			{at: 6 * s, in: "lease", rev: 5, ttl: ttl, want: act(OpTakeover, 5, 6*s)},
			{at: 6*s + 10*ms, in: "written", sent: 6 * s, rev: 9, want: ev(renew(9, 9, 8*s), EventElected, 9), lead: 9},
		}},
		{"a renewed foreign lease restarts the wait", []mstep{
			{at: 0, in: "lease", rev: 5, ttl: ttl, want: act(OpGet, 0, 1500*ms)},
			{at: 1500 * ms, in: "lease", rev: 6, ttl: ttl, want: act(OpGet, 0, 3*s)},
			{at: 6 * s, in: "lease", rev: 6, ttl: ttl, want: act(OpGet, 0, 7500*ms)},
			{at: 7500 * ms, in: "lease", rev: 6, ttl: ttl, want: act(OpTakeover, 6, 7500*ms)},
		}},
		{"the lease's own TTL decides, not the observer's", []mstep{
			{at: 0, in: "lease", rev: 5, ttl: 2 * s, want: act(OpGet, 0, 1500*ms)},
			{at: 1500 * ms, in: "lease", rev: 5, ttl: 2 * s, want: act(OpGet, 0, 2*s)},
			{at: 2 * s, in: "lease", rev: 5, ttl: 2 * s, want: act(OpTakeover, 5, 2*s)},
		}},
		{"a lease without a TTL expires after the observer's", []mstep{
			{at: 0, in: "lease", rev: 5, want: act(OpGet, 0, 1500*ms)},
			{at: 5900 * ms, in: "lease", rev: 5, want: act(OpGet, 0, 6*s)},
			{at: 6 * s, in: "lease", rev: 5, want: act(OpTakeover, 5, 6*s)},
		}},
		{"losing the takeover race: read again, time the winner from now", []mstep{
			{at: 0, in: "lease", rev: 5, ttl: ttl, want: act(OpGet, 0, 1500*ms)},
			{at: 6 * s, in: "lease", rev: 5, ttl: ttl, want: act(OpTakeover, 5, 6*s)},
			{at: 6*s + 5*ms, in: "conflict", want: act(OpGet, 0, 6*s+5*ms)},
			{at: 6*s + 6*ms, in: "lease", rev: 10, ttl: ttl, want: act(OpGet, 0, 7*s+506*ms)},
		}},
		{"losing the create race", []mstep{
			{at: 0, in: "absent", want: act(OpCreate, 0, 0)},
			{at: 1 * ms, in: "conflict", want: act(OpGet, 0, 1*ms)},
			{at: 2 * ms, in: "lease", rev: 3, ttl: ttl, want: act(OpGet, 0, 1502*ms)},
		}},
		{"a failed read retries and does not restart the wait", []mstep{
			{at: 0, in: "lease", rev: 5, ttl: ttl, want: act(OpGet, 0, 1500*ms)},
			{at: 1500 * ms, in: "getfail", want: act(OpGet, 0, 2100*ms)},
			{at: 5800 * ms, in: "lease", rev: 5, ttl: ttl, want: act(OpGet, 0, 6*s)},
		}},
		{"a failed acquisition retries after a pause", []mstep{
			{at: 0, in: "absent", want: act(OpCreate, 0, 0)},
			{at: 100 * ms, in: "fail", want: act(OpGet, 0, 700*ms)},
		}},
		{"renewal conflict: lost at once, the new holder is timed from now", []mstep{
			{at: 0, in: "absent", want: act(OpCreate, 0, 0)},
			{at: 1 * ms, in: "written", sent: 0, rev: 1, want: ev(renew(1, 1, 2*s), EventElected, 1), lead: 1},
			{at: 2 * s, in: "conflict", want: ev(act(OpGet, 0, 2*s), EventLost, 1)},
			{at: 2*s + 1*ms, in: "lease", rev: 3, ttl: ttl, want: act(OpGet, 0, 3*s+501*ms)},
		}},
		{"renewal errors retry until the validity passes, then lost", []mstep{
			{at: 0, in: "absent", want: act(OpCreate, 0, 0)},
			{at: 1 * ms, in: "written", sent: 0, rev: 1, want: ev(renew(1, 1, 2*s), EventElected, 1), lead: 1},
			{at: 2100 * ms, in: "fail", want: renew(1, 1, 2700*ms), lead: 1},
			{at: 5 * s, in: "fail", want: renew(1, 1, 5400*ms), lead: 1},
			{at: 5400 * ms, in: "fail", want: ev(act(OpGet, 0, 5400*ms), EventLost, 1)},
			// Its own old lease is now a foreign one, timed from now.
			{at: 5500 * ms, in: "lease", rev: 1, ttl: ttl, want: act(OpGet, 0, 7*s)},
		}},
		{"a renewal confirmed after the validity steps down", []mstep{
			{at: 0, in: "absent", want: act(OpCreate, 0, 0)},
			{at: 1 * ms, in: "written", sent: 0, rev: 1, want: ev(renew(1, 1, 2*s), EventElected, 1), lead: 1},
			{at: 5500 * ms, in: "written", sent: 2 * s, rev: 2, want: ev(act(OpGet, 0, 5500*ms), EventLost, 1)},
		}},
		{"an acquisition confirmed after its validity is not trusted", []mstep{
			{at: 0, in: "absent", want: act(OpCreate, 0, 0)},
			{at: 5400 * ms, in: "written", sent: 0, rev: 1, want: act(OpGet, 0, 5400*ms)},
		}},
		{"a leader reading another revision was deposed", []mstep{
			{at: 0, in: "absent", want: act(OpCreate, 0, 0)},
			{at: 1 * ms, in: "written", sent: 0, rev: 1, want: ev(renew(1, 1, 2*s), EventElected, 1), lead: 1},
			{at: 1 * s, in: "lease", rev: 1, ttl: ttl, want: renew(1, 1, 1*s), lead: 1},
			{at: 1 * s, in: "lease", rev: 4, ttl: ttl, want: ev(act(OpGet, 0, 1*s), EventLost, 1)},
		}},
		{"lapse steps a leader down", []mstep{
			{at: 0, in: "absent", want: act(OpCreate, 0, 0)},
			{at: 1 * ms, in: "written", sent: 0, rev: 1, want: ev(renew(1, 1, 2*s), EventElected, 1), lead: 1},
			{at: 1 * s, in: "lapse", want: ev(act(OpGet, 0, 1*s), EventLost, 1)},
			{at: 1 * s, in: "lapse", want: act(OpGet, 0, 1*s)},
		}},
		{"the leader is not leading once its validity has passed", []mstep{
			{at: 0, in: "absent", want: act(OpCreate, 0, 0)},
			{at: 1 * ms, in: "written", sent: 0, rev: 1, want: ev(renew(1, 1, 2*s), EventElected, 1), lead: 1},
			// Paused: the next input arrives late; Leading already says no.
			{at: 5400 * ms, in: "getfail", want: renew(1, 1, 5400*ms)},
			{at: 5400 * ms, in: "fail", want: ev(act(OpGet, 0, 5400*ms), EventLost, 1)},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runMachine(t, NewMachine(ttl), tc.steps)
		})
	}
}

func TestMachineResign(t *testing.T) {
	m := NewMachine(time.Second)
	if _, _, ok := m.Resign(); ok {
		t.Fatal("a standby resigned")
	}
	m.Observed(epoch, Observation{})
	m.Written(epoch, epoch.Add(ms), 42)
	m.Written(epoch.Add(333*ms), epoch.Add(334*ms), 43)
	rev, term, ok := m.Resign()
	if !ok || rev != 43 || term != 42 {
		t.Fatalf("Resign = %d, %d, %v; want revision 43, term 42", rev, term, ok)
	}
	if _, _, ok := m.Leading(epoch.Add(335 * ms)); ok {
		t.Fatal("still leading after Resign")
	}
}

// A machine that finds a lease under its own id (its previous run's)
// takes it over at once; a foreign lease is still waited out.
func TestMachineResumesOwnLease(t *testing.T) {
	const ttl = 6 * time.Second
	tests := []struct {
		name  string
		steps []mstep
	}{
		{"own lease at start: takeover now, elected in the new revision's term", []mstep{
			{at: 0, in: "start", want: act(OpGet, 0, 0)},
			{at: 0, in: "own", rev: 7, ttl: ttl, want: act(OpTakeover, 7, 0)},
			{at: 10 * ms, in: "written", rev: 8, sent: 0, want: ev(renew(8, 8, 2*time.Second), EventElected, 8), lead: 8},
		}},
		{"own lease, takeover conflicts (someone moved it): read again, then wait out the foreign lease", []mstep{
			{at: 0, in: "start", want: act(OpGet, 0, 0)},
			{at: 0, in: "own", rev: 7, ttl: ttl, want: act(OpTakeover, 7, 0)},
			{at: 10 * ms, in: "conflict", want: act(OpGet, 0, 10*ms)},
			{at: 20 * ms, in: "lease", rev: 9, ttl: ttl, want: act(OpGet, 0, 20*ms+1500*ms)},
		}},
		{"a foreign lease is still waited out", []mstep{
			{at: 0, in: "start", want: act(OpGet, 0, 0)},
			{at: 0, in: "lease", rev: 7, ttl: ttl, want: act(OpGet, 0, 1500*ms)},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine(ttl)
			m.SetID("self")
			runMachine(t, m, tc.steps)
		})
	}
	// Without an id every lease is foreign.
	m := NewMachine(ttl)
	m.Start(epoch)
	if a := m.Observed(epoch, Observation{Found: true, Revision: 7, Lease: Lease{Holder: "self", TTL: ttl}}); a.Op != OpGet {
		t.Fatalf("no id: %+v, want a poll", a)
	}
}
