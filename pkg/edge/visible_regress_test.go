package edge

import (
	"encoding/json"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/session"

	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
	"github.com/fleetgate/fleetgate/pkg/edge/internal/jsontest"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/policy"
)

// A 2026-07-28 call of a hidden tool that binds arguments to headers is
// answered exactly as a call of an unknown tool: its bindings are not
// checked, so the answer names none of its parameters.
func TestHiddenToolWithParamHeaders(t *testing.T) {
	iss := issuertest.New(t, nil)
	synctest.Test(t, func(t *testing.T) {
		e := serveMemoryEdge(t, &Options{CallTimeout: 10 * time.Second, Auth: memoryAuth(iss)})
		e.upCatalog("alpha", &events.Catalog{Digest: "route", Tools: []json.RawMessage{
			json.RawMessage(`{"name":"route","inputSchema":` + jsontest.RouteSchema + `}`),
			json.RawMessage(`{"name":"echo","inputSchema":{"type":"object"}}`)}})
		e.settle()
		if _, ok := e.current().Catalog.Tool("alpha_route"); !ok {
			t.Fatal("alpha_route not served")
		}
		e.setPolicy(&policy.Section{Rules: []policy.Rule{{Name: "hide-route", Effect: "deny", Tools: []string{"alpha_route"}}}})
		e.settle()
		alice := roleToken(iss, e.Edge, "alice")
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
	})
}

// Refreshed tokens of one caller (the same visible set) share one filtered
// view: a refresh adds no copy of the view and no policy evaluation.
func TestRefreshedTokensShareFilteredView(t *testing.T) {
	iss := issuertest.New(t, nil)
	synctest.Test(t, func(t *testing.T) {
		e := serveMemoryEdge(t, &Options{CallTimeout: 10 * time.Second, Auth: memoryAuth(iss)})
		e.up("alpha", "echo", "add")
		e.settle()
		e.setPolicy(&policy.Section{Rules: []policy.Rule{{Name: "hide", Effect: "deny", Tools: []string{"alpha_add"}}}})
		e.settle()
		for range 50 {
			tok := roleToken(iss, e.Edge, "alice") // a refresh: another jti, the same sub and roles
			if code, _, _ := statelessPost(t, e.MCPURL(), listBody, map[string]string{"Mcp-Method": "tools/list", "Authorization": "Bearer " + tok}); code != 200 {
				t.Fatal(code)
			}
		}
		if nf, misses := e.calls.CacheStats(); nf != 1 || misses != 1 {
			t.Fatalf("%d filtered views and %d policy evaluations for one caller's refreshed tokens, want 1 and 1", nf, misses)
		}
	})
}

// A policy change that leaves a 2026-07-28 caller's visible set as it was
// sends its listen stream nothing: the next change it sees is its first.
func TestListenNotToldOfUnchangedSet(t *testing.T) {
	iss := issuertest.New(t, nil)
	synctest.Test(t, func(t *testing.T) {
		e := serveMemoryEdge(t, &Options{Coalesce: time.Millisecond, CallTimeout: 10 * time.Second, Auth: memoryAuth(iss)})
		e.up("alpha", "echo")
		e.up("beta", "echo")
		e.settle()
		bob := roleToken(iss, e.Edge, "bob", "ops")
		c := connectWith(t, e.MCPURL(), "", tokenHTTP(func() string { return bob }))
		if !c.toolNames(t)["beta_echo"] {
			t.Fatal("bob does not see beta")
		}
		synctest.Wait()
		listening := 0
		for _, s := range e.reg.All() {
			if s.Kind() == session.KindListen {
				listening++
			}
		}
		if listening != 1 {
			t.Fatalf("%d listen streams open; want bob's", listening)
		}
		n0 := c.changed.Load()
		e.setPolicy(opsOnlyBeta) // bob keeps beta: nothing to tell him
		e.settle()
		if n := c.changed.Load() - n0; n != 0 {
			t.Fatalf("bob's stream told %d times of a policy that left his set as it was", n)
		}
		e.down("alpha") // a change bob sees
		e.settle()
		if n := c.changed.Load() - n0; n != 1 {
			t.Fatalf("bob's stream told %d times, want once (the health change only)", n)
		}
	})
}
