package ratelimit_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/ratelimit"
)

var t0 = time.Unix(1_800_000_000, 0)

func at(d time.Duration) time.Time { return t0.Add(d) }

func mustNew(t testing.TB, l ratelimit.Limits, o *ratelimit.Options) *ratelimit.Limiter {
	t.Helper()
	lim, err := ratelimit.New(l, o)
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

func identityRate(rps float64, burst int) ratelimit.Limits {
	return ratelimit.Limits{Identity: &ratelimit.IdentityLimits{RequestsPerSecond: rps, Burst: burst}}
}

// step is one request at a time offset and the decision it must get.
type step struct {
	at      time.Duration
	allowed bool
	retry   time.Duration // when refused
}

func runSteps(t *testing.T, steps []step, do func(time.Time) ratelimit.Decision) {
	t.Helper()
	for i, s := range steps {
		d := do(at(s.at))
		if d.Allowed != s.allowed || (!s.allowed && d.RetryAfter != s.retry) {
			t.Fatalf("step %d at +%v: got %+v, want allowed %v retry %v", i, s.at, d, s.allowed, s.retry)
		}
		if d.Allowed && (d.Reason != "" || d.RetryAfter != 0 || d.RetryAfterHeader() != "") {
			t.Fatalf("step %d: allowed decision carries %+v", i, d)
		}
	}
}

func TestRequestBurstThenRefill(t *testing.T) {
	tests := []struct {
		name  string
		rps   float64
		burst int
		steps []step
	}{
		{"burst 4 at 2/s", 2, 4, []step{
			{0, true, 0}, {0, true, 0}, {0, true, 0}, {0, true, 0},
			{0, false, time.Second},                                  // 0.5s to the next token
			{500 * time.Millisecond, true, 0},                        // one refilled
			{500 * time.Millisecond, false, time.Second},             // 0.5s more
			{10 * time.Second, true, 0}, {10 * time.Second, true, 0}, // refilled to the burst, no more
			{10 * time.Second, true, 0}, {10 * time.Second, true, 0},
			{10 * time.Second, false, time.Second},
		}},
		{"default burst is ceil(rps)", 2.5, 0, []step{
			{0, true, 0}, {0, true, 0}, {0, true, 0}, {0, false, time.Second},
		}},
		{"default burst at least 1", 0.1, 0, []step{
			{0, true, 0},
			{0, false, 10 * time.Second},
			{2500 * time.Millisecond, false, 8 * time.Second}, // 7.5s rounds up
			{9900 * time.Millisecond, false, time.Second},     // 0.1s rounds up to 1s
			{10 * time.Second, true, 0},
		}},
		{"slowest rate", 0.001, 1, []step{{0, true, 0}, {0, false, 1000 * time.Second}}},
		{"time going back does not refill", 1, 1, []step{
			{5 * time.Second, true, 0}, {4 * time.Second, false, time.Second}, {6 * time.Second, true, 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := mustNew(t, identityRate(tt.rps, tt.burst), nil)
			runSteps(t, tt.steps, func(now time.Time) ratelimit.Decision {
				d := lim.Request(now, "alice")
				if !d.Allowed && (d.Reason != ratelimit.ReasonIdentityRate || d.Rule != ratelimit.RuleIdentityRate) {
					t.Fatalf("refusal %+v", d)
				}
				return d
			})
		})
	}
}

func TestRetryAfterHeader(t *testing.T) {
	lim := mustNew(t, identityRate(0.25, 1), nil)
	lim.Request(t0, "a")
	d := lim.Request(at(1500*time.Millisecond), "a") // 2.5s left
	if d.RetryAfter != 3*time.Second || d.RetryAfterSeconds() != 3 || d.RetryAfterHeader() != "3" {
		t.Fatalf("got %+v (%q)", d, d.RetryAfterHeader())
	}
}

func TestIdentityIndependence(t *testing.T) {
	lim := mustNew(t, identityRate(5, 10), nil)
	for i := range 10_000 {
		lim.Request(at(time.Duration(i)*time.Microsecond), "mallory")
	}
	if d := lim.Request(t0, "mallory"); d.Allowed {
		t.Fatal("mallory not limited")
	}
	for i := range 10 {
		if d := lim.Request(at(10*time.Millisecond), "alice"); !d.Allowed {
			t.Fatalf("alice's request %d refused: %+v", i, d)
		}
	}
	// One long identity and another sharing its first 200 bytes are two.
	long := strings.Repeat("x", 200)
	lim.Request(t0, long+"1")
	for range 20 {
		lim.Request(t0, long+"1")
	}
	if d := lim.Request(t0, long+"2"); !d.Allowed {
		t.Fatal("a long identity limited by another")
	}
}

func TestToolRules(t *testing.T) {
	rules := func(perIdentity bool) ratelimit.Limits {
		return ratelimit.Limits{Tools: []ratelimit.ToolRule{
			{Name: "search", Tools: []string{"search_*", "find"}, RequestsPerSecond: 1, Burst: 2, PerIdentity: perIdentity},
			{Tools: []string{"*"}, RequestsPerSecond: 100, Burst: 1}, // catch-all, unnamed: "tools[1]"
		}}
	}
	type call struct {
		id, tool string
		allowed  bool
		rule     string
	}
	tests := []struct {
		name  string
		l     ratelimit.Limits
		calls []call
	}{
		{"shared", rules(false), []call{
			{"alice", "search_docs", true, ""},
			{"bob", "find", true, ""},
			{"bob", "search_web", false, "search"}, // the budget is the tools' own
			{"alice", "search_docs", false, "search"},
			{"alice", "other", true, ""}, // the catch-all applies instead
			{"bob", "other", false, "tools[1]"},
		}},
		{"per identity", rules(true), []call{
			{"alice", "search_docs", true, ""},
			{"alice", "find", true, ""},
			{"alice", "search_web", false, "search"},
			{"bob", "search_web", true, ""}, // bob has his own budget
			{"bob", "search_web", true, ""},
			{"bob", "find", false, "search"},
		}},
		{"no rule matches", ratelimit.Limits{Tools: []ratelimit.ToolRule{{Tools: []string{"a"}, RequestsPerSecond: 1}}}, []call{
			{"x", "b", true, ""}, {"x", "b", true, ""}, {"x", "b", true, ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := mustNew(t, tt.l, nil)
			for i, c := range tt.calls {
				d, release := lim.Call(t0, c.id, c.tool)
				release()
				if d.Allowed != c.allowed || d.Rule != c.rule {
					t.Fatalf("call %d %+v: got %+v", i, c, d)
				}
				if !d.Allowed && (d.Reason != ratelimit.ReasonToolRate || d.RetryAfter != time.Second) {
					t.Fatalf("call %d: refusal %+v", i, d)
				}
			}
			// A second later one token is back.
			if d, _ := lim.Call(at(time.Second), tt.calls[0].id, tt.calls[0].tool); !d.Allowed {
				t.Fatalf("no refill: %+v", d)
			}
		})
	}
}

func TestConcurrencySlots(t *testing.T) {
	l := ratelimit.Limits{
		Identity: &ratelimit.IdentityLimits{ConcurrentCalls: 2},
		Tools:    []ratelimit.ToolRule{{Tools: []string{"slow"}, RequestsPerSecond: 1, Burst: 3}},
	}
	lim := mustNew(t, l, nil)
	d1, r1 := lim.Call(t0, "alice", "t")
	d2, r2 := lim.Call(t0, "alice", "t")
	d3, r3 := lim.Call(t0, "alice", "t")
	if !d1.Allowed || !d2.Allowed || d3.Allowed {
		t.Fatalf("got %+v %+v %+v", d1, d2, d3)
	}
	if d3.Reason != ratelimit.ReasonConcurrency || d3.Rule != ratelimit.RuleConcurrency || d3.RetryAfter != time.Second {
		t.Fatalf("refusal %+v", d3)
	}
	r3() // a refused call's release frees nothing
	if d, _ := lim.Call(t0, "alice", "t"); d.Allowed {
		t.Fatal("a refused call's release freed a slot")
	}
	if d, r := lim.Call(t0, "bob", "t"); !d.Allowed { // another identity's slots
		t.Fatalf("bob refused: %+v", d)
	} else {
		r()
	}
	r1()
	r1() // twice: frees one slot only
	d4, r4 := lim.Call(t0, "alice", "t")
	if d5, _ := lim.Call(t0, "alice", "t"); !d4.Allowed || d5.Allowed {
		t.Fatalf("after releasing one slot twice: %+v %+v", d4, d5)
	}
	r2()
	r4()
	// A concurrency refusal takes no tool token; a tool refusal takes no slot.
	var held []func()
	for range 2 {
		d, r := lim.Call(t0, "carol", "slow")
		if !d.Allowed {
			t.Fatalf("carol: %+v", d)
		}
		held = append(held, r)
	}
	if d, _ := lim.Call(t0, "carol", "slow"); d.Reason != ratelimit.ReasonConcurrency {
		t.Fatalf("want concurrency: %+v", d)
	}
	held[0]()
	if d, r := lim.Call(t0, "carol", "slow"); !d.Allowed { // the third token is still there
		t.Fatalf("want allowed: %+v", d)
	} else {
		r()
	}
	if d, _ := lim.Call(t0, "carol", "slow"); d.Reason != ratelimit.ReasonToolRate {
		t.Fatalf("want tool_rate: %+v", d)
	}
	if d, r := lim.Call(t0, "carol", "fast"); !d.Allowed { // that refusal held no slot
		t.Fatalf("want allowed: %+v", d)
	} else {
		r()
	}
	held[1]()
}

func TestEvictedKeyStartsFresh(t *testing.T) {
	lim := mustNew(t, identityRate(1, 1), &ratelimit.Options{MaxKeys: 2})
	lim.Request(t0, "a")
	if lim.Request(t0, "a").Allowed {
		t.Fatal("a not limited")
	}
	lim.Request(t0, "b")
	lim.Request(t0, "c") // evicts a, the least recently used
	if s := lim.Sizes(); s.Identities != 2 {
		t.Fatalf("sizes %+v", s)
	}
	if !lim.Request(t0, "a").Allowed {
		t.Fatal("an evicted key should start afresh (fail-open)")
	}
}

func TestInFlightIdentityNotEvicted(t *testing.T) {
	l := ratelimit.Limits{Identity: &ratelimit.IdentityLimits{ConcurrentCalls: 1}}
	lim := mustNew(t, l, &ratelimit.Options{MaxKeys: 2})
	_, release := lim.Call(t0, "a", "t")
	for _, id := range []string{"b", "c", "d", "e"} {
		_, r := lim.Call(t0, id, "t")
		r()
	}
	if d, _ := lim.Call(t0, "a", "t"); d.Allowed {
		t.Fatal("a's in-flight call was forgotten")
	}
	// Every entry busy: a new identity is served untracked, the map stays bounded.
	_, rb := lim.Call(t0, "b", "t")
	for _, id := range []string{"x", "y", "z"} {
		if d, r := lim.Call(t0, id, "t"); !d.Allowed {
			t.Fatalf("%s: %+v", id, d)
		} else {
			defer r()
		}
	}
	if s := lim.Sizes(); s.Identities != 2 {
		t.Fatalf("sizes %+v", s)
	}
	release()
	rb()
	if d, r := lim.Call(t0, "a", "t"); !d.Allowed {
		t.Fatalf("a after release: %+v", d)
	} else {
		r()
	}
}

func TestBoundedUnderChurn(t *testing.T) {
	n := 1_000_000
	if testing.Short() || raceEnabled {
		n = 250_000 // still 2.5 times the bound
	}
	l := ratelimit.Limits{
		Identity:   &ratelimit.IdentityLimits{RequestsPerSecond: 1, ConcurrentCalls: 4},
		Tools:      []ratelimit.ToolRule{{Tools: []string{"*"}, RequestsPerSecond: 1, PerIdentity: true}},
		FailedAuth: &ratelimit.FailedAuthLimits{PerAddressPerMinute: 1},
	}
	lim := mustNew(t, l, nil)
	buf := make([]byte, 0, 32)
	for i := range n {
		buf = append(buf[:0], "id-"...)
		key := string(appendInt(buf, i))
		lim.Request(t0, key)
		_, r := lim.Call(t0, key, "tool")
		r()
		lim.FailedAuth(t0, key)
	}
	s := lim.Sizes()
	if s.Identities > ratelimit.DefaultMaxKeys || s.IdentityTools > ratelimit.DefaultMaxKeys || s.Addresses > ratelimit.DefaultMaxKeys {
		t.Fatalf("maps grew past the bound: %+v", s)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	runtime.KeepAlive(lim)
	t.Logf("%d distinct keys: sizes %+v, heap in use %d MiB", n, s, ms.HeapInuse>>20)
}

func appendInt(b []byte, i int) []byte {
	if i >= 10 {
		b = appendInt(b, i/10)
	}
	return append(b, byte('0'+i%10))
}

func TestNilLimiter(t *testing.T) {
	var lim *ratelimit.Limiter
	d, release := lim.Call(t0, "a", "t")
	release()
	release()
	if !d.Allowed || !lim.Request(t0, "a").Allowed || !lim.FailedAuth(t0, "a").Allowed || !lim.AuthBlocked(t0, "a").Allowed {
		t.Fatal("a nil limiter refused")
	}
	if lim.Sizes() != (ratelimit.Sizes{}) || !lim.Limits().IsZero() {
		t.Fatal("a nil limiter has state")
	}
	if err := lim.Update(ratelimit.Limits{}); err == nil {
		t.Fatal("Update of a nil limiter succeeded")
	}
}

func TestZeroLimitsAllowEverything(t *testing.T) {
	lim := mustNew(t, ratelimit.Limits{}, nil)
	for range 1000 {
		d, r := lim.Call(t0, "a", "t")
		r()
		if !d.Allowed || !lim.Request(t0, "a").Allowed || !lim.FailedAuth(t0, "a").Allowed || !lim.AuthBlocked(t0, "a").Allowed {
			t.Fatal("refused without limits")
		}
	}
	if s := lim.Sizes(); s != (ratelimit.Sizes{}) {
		t.Fatalf("state without limits: %+v", s)
	}
}
