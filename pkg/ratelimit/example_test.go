package ratelimit_test

import (
	"fmt"
	"time"

	"github.com/fleetgate/fleetgate/pkg/ratelimit"
)

func Example() {
	lim, err := ratelimit.New(ratelimit.Limits{
		Identity: &ratelimit.IdentityLimits{RequestsPerSecond: 1, Burst: 2, ConcurrentCalls: 1},
		Tools: []ratelimit.ToolRule{
			{Name: "search", Tools: []string{"search_*"}, RequestsPerSecond: 0.5, PerIdentity: true},
		},
		FailedAuth: &ratelimit.FailedAuthLimits{PerAddressPerMinute: 2, Burst: 1},
	}, nil)
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	addr := ratelimit.ClientAddr("192.0.2.10:51234")

	// A client whose token fails is slowed down before its next try.
	lim.FailedAuth(now, addr)
	d := lim.AuthBlocked(now, addr)
	fmt.Println("auth:", d.Allowed, d.Reason, d.RetryAfterHeader())

	// Requests of one identity: a burst of 2, then 429.
	for range 3 {
		if d := lim.Request(now, "alice"); d.Allowed {
			fmt.Println("request: allowed")
		} else {
			fmt.Println("request: 429", d.Reason, "Retry-After:", d.RetryAfterHeader())
		}
	}

	// A tool call holds a slot until it ends.
	d, release := lim.Call(now, "alice", "search_docs")
	fmt.Println("call:", d.Allowed)
	d2, _ := lim.Call(now, "alice", "other")
	fmt.Println("second call:", d2.Allowed, d2.Reason)
	release()
	d3, release3 := lim.Call(now, "alice", "search_web")
	defer release3()
	fmt.Println("search again:", d3.Allowed, d3.Reason, d3.Rule, d3.RetryAfterHeader())
	// Output:
	// auth: false failed_auth 30
	// request: allowed
	// request: allowed
	// request: 429 identity_rate Retry-After: 1
	// call: true
	// second call: false concurrency
	// search again: false tool_rate search 2
}
