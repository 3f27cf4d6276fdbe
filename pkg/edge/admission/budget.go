package admission

import (
	"fmt"
)

// Session caps that hold together with the memory an edge is given: the
// default cap on sessions is what fits the sessions' share of the memory
// budget at the worst-case cost of a session, the cost an initialize of
// the largest size allowed (MaxInitializeBytes) makes a session hold.

// Per-session memory, measured (README "Memory per session"): an idle
// session holds about 13 KiB; one whose initialize carried L bytes holds
// about 5.5 L more (its params raw for its record and decoded by the
// go-sdk): 150 sessions created with 60 KiB initializes grew the edge by
// 50 MiB of RSS (test/hostile_test.go).
const (
	IdleSessionBytes = 13 << 10
	initCostNum      = 11 // 5.5 = 11/2
	initCostDen      = 2
)

// SessionShare is the share of the memory budget sessions may take, in
// percent: the rest holds calls in flight (a response each, up to the
// backend response limit), the served view and the runtime.
const SessionShare = 50

// SessionCost is the memory a session holds at worst when an initialize
// may carry maxInitialize bytes.
func SessionCost(maxInitialize int64) int64 {
	return IdleSessionBytes + maxInitialize*initCostNum/initCostDen
}

// SessionsFor is the default cap on sessions of an edge with budget bytes
// of memory: as many worst-case sessions as fit in SessionShare of it, at
// most DefaultMaxSessions and at least 1. A budget <= 0 (unknown) gives
// DefaultMaxSessions.
func SessionsFor(budget, maxInitialize int64) int {
	if budget <= 0 {
		return DefaultMaxSessions
	}
	n := budget / 100 * SessionShare / SessionCost(maxInitialize)
	return int(max(1, min(n, DefaultMaxSessions)))
}

// CheckSessionBudget reports an error when sessions sessions of worst-case
// cost (initialize limit maxInitialize) need more than SessionShare of
// budget; nil when they fit, or budget or sessions is not positive (none
// or no cap: nothing to compare).
func CheckSessionBudget(sessions int, budget, maxInitialize int64) error {
	if budget <= 0 || sessions <= 0 {
		return nil
	}
	if fit := SessionsFor(budget, maxInitialize); sessions > fit && int64(sessions)*SessionCost(maxInitialize) > budget/100*SessionShare {
		return fmt.Errorf("%d sessions of up to %d KiB each (an initialize of up to %d bytes) need %d MiB, over %d%% of the memory budget of %d MiB: at most %d fit (lower the initialize limit for more)",
			sessions, SessionCost(maxInitialize)>>10, maxInitialize, int64(sessions)*SessionCost(maxInitialize)>>20, SessionShare, budget>>20, fit)
	}
	return nil
}
