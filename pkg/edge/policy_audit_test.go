package edge

import (
	"net/http"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
	"github.com/fleetgate/fleetgate/pkg/calltrail"
	"github.com/fleetgate/fleetgate/pkg/policy"
)

// The call trail names the caller of each call by its token's iss and
// sub, and a call the policy refused by the rule that refused it; the
// edge counts authentications by result and reason and refusals by rule.
func TestPolicyRefusalsAudited(t *testing.T) {
	f := newSharedFleet(t)
	trail, err := calltrail.Open(t.Context(), f.js, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	f.healthyBackend("default", startBackend(t, "beta", nil))
	iss := issuertest.New(t, nil)
	e := authEdge(t, f.fleet, iss, &Options{CallTrail: trail})
	setPolicy(t, f.fleet, opsOnlyBeta, e)
	alice := roleToken(iss, e, "alice")
	ca := connectWith(t, e.MCPURL(), "2025-11-25", tokenHTTP(func() string { return alice }))
	if res := ca.call(t, "alpha_echo", map[string]any{"text": "x"}); res.IsError {
		t.Fatalf("alice's call of a visible tool: %q", text(res))
	}
	if res := ca.call(t, "beta_echo", map[string]any{"text": "x"}); !res.IsError {
		t.Fatal("alice's call of a hidden tool was served")
	}
	if res := postWithToken(t, e.MCPURL(), "", iss.Mint(iss.Claims("mallory", "https://elsewhere.example/mcp")), initBody); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a token for another audience: %d, want 401", res.StatusCode)
	}

	got := trailEntries(t, f, trail, 2)
	if ok := got[0]; ok.Tool != "alpha_echo" || ok.Outcome != calltrail.OutcomeOK || ok.Issuer != iss.URL() ||
		ok.Subject != "alice" || ok.Rule != "" {
		t.Fatalf("entry of the allowed call %+v", ok)
	}
	if refused := got[1]; refused.Tool != "beta_echo" || refused.Outcome != calltrail.OutcomeError ||
		refused.Issuer != iss.URL() || refused.Subject != "alice" || refused.Rule != "ops-only-beta" {
		t.Fatalf("entry of the refused call %+v", refused)
	}
	if n := testutil.ToFloat64(e.calls.Refused().WithLabelValues("ops-only-beta")); n != 1 {
		t.Fatalf("policy refusals by ops-only-beta: %v, want 1", n)
	}
	if n := testutil.ToFloat64(e.bearer.Results().WithLabelValues("ok", "")); n < 3 {
		t.Fatalf("authentications ok: %v, want at least 3 (initialize and two calls)", n)
	}
	if n := metricValue(t, e, "fleetgate_edge_authentications_total") - testutil.ToFloat64(e.bearer.Results().WithLabelValues("ok", "")); n != 1 {
		t.Fatalf("authentications refused: %v, want 1", n)
	}
}

// The policy applies to prompts and resources as to tools, on both
// protocol generations: a caller without the role lists neither of beta's
// and is refused its prompt and its resource; one with it gets both.
func TestPolicyPromptsAndResources(t *testing.T) {
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	f.healthyBackend("default", startBackend(t, "beta", nil))
	iss := issuertest.New(t, nil)
	e := authEdge(t, f, iss, nil)
	setPolicy(t, f, &policy.Section{Rules: []policy.Rule{{Name: "ops-only-beta-content", Effect: "deny",
		Prompts: []string{"beta_*"}, Resources: []string{"demo://beta/*"}, When: `!("ops" in claims.roles)`}}}, e)
	alice, bob := roleToken(iss, e, "alice"), roleToken(iss, e, "bob", "ops")
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			ctx := t.Context()
			for _, who := range []struct {
				name  string
				token string
				sees  bool
			}{{"alice", alice, false}, {"bob", bob, true}} {
				c := connectWith(t, e.MCPURL(), v.version, tokenHTTP(func() string { return who.token }))
				prompts, err := c.cs.ListPrompts(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, p := range prompts.Prompts {
					names = append(names, p.Name)
				}
				if slices.Contains(names, "alpha_greet") != true || slices.Contains(names, "beta_greet") != who.sees {
					t.Fatalf("%s lists prompts %v", who.name, names)
				}
				res, err := c.cs.ListResources(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				var uris []string
				for _, r := range res.Resources {
					uris = append(uris, r.URI)
				}
				if !slices.Contains(uris, "demo://alpha/readme") || slices.Contains(uris, "demo://beta/readme") != who.sees {
					t.Fatalf("%s lists resources %v", who.name, uris)
				}
				_, perr := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "beta_greet", Arguments: map[string]string{"name": "x"}})
				_, rerr := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://beta/readme"})
				if (perr == nil) != who.sees || (rerr == nil) != who.sees {
					t.Fatalf("%s: prompts/get of beta_greet: %v; resources/read of beta's readme: %v", who.name, perr, rerr)
				}
				if _, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "alpha_greet", Arguments: map[string]string{"name": "x"}}); err != nil {
					t.Fatalf("%s: prompts/get of alpha_greet: %v", who.name, err)
				}
			}
		})
	}
	if n := testutil.ToFloat64(e.calls.Refused().WithLabelValues("ops-only-beta-content")); n != 4 {
		t.Fatalf("refusals by the rule: %v, want 4 (a get and a read on each generation)", n)
	}
}
