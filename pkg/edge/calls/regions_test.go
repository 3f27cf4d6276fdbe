package calls

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/policy"
)

// An edge merging regional logs switches between policies of different
// regions whose generations are equal (the merge takes the fleet policy
// from the first region holding one): each is served its own filtered
// view, never the one the other computed.
func TestVisibleToPoliciesOfTwoRegions(t *testing.T) {
	_, pool := memBackend(t)
	sv := memView(t, []json.RawMessage{raw(`{"name":"echo","inputSchema":{"type":"object"}}`),
		raw(`{"name":"add","inputSchema":{"type":"object"}}`)}, nil, nil)
	pl := newPlane(t, pool, sv)
	compile := func(tool string) *policy.Policy {
		p, err := policy.Compile(&policy.Section{Rules: []policy.Rule{{Name: "hide", Effect: "deny", Tools: []string{tool}}}})
		if err != nil {
			t.Fatal(err)
		}
		return p.WithGeneration(17) // the same generation in both regions' logs
	}
	regionA, regionB := compile("alpha_echo"), compile("alpha_add")
	alice := &mcp.RequestExtra{Header: http.Header{"X-User": {"alice"}}}
	names := func() map[string]bool {
		out := map[string]bool{}
		for _, tl := range pl.VisibleTo(sv, alice).ToolList {
			out[tl.Name] = true
		}
		return out
	}
	for i, c := range []struct {
		p          *policy.Policy
		shown, hid string
	}{{regionA, "alpha_add", "alpha_echo"}, {regionB, "alpha_echo", "alpha_add"}, {regionA, "alpha_add", "alpha_echo"}} {
		pl.SetPolicy(c.p)
		if got := names(); !got[c.shown] || got[c.hid] {
			t.Fatalf("step %d: alice sees %v, want %s and not %s", i, got, c.shown, c.hid)
		}
		if ok, _ := pl.Allowed(sv, nil, "alice", policy.KindTool, c.hid); ok {
			t.Fatalf("step %d: a call of %s allowed", i, c.hid)
		}
	}
}
