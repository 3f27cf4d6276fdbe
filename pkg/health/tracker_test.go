package health

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

type statusPair struct{ from, to Status }

// reachablePairs are all status changes the rules allow; the scenario files
// must exercise every one of them. (Unhealthy/unauthenticated/unknown-after-
// failure never go straight to healthy, unhealthy never goes to unknown.)
var reachablePairs = []statusPair{
	{Unknown, Healthy}, {Unknown, Degraded}, {Unknown, Unhealthy}, {Unknown, Unauthenticated},
	{Healthy, Degraded}, {Healthy, Unknown}, {Healthy, Unhealthy}, {Healthy, Unauthenticated},
	{Degraded, Healthy}, {Degraded, Unknown}, {Degraded, Unhealthy}, {Degraded, Unauthenticated},
	{Unhealthy, Degraded}, {Unhealthy, Unauthenticated},
	{Unauthenticated, Degraded}, {Unauthenticated, Unknown}, {Unauthenticated, Unhealthy},
}

func TestTrackerScenarios(t *testing.T) {
	scs := loadScenarios(t, "testdata/tracker")
	seen := map[statusPair]bool{}
	thresholds := map[int]bool{}
	for _, sc := range scs {
		t.Run(sc.name, func(t *testing.T) {
			tr := NewTracker(sc.policy)
			thresholds[tr.Policy().UnhealthyAfter] = true
			if tr.Status() != Unknown || tr.Advertisable() {
				t.Fatalf("%s (%s): new tracker: status %s advertisable %v, want unknown, false", sc.file, sc.name, tr.Status(), tr.Advertisable())
			}
			for _, st := range sc.steps {
				before := tr.Status()
				got := tr.Step(st.obs)
				loc := fmt.Sprintf("%s:%d", sc.file, st.line)
				if got.To != st.want || got.Changed != st.changed || got.AdvertisabilityChanged != st.advChanged {
					t.Fatalf("%s: step %v %v lat=%v: got %s->%s changed=%v adv=%v (%s), want %s changed=%v adv=%v",
						loc, st.obs.At.Sub(scenarioEpoch), st.obs.Result, st.obs.Latency,
						got.From, got.To, got.Changed, got.AdvertisabilityChanged, got.Reason,
						st.want, st.changed, st.advChanged)
				}
				if got.From != before || tr.Status() != got.To || tr.Reason() != got.Reason || !got.At.Equal(st.obs.At) {
					t.Fatalf("%s: transition %+v inconsistent with tracker (before %s, now %s %q)", loc, got, before, tr.Status(), tr.Reason())
				}
				if st.reason != "" && !strings.Contains(got.Reason, st.reason) {
					t.Fatalf("%s: reason %q does not contain %q", loc, got.Reason, st.reason)
				}
				if got.Changed {
					seen[statusPair{got.From, got.To}] = true
				}
			}
		})
	}
	for _, p := range reachablePairs {
		if !seen[p] {
			t.Errorf("no scenario covers the change %s -> %s", p.from, p.to)
		}
	}
	for _, n := range []int{1, 2, 3} {
		if !thresholds[n] {
			t.Errorf("no scenario uses unhealthy_after=%d", n)
		}
	}
}

// TestTrackerInvariants steps trackers with long seeded random observation
// sequences and checks the rules as invariants rather than by example.
func TestTrackerInvariants(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed*7919))
		p := Policy{Interval: time.Second, Timeout: 400 * time.Millisecond, UnhealthyAfter: 1 + rng.IntN(3)}
		tr := NewTracker(p)
		now := scenarioEpoch
		fails := 0
		probed := false
		var okSince time.Time // start of the current run of OK results
		recoveryRun := false  // that run began after a probed, unadvertisable state
		for i := range 2000 {
			now = now.Add(time.Duration(rng.IntN(800)) * time.Millisecond)
			o := Observation{At: now, Latency: time.Duration(rng.IntN(300)) * time.Millisecond}
			switch r := rng.IntN(10); {
			case r < 6:
				o.Result = OK
			case r < 9:
				o.Result = Failure
			default:
				o.Result = AuthFailure
			}
			prevOK := tr.Status() == Healthy || tr.Status() == Degraded
			wasProbed := probed
			tr2 := tr.Step(o)
			probed = true
			where := fmt.Sprintf("seed %d step %d (%v %v from %s)", seed, i, o.Result, o.Latency, tr2.From)
			if tr2.Changed != (tr2.From != tr2.To) || tr2.AdvertisabilityChanged != (Advertisable(tr2.From) != Advertisable(tr2.To)) {
				t.Fatalf("%s: inconsistent flags %+v", where, tr2)
			}
			switch o.Result {
			case AuthFailure:
				fails = 0
				if tr2.To != Unauthenticated {
					t.Fatalf("%s: auth failure gave %s", where, tr2.To)
				}
			case Failure:
				fails++
				want := Unknown
				if fails >= p.UnhealthyAfter {
					want = Unhealthy
				}
				if tr2.To != want || tr.ConsecutiveFailures() != fails {
					t.Fatalf("%s: failure %d/%d gave %s (count %d), want %s", where, fails, p.UnhealthyAfter, tr2.To, tr.ConsecutiveFailures(), want)
				}
			case OK:
				fails = 0
				if !prevOK {
					okSince, recoveryRun = now, wasProbed
				}
				if !Advertisable(tr2.To) {
					t.Fatalf("%s: success gave unadvertisable %s", where, tr2.To)
				}
				slow := o.Latency > p.Timeout/2
				if slow && tr2.To != Degraded {
					t.Fatalf("%s: slow success gave %s", where, tr2.To)
				}
				// A run of successes that began after a failure, unhealthy or
				// unauthenticated is a recovery: degraded until a fast
				// success at least Interval after the run began. A run that
				// began on the very first observation is no recovery.
				if !slow {
					want := Healthy
					if recoveryRun && now.Sub(okSince) < p.Interval {
						want = Degraded
					}
					if tr2.To != want {
						t.Fatalf("%s: fast success %v into the run (recovery %v) gave %s, want %s", where, now.Sub(okSince), recoveryRun, tr2.To, want)
					}
				}
			}
		}
	}
}

func TestTrackerRecoveryTiming(t *testing.T) {
	// Recovery begins at the first success; healthy needs a fast success at
	// least Interval later, measured from that first success, not from the
	// previous probe.
	tr := NewTracker(Policy{Interval: 10 * time.Second, UnhealthyAfter: 1})
	at := func(s int) time.Time { return scenarioEpoch.Add(time.Duration(s) * time.Second) }
	steps := []struct {
		sec  int
		res  Result
		want Status
	}{
		{0, OK, Healthy},
		{1, Failure, Unhealthy},
		{2, OK, Degraded}, // recovery begins at 2s
		{5, OK, Degraded},
		{9, OK, Degraded},
		{11, OK, Degraded}, // 9s after 2s: not yet
		{12, OK, Healthy},  // exactly Interval after: healthy
	}
	for _, s := range steps {
		if got := tr.Step(Observation{At: at(s.sec), Result: s.res}).To; got != s.want {
			t.Fatalf("at %ds %v: got %s, want %s", s.sec, s.res, got, s.want)
		}
	}
}

func TestTrackerReasons(t *testing.T) {
	tr := NewTracker(Policy{UnhealthyAfter: 3})
	if !strings.Contains(tr.Reason(), "not probed") {
		t.Errorf("initial reason %q", tr.Reason())
	}
	tests := []struct {
		obs  Observation
		want string
	}{
		{Observation{Result: Failure, Reason: "connection refused"}, "probe failed (1 of 3 failures before unhealthy): connection refused"},
		{Observation{Result: Failure}, "probe failed (2 of 3 failures before unhealthy)"},
		{Observation{Result: Result(0), Reason: "zero"}, "3 consecutive probe failures: invalid probe result Result(0): zero"},
		{Observation{Result: AuthFailure, Reason: "HTTP 403"}, "authentication rejected: HTTP 403"},
		{Observation{Result: OK, Latency: 1500 * time.Millisecond}, "slow probe: latency 1.5s over 1s (half the timeout)"},
		{Observation{Result: OK}, "recovering: probes must succeed for 5s before healthy"},
		{Observation{Result: OK, At: scenarioEpoch.AddDate(1, 0, 0)}, "probe succeeded"},
	}
	for i, tc := range tests {
		if got := tr.Step(tc.obs).Reason; got != tc.want {
			t.Errorf("step %d (%v): reason %q, want %q", i, tc.obs.Result, got, tc.want)
		}
	}
}

func TestNewTrackerDefaultsAndPanics(t *testing.T) {
	if got, want := NewTracker(Policy{}).Policy(), (Policy{Interval: 5 * time.Second, Timeout: 2 * time.Second, UnhealthyAfter: 2, Debounce: 5 * time.Second}); got != want {
		t.Errorf("defaults: got %+v, want %+v", got, want)
	}
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), "unhealthy_after") {
			t.Errorf("NewTracker with negative unhealthy_after: recovered %v, want a panic naming the field", r)
		}
	}()
	NewTracker(Policy{UnhealthyAfter: -1})
}

func TestResultString(t *testing.T) {
	got := []string{OK.String(), Failure.String(), AuthFailure.String(), Result(7).String()}
	want := []string{"ok", "failure", "auth-failure", "Result(7)"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
