package edge

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/session"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
	"github.com/fleetgate/fleetgate/pkg/edge/internal/jsontest"
	"github.com/fleetgate/fleetgate/pkg/policy"
)

// A 2026-07-28 call of a hidden tool that binds arguments to headers is
// answered exactly as a call of an unknown tool: its bindings are not
// checked, so the answer names none of its parameters.
func TestHiddenToolWithParamHeaders(t *testing.T) {
	f := newFleet(t)
	b := startBackend(t, "alpha", nil)
	b.AddTool(&mcp.Tool{Name: "route", InputSchema: json.RawMessage(jsontest.RouteSchema)})
	f.healthyBackend("default", b)
	iss := issuertest.New(t, nil)
	e := authEdge(t, f, iss, nil)
	eventually(t, 10*time.Second, "view served", func() bool { _, ok := e.current().Catalog.Tool("alpha_route"); return ok })
	setPolicy(t, f, &policy.Section{Rules: []policy.Rule{{Name: "hide-route", Effect: "deny", Tools: []string{"alpha_route"}}}}, e)
	alice := roleToken(iss, e, "alice")
	meta := `"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":""},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	answer := func(name string) (int, string) {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{%s,"name":%q,"arguments":{"region":"eu"}}}`, meta, name)
		code, _, msg := statelessPost(t, e.MCPURL(), body, map[string]string{"Mcp-Name": name, "Authorization": "Bearer " + alice})
		return code, fmt.Sprint(msg["error"] != nil)
	}
	hc, he := answer("alpha_route")
	uc, ue := answer("alpha_nosuch")
	if hc != uc || he != ue || hc != 200 {
		t.Fatalf("hidden tool: %d error=%s; unknown tool: %d error=%s; want the same 200 answer", hc, he, uc, ue)
	}
}

// Refreshed tokens of one caller (the same visible set) share one filtered
// view: a refresh adds no copy of the view and no policy evaluation.
func TestRefreshedTokensShareFilteredView(t *testing.T) {
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	iss := issuertest.New(t, nil)
	e := authEdge(t, f, iss, nil)
	setPolicy(t, f, &policy.Section{Rules: []policy.Rule{{Name: "hide", Effect: "deny", Tools: []string{"alpha_add"}}}}, e)
	for range 50 {
		tok := roleToken(iss, e, "alice") // a refresh: another jti, the same sub and roles
		if code, _, _ := statelessPost(t, e.MCPURL(), listBody, map[string]string{"Mcp-Method": "tools/list", "Authorization": "Bearer " + tok}); code != 200 {
			t.Fatal(code)
		}
	}
	if nf, misses := e.calls.CacheStats(); nf != 1 || misses != 1 {
		t.Fatalf("%d filtered views and %d policy evaluations for one caller's refreshed tokens, want 1 and 1", nf, misses)
	}
}

// A policy change that leaves a 2026-07-28 caller's visible set as it was
// sends its listen stream nothing: the next change it sees is its first.
func TestListenNotToldOfUnchangedSet(t *testing.T) {
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	f.healthyBackend("default", startBackend(t, "beta", nil))
	iss := issuertest.New(t, nil)
	e := authEdge(t, f, iss, &Options{Coalesce: time.Millisecond, CallTimeout: 10 * time.Second})
	bob := roleToken(iss, e, "bob", "ops")
	c := connectWith(t, e.MCPURL(), "", tokenHTTP(func() string { return bob }))
	if !c.toolNames(t)["beta_echo"] {
		t.Fatal("bob does not see beta")
	}
	eventually(t, 10*time.Second, "listen stream open", func() bool {
		for _, s := range e.reg.All() {
			if s.Kind() == session.KindListen {
				return true
			}
		}
		return false
	})
	n0 := c.changed.Load()
	setPolicy(t, f, opsOnlyBeta, e)     // bob keeps beta: nothing to tell him
	f.health("default", "alpha", false) // a change bob sees
	c.waitChanged(t, n0+1, 10*time.Second)
	if n := c.changed.Load() - n0; n != 1 {
		t.Fatalf("bob's stream told %d times, want once (the health change only)", n)
	}
}
