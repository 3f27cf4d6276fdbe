package edge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/policy"
)

// opsOnlyBeta is the contract's example: beta's tools only for callers
// whose token has the role ops.
var opsOnlyBeta = &policy.Section{Rules: []policy.Rule{{Name: "ops-only-beta", Effect: "deny",
	Tools: []string{"beta_*"}, When: `!("ops" in claims.roles)`}}}

// setPolicy publishes s as the fleet's policy and waits until e applied it.
func setPolicy(t *testing.T, f *fleet, s *policy.Section, edges ...*Edge) {
	t.Helper()
	gen := f.publish(events.NewPolicyChanged(time.Now(), s))
	for _, e := range edges {
		eventually(t, 10*time.Second, "policy applied", func() bool { return e.confirmed.Load() >= gen })
	}
}

// roleToken mints a token of sub for e with the given roles.
func roleToken(iss *issuertest.Issuer, e *Edge, sub string, roles ...string) string {
	c := iss.Claims(sub, e.MCPURL())
	r := make([]any, len(roles))
	for i, x := range roles {
		r[i] = x
	}
	c["roles"] = r
	return iss.Mint(c)
}

// Rules by claim, on both protocol generations: a tool the caller may not
// use is absent from its list, and a call of it is answered as for an
// unknown tool; another caller's roles see and call it.
func TestPolicyByClaim(t *testing.T) {
	iss := issuertest.New(t, nil)
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := serveMemoryEdge(t, &Options{CallTimeout: 10 * time.Second, Auth: memoryAuth(iss)})
				e.serveBackend(t, demobackend.New("alpha", nil))
				e.serveBackend(t, demobackend.New("beta", nil))
				e.settle()
				e.setPolicy(opsOnlyBeta)
				e.settle()
				alice, bob := roleToken(iss, e.Edge, "alice"), roleToken(iss, e.Edge, "bob", "ops")
				ca := connectWith(t, e.MCPURL(), v.version, tokenHTTP(func() string { return alice }))
				cb := connectWith(t, e.MCPURL(), v.version, tokenHTTP(func() string { return bob }))
				if names := ca.toolNames(t); !names["alpha_echo"] || names["beta_echo"] {
					t.Fatalf("alice lists %v", names)
				}
				if names := cb.toolNames(t); !names["alpha_echo"] || !names["beta_echo"] {
					t.Fatalf("bob lists %v", names)
				}
				if res := ca.call(t, "beta_echo", map[string]any{"text": "x"}); !res.IsError || !strings.Contains(text(res), "not available") {
					t.Fatalf("alice's call of a hidden tool: %v %q", res.IsError, text(res))
				}
				if res := cb.call(t, "beta_echo", map[string]any{"text": "x"}); res.IsError || text(res) != "beta: x" {
					t.Fatalf("bob's call: %q", text(res))
				}
				if res := ca.call(t, "alpha_echo", map[string]any{"text": "x"}); res.IsError || text(res) != "alpha: x" {
					t.Fatalf("alice's call of a visible tool: %q", text(res))
				}
			})
		})
	}
}

// find_tool never returns a hidden tool, and call_tool refuses one as an
// unknown tool.
func TestPolicyFindTool(t *testing.T) {
	iss := issuertest.New(t, nil)
	synctest.Test(t, func(t *testing.T) {
		e := serveMemoryEdge(t, &Options{Mode: ModeOptimizer, CallTimeout: 10 * time.Second, Auth: memoryAuth(iss)})
		e.serveBackend(t, demobackend.New("alpha", nil))
		e.serveBackend(t, demobackend.New("beta", nil))
		e.settle()
		e.setPolicy(opsOnlyBeta)
		e.settle()
		testPolicyFindTool(t, e, iss)
	})
}

// testPolicyFindTool is TestPolicyFindTool on e, serving alpha and beta
// under opsOnlyBeta.
func testPolicyFindTool(t *testing.T, e *memoryEdge, iss *issuertest.Issuer) {
	alice, bob := roleToken(iss, e.Edge, "alice"), roleToken(iss, e.Edge, "bob", "ops")
	ca := connectWith(t, e.MCPURL(), "2025-11-25", tokenHTTP(func() string { return alice }))
	cb := connectWith(t, e.MCPURL(), "2025-11-25", tokenHTTP(func() string { return bob }))
	found := func(c *client) map[string]bool {
		res := c.call(t, FindToolName, map[string]any{"query": "echo", "limit": 50})
		var r struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
			CatalogTools int `json:"catalog_tools"`
		}
		if err := json.Unmarshal([]byte(text(res)), &r); err != nil {
			t.Fatalf("find_tool: %v: %s", err, text(res))
		}
		names := map[string]bool{}
		for _, x := range r.Tools {
			names[x.Name] = true
		}
		return names
	}
	if got := found(ca); !got["alpha_echo"] || got["beta_echo"] {
		t.Fatalf("alice finds %v", got)
	}
	if got := found(cb); !got["alpha_echo"] || !got["beta_echo"] {
		t.Fatalf("bob finds %v", got)
	}
	res := ca.call(t, CallToolName, map[string]any{"tool_name": "beta_echo", "arguments": map[string]any{"text": "x"}})
	if !res.IsError || !strings.Contains(text(res), "not available") {
		t.Fatalf("alice's call_tool of a hidden tool: %q", text(res))
	}
	if res := cb.call(t, CallToolName, map[string]any{"tool_name": "beta_echo", "arguments": map[string]any{"text": "x"}}); res.IsError || text(res) != "beta: x" {
		t.Fatalf("bob's call_tool: %q", text(res))
	}
}

// An evaluation error fails closed: a deny rule over a claim the token
// lacks hides the tool.
func TestPolicyFailsClosed(t *testing.T) {
	iss := issuertest.New(t, nil)
	synctest.Test(t, func(t *testing.T) {
		e := serveMemoryEdge(t, &Options{CallTimeout: 10 * time.Second, Auth: memoryAuth(iss)})
		e.up("alpha", "echo")
		e.settle()
		e.setPolicy(&policy.Section{Rules: []policy.Rule{{Name: "needs-team", Effect: "deny",
			When: `claims.team != "core"`}}}) // no team claim: an error, so the rule matches
		e.settle()
		tok := roleToken(iss, e.Edge, "alice")
		c := connectWith(t, e.MCPURL(), "2025-11-25", tokenHTTP(func() string { return tok }))
		if names := c.toolNames(t); len(names) != 0 {
			t.Fatalf("lists %v, want nothing", names)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha_echo", Arguments: map[string]any{}}); err != nil || !res.IsError {
			t.Fatalf("call: %v, %v", res, err)
		}
	})
}

// A 2026-07-28 list says how it may be cached: "public" while every
// caller sees the same, "private" once a policy filters it per caller.
func TestListCacheScope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := serveMemoryEdge(t, nil)
		e.up("alpha", "echo")
		e.settle()
		c := connect(t, e.MCPURL(), "")
		scope := func() string {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, err := c.cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			return res.CacheScope
		}
		if got := scope(); got != "public" {
			t.Fatalf("cacheScope without a policy: %q", got)
		}
		e.setPolicy(opsOnlyBeta)
		e.settle()
		if got := scope(); got != "private" {
			t.Fatalf("cacheScope under a policy: %q", got)
		}
	})
}
