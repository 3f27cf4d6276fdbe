package ratelimit_test

import (
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/ratelimit"
)

func TestFailedAuth(t *testing.T) {
	lim := mustNew(t, ratelimit.Limits{FailedAuth: &ratelimit.FailedAuthLimits{PerAddressPerMinute: 6, Burst: 3}}, nil)
	const addr = "192.0.2.7"
	type op struct {
		at      time.Duration
		fail    bool // FailedAuth, else AuthBlocked
		allowed bool
		retry   time.Duration
	}
	ops := []op{
		{0, false, true, 0}, // an address never seen is not blocked
		{0, true, true, 0},
		{0, true, true, 0},
		{0, true, false, 10 * time.Second}, // the third failure spends the budget
		{0, false, false, 10 * time.Second},
		{4 * time.Second, false, false, 6 * time.Second},
		{10 * time.Second, false, true, 0}, // one try per 10s
		{10 * time.Second, true, false, 10 * time.Second},
		{11 * time.Second, false, false, 9 * time.Second},
		{50 * time.Second, false, true, 0}, // recovered: the whole burst again
		{50 * time.Second, true, true, 0},
		{50 * time.Second, true, true, 0},
		{50 * time.Second, false, true, 0},
	}
	for i, o := range ops {
		var d ratelimit.Decision
		if o.fail {
			d = lim.FailedAuth(at(o.at), addr)
		} else {
			d = lim.AuthBlocked(at(o.at), addr)
		}
		if d.Allowed != o.allowed || (!o.allowed && (d.RetryAfter != o.retry || d.Reason != ratelimit.ReasonFailedAuth || d.Rule != ratelimit.RuleFailedAuth)) {
			t.Fatalf("op %d %+v: got %+v", i, o, d)
		}
	}
	if d := lim.AuthBlocked(t0, "192.0.2.8"); !d.Allowed {
		t.Fatal("another address blocked")
	}
	if d := lim.Request(t0, "x"); !d.Allowed {
		t.Fatal("failed_auth alone limits requests")
	}
}

func TestClientAddr(t *testing.T) {
	tests := map[string]string{
		"192.0.2.1:5000":             "192.0.2.1",
		"192.0.2.1":                  "192.0.2.1",
		"[::ffff:192.0.2.1]:80":      "192.0.2.1",
		"[2001:db8:1:2:3:4:5:6]:443": "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::1":       "2001:db8:1:2::/64",
		"[fe80::1%eth0]:80":          "fe80::/64",
		"not an address":             "not an address",
		"":                           "",
	}
	for in, want := range tests {
		if got := ratelimit.ClientAddr(in); got != want {
			t.Errorf("ClientAddr(%q) = %q, want %q", in, got, want)
		}
	}
}
