package test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/controller"
	"github.com/fleetgate/fleetgate/pkg/edge"
)

// TestPolicyPutReachesSessions: a policy change made with PUT
// /v1/authorization on a real controller reaches live sessions on two
// edges of its NATS: each session gets tools list_changed, its tools/list
// no longer has the hidden tool, and a call to it is refused as a call to
// an unknown tool is; a second PUT allowing it brings it back on both,
// again with list_changed, and it can be called again.
func TestPolicyPutReachesSessions(t *testing.T) {
	const hidden, kept = "alpha_add", "alpha_echo"
	node := startNATS(t)
	alpha := startBackend(t, "alpha", nil)
	c := startController(t, node.ClientURL(), "c1", fleetYAML(200*time.Millisecond, 100*time.Millisecond, alpha))
	el := followLog(t, node.ClientURL())
	eventually(t, 10*time.Second, "leader", c.c.Leading)
	el.waitEvent(t, 0, 20*time.Second, "alpha advertised", healthOf("alpha", true))

	edges := []*edge.Edge{
		startEdgeOn(t, node.ClientURL(), nil, edge.Options{Coalesce: 100 * time.Millisecond, ID: "edge-1"}),
		startEdgeOn(t, node.ClientURL(), nil, edge.Options{Coalesce: 100 * time.Millisecond, ID: "edge-2"}),
	}
	var clients []*mcpClient
	for _, e := range edges {
		clients = append(clients, connectMCP(t, e.MCPURL(), "2025-11-25"))
	}
	for i, cl := range clients {
		eventually(t, 20*time.Second, fmt.Sprintf("session %d lists alpha's tools", i), func() bool {
			names := cl.tools(t)
			return slices.Contains(names, hidden) && slices.Contains(names, kept)
		})
		if res, err := cl.call(hidden, map[string]any{"a": 2, "b": 3}); err != nil || res.IsError || text(res) != "5" {
			t.Fatalf("session %d: %s before the policy: %v %+v", i, hidden, err, res)
		}
	}
	// What a call to a tool the edge does not serve gets; a hidden tool's
	// call must look the same (but for the name).
	unknown, err := clients[0].call("alpha_nosuch", map[string]any{})
	if err != nil || !unknown.IsError {
		t.Fatalf("call to an unknown tool: %v %+v", err, unknown)
	}

	put := func(body string) uint64 {
		t.Helper()
		var ans map[string]uint64
		if code := httpJSON(t, "PUT", c.admin+"/v1/authorization", body, &ans); code != 200 || ans["generation"] == 0 {
			t.Fatalf("PUT /v1/authorization %s: %d %v", body, code, ans)
		}
		var st controller.StateJSON
		eventually(t, 10*time.Second, "state shows the PUT policy", func() bool {
			httpJSON(t, "GET", c.admin+"/v1/state", "", &st)
			return st.Authorization.Generation >= ans["generation"]
		})
		return st.Authorization.Generation
	}
	counts := func() []int64 {
		n := make([]int64, len(clients))
		for i, cl := range clients {
			n[i] = cl.changed.Load()
		}
		return n
	}

	// Hide one tool from everybody (no bearer auth: empty claims).
	before := counts()
	hideGen := put(`{"default":"allow","rules":[{"name":"hide-add","effect":"deny","tools":["` + hidden + `"],"when":"tool.backend == \"alpha\""}]}`)
	for i, cl := range clients {
		eventually(t, 20*time.Second, fmt.Sprintf("session %d gets list_changed for the hiding policy", i),
			func() bool { return cl.changed.Load() > before[i] })
		eventually(t, 10*time.Second, fmt.Sprintf("session %d no longer lists %s", i, hidden),
			func() bool { return !slices.Contains(cl.tools(t), hidden) })
		if names := cl.tools(t); !slices.Contains(names, kept) {
			t.Fatalf("session %d: the policy hid %s too: %v", i, kept, names)
		}
		res, err := cl.call(hidden, map[string]any{"a": 2, "b": 3})
		if err == nil && !res.IsError {
			t.Fatalf("session %d: a call to the hidden %s succeeded: %+v", i, hidden, res)
		}
		msg := text(res)
		if err != nil {
			msg = err.Error()
		}
		if want := strings.ReplaceAll(text(unknown), "alpha_nosuch", hidden); err != nil || msg != want {
			t.Fatalf("session %d: the hidden tool's call is answered %q (err %v), an unknown tool's %q", i, msg, err, text(unknown))
		}
		if strings.Contains(msg, "hide-add") || strings.Contains(msg, "policy") {
			t.Fatalf("session %d: the refusal tells the caller about the policy: %q", i, msg)
		}
		if res, err := cl.call(kept, map[string]any{"text": "still"}); err != nil || res.IsError || text(res) != "alpha: still" {
			t.Fatalf("session %d: %s under the policy: %v %+v", i, kept, err, res)
		}
	}

	// Allow it again: back on both sessions.
	before = counts()
	if gen := put(`{"default":"allow","rules":[{"name":"hide-nothing","effect":"deny","tools":["` + hidden + `"],"when":"false"}]}`); gen <= hideGen {
		t.Fatalf("the allowing policy took effect at %d, the hiding one at %d", gen, hideGen)
	}
	for i, cl := range clients {
		eventually(t, 20*time.Second, fmt.Sprintf("session %d gets list_changed for the allowing policy", i),
			func() bool { return cl.changed.Load() > before[i] })
		eventually(t, 10*time.Second, fmt.Sprintf("session %d lists %s again", i, hidden),
			func() bool { return slices.Contains(cl.tools(t), hidden) })
		if res, err := cl.call(hidden, map[string]any{"a": 4, "b": 5}); err != nil || res.IsError || text(res) != "9" {
			t.Fatalf("session %d: %s after the allowing policy: %v %+v", i, hidden, err, res)
		}
	}
}
