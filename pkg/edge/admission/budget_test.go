package admission

import (
	"strings"
	"testing"
)

func TestSessionsFor(t *testing.T) {
	for _, tc := range []struct {
		budget, init int64
		want         int
	}{
		{0, DefaultMaxInitializeBytes, DefaultMaxSessions},        // unknown budget
		{1 << 30, DefaultMaxInitializeBytes, 1436},                // the chart's 1 GiB at 64 KiB initializes
		{1 << 30, 4 << 10, DefaultMaxSessions},                    // small initializes: the default cap binds
		{256 << 20, DefaultMaxInitializeBytes, 359},               // a small pod
		{1 << 20, DefaultMaxInitializeBytes, 1},                   // never 0
		{64 << 30, DefaultMaxInitializeBytes, DefaultMaxSessions}, // a large host
	} {
		got := SessionsFor(tc.budget, tc.init)
		if got != tc.want {
			t.Errorf("SessionsFor(%d MiB, %d) = %d, want %d", tc.budget>>20, tc.init, got, tc.want)
		}
		if tc.budget > 1<<20 && int64(got)*SessionCost(tc.init) > tc.budget/100*SessionShare {
			t.Errorf("SessionsFor(%d MiB, %d) = %d: %d MiB of sessions, over the share", tc.budget>>20, tc.init, got, int64(got)*SessionCost(tc.init)>>20)
		}
	}
}

func TestCheckSessionBudget(t *testing.T) {
	if err := CheckSessionBudget(DefaultMaxSessions, 1<<30, DefaultMaxInitializeBytes); err == nil || !strings.Contains(err.Error(), "at most 1436 fit") {
		t.Fatalf("10,000 sessions of 64 KiB initializes in 1 GiB: %v", err)
	}
	for _, ok := range []struct {
		n      int
		budget int64
	}{{1436, 1 << 30}, {-1, 1 << 30}, {DefaultMaxSessions, 0}} {
		if err := CheckSessionBudget(ok.n, ok.budget, DefaultMaxInitializeBytes); err != nil {
			t.Errorf("%d sessions in %d MiB: %v", ok.n, ok.budget>>20, err)
		}
	}
}
