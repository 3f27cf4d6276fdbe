package edge

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/policy"
	"github.com/fleetgate/fleetgate/pkg/ratelimit"
)

// limitedPost posts a tools/call of tool on session sid as user and
// returns the status and Retry-After.
func limitedPost(t *testing.T, e *Edge, sid, user, tool string) (int, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"text":"x"}}}`
	req, _ := http.NewRequest(http.MethodPost, e.MCPURL(), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set(userHeader, user)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, res.Header.Get("Retry-After")
}

// The policy's rate limits: an identity over its request rate gets 429
// with Retry-After and another identity is not slowed; a tool budget
// shared by all callers limits that tool only.
func TestRateLimits(t *testing.T) { synctest.Test(t, testRateLimits) }

func testRateLimits(t *testing.T) {
	m := serveMemoryEdge(t, &Options{IdentityHeader: userHeader, CallTimeout: 10 * time.Second})
	m.serveBackend(t, demobackend.New("alpha", nil))
	m.serveBackend(t, demobackend.New("beta", nil))
	m.settle()
	e := m.Edge
	if _, ok := e.current().Catalog.Tool("beta_echo"); !ok {
		t.Fatal("beta_echo not served")
	}
	alice, bob := rawInitialize(t, e.MCPURL(), "alice"), rawInitialize(t, e.MCPURL(), "bob")
	m.setPolicy(&policy.Section{RateLimits: &ratelimit.Limits{
		Identity: &ratelimit.IdentityLimits{RequestsPerSecond: 0.01, Burst: 3},
		Tools:    []ratelimit.ToolRule{{Name: "beta-budget", Tools: []string{"beta_*"}, RequestsPerSecond: 0.01, Burst: 1}},
	}})
	m.settle()
	for i := range 3 {
		if code, _ := limitedPost(t, e, alice, "alice", "alpha_echo"); code != http.StatusOK {
			t.Fatalf("alice's call %d within her burst: %d", i, code)
		}
	}
	code, retry := limitedPost(t, e, alice, "alice", "alpha_echo")
	if code != http.StatusTooManyRequests || retry == "" || retry == "0" {
		t.Fatalf("alice over her rate: %d, Retry-After %q; want 429 with a Retry-After", code, retry)
	}
	if code, _ := limitedPost(t, e, bob, "bob", "beta_echo"); code != http.StatusOK {
		t.Fatalf("bob's first beta call: %d", code)
	}
	if code, _ := limitedPost(t, e, bob, "bob", "beta_echo"); code != http.StatusTooManyRequests {
		t.Fatalf("bob's second beta call, over the tool's budget: %d, want 429", code)
	}
	if code, _ := limitedPost(t, e, bob, "bob", "alpha_echo"); code != http.StatusOK {
		t.Fatalf("bob's alpha call: %d (the beta budget must not apply)", code)
	}
	for reason, want := range map[string]float64{"identity_rate": 1, "tool_rate": 1, "concurrency": 0} {
		if n := testutil.ToFloat64(e.limits.limited.WithLabelValues(reason)); n != want {
			t.Fatalf("rate-limited requests by %s: %v, want %v", reason, n, want)
		}
	}
}

// Failed authentications from one client address are slowed: past the
// budget, even a good token is refused 429 before it is verified.
func TestFailedAuthSlowed(t *testing.T) {
	iss := issuertest.New(t, nil)
	synctest.Test(t, func(t *testing.T) { testFailedAuthSlowed(t, iss) })
}

func testFailedAuthSlowed(t *testing.T, iss *issuertest.Issuer) {
	m := serveMemoryEdge(t, &Options{CallTimeout: 10 * time.Second, Auth: memoryAuth(iss)})
	m.setPolicy(&policy.Section{RateLimits: &ratelimit.Limits{
		FailedAuth: &ratelimit.FailedAuthLimits{PerAddressPerMinute: 1, Burst: 2}}})
	m.settle()
	e := m.Edge
	good := iss.Mint(iss.Claims("alice", e.MCPURL()))
	if res := postWithToken(t, e.MCPURL(), "", good, initBody); res.StatusCode != http.StatusOK {
		t.Fatalf("good token: %d", res.StatusCode)
	}
	for i := range 2 {
		if res := postWithToken(t, e.MCPURL(), "", "garbage", initBody); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("bad token %d: %d", i, res.StatusCode)
		}
	}
	res := postWithToken(t, e.MCPURL(), "", good, initBody)
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
		t.Fatalf("after the failures: %d, Retry-After %q; want 429", res.StatusCode, res.Header.Get("Retry-After"))
	}
}
