package edge

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
	"github.com/fleetgate/fleetgate/pkg/edge/clientaddr"
	"github.com/fleetgate/fleetgate/pkg/policy"
	"github.com/fleetgate/fleetgate/pkg/ratelimit"
)

// postFrom posts body with token as a proxy forwarding for client
// (X-Forwarded-For) and returns the status.
func postFrom(t *testing.T, url, client, token, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Forwarded-For", "198.51.100.200, "+client) // the first entry is the client's own claim
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// Behind a trusted proxy, failed authentications are charged to the
// client the proxy forwarded for, not to the proxy: mallory's failures
// block mallory and nobody else, on the net/http path and on a call lane
// (whose requests come from one connection of the proxy). Without the
// setting, the proxy's address is charged and one client blocks
// everyone behind it.
func TestFailedAuthBehindTrustedProxy(t *testing.T) {
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	iss := issuertest.New(t, nil)
	proxies, err := clientaddr.New(&clientaddr.Options{Trusted: "127.0.0.0/8, ::1"})
	if err != nil {
		t.Fatal(err)
	}
	trusting := authEdge(t, f, iss, &Options{TrustedProxies: proxies, CallTimeout: 10 * time.Second})
	plain := authEdge(t, f, iss, nil)
	budget := &policy.Section{RateLimits: &ratelimit.Limits{
		FailedAuth: &ratelimit.FailedAuthLimits{PerAddressPerMinute: 1, Burst: 2}}}
	setPolicy(t, f, budget, trusting, plain)
	const mallory, alice = "203.0.113.66", "203.0.113.7"
	for _, e := range []*Edge{trusting, plain} {
		good := iss.Mint(iss.Claims("alice", e.MCPURL()))
		for i := range 2 {
			if code := postFrom(t, e.MCPURL(), mallory, "garbage", initBody); code != http.StatusUnauthorized {
				t.Fatalf("mallory's bad token %d: %d", i, code)
			}
		}
		if code := postFrom(t, e.MCPURL(), mallory, good, initBody); code != http.StatusTooManyRequests {
			t.Fatalf("mallory after the budget: %d, want 429", code)
		}
		code := postFrom(t, e.MCPURL(), alice, good, initBody)
		switch {
		case e == trusting && code != http.StatusOK:
			t.Fatalf("alice behind the same trusted proxy: %d, want 200", code)
		case e == plain && code != http.StatusTooManyRequests:
			t.Fatalf("alice behind an untrusted proxy: %d, want 429 (the proxy's address is charged)", code)
		}
	}

	// A call lane: one connection of the proxy carries both clients.
	eventually(t, 10*time.Second, "view served", func() bool { _, ok := trusting.current().Catalog.Tool("alpha_echo"); return ok })
	good := iss.Mint(iss.Claims("carol", trusting.MCPURL()))
	cs := connectWith(t, trusting.MCPURL(), "2025-11-25", tokenHTTP(func() string { return good })).cs
	fastReady(t, trusting, cs.ID())
	lc := dialLane(t, trusting)
	auth := func(token, client string) []string {
		return []string{"Authorization: Bearer " + token, "X-Forwarded-For: " + client}
	}
	const eve, dave = "203.0.113.99", "203.0.113.8"
	lc.send(laneRequest(cs.ID(), callBody("1", "alpha_echo"), auth(good, dave)...))
	if res, body := lc.read(); res.StatusCode != http.StatusOK {
		t.Fatalf("first call (opens the lane): %d %s", res.StatusCode, body)
	}
	eventually(t, 10*time.Second, "lane open", func() bool { return testutil.ToFloat64(lanesGauge(trusting)) == 1 })
	for i := range 2 {
		lc.send(laneRequest(cs.ID(), callBody("2", "alpha_echo"), auth("garbage", eve)...))
		if res, _ := lc.read(); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("eve's bad token %d on the lane: %d", i, res.StatusCode)
		}
	}
	lc.send(laneRequest(cs.ID(), callBody("3", "alpha_echo"), auth(good, eve)...))
	if res, _ := lc.read(); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("eve after her budget on the lane: %d, want 429", res.StatusCode)
	}
	lc.send(laneRequest(cs.ID(), callBody("4", "alpha_echo"), auth(good, dave)...))
	if res, body := lc.read(); res.StatusCode != http.StatusOK {
		t.Fatalf("dave on the same lane: %d %s, want 200", res.StatusCode, body)
	}
	if n := testutil.ToFloat64(lanesGauge(trusting)); n != 1 {
		t.Fatalf("%v lanes after the calls, want 1: the requests did not stay on the lane", n)
	}
}
