package test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/controller"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

func policyEvent(ev *eventspb.Event) bool { return ev.GetPolicyChanged() != nil }

// TestControllerAuthorization: the tool policy is fleet state. The
// config's section is published on start, PUT /v1/authorization and a
// reload with a changed section each publish a policy_changed event with
// a new generation, a bad rule is a 400 naming it, and /v1/state and the
// log's replay show the policy in force at each generation.
func TestControllerAuthorization(t *testing.T) {
	node := startNATS(t)
	alpha := startBackend(t, "alpha", nil)
	base := fleetYAML(200*time.Millisecond, 100*time.Millisecond, alpha)
	withPolicy := func(rule string) string {
		return base + "authorization:\n  default: allow\n  rules:\n    - name: " + rule +
			"\n      effect: deny\n      tools: [\"alpha_*\"]\n      when: '!(\"ops\" in claims.roles)'\n"
	}
	c := startController(t, node.ClientURL(), "c1", withPolicy("from-config"))
	el := followLog(t, node.ClientURL())
	eventually(t, 10*time.Second, "leader", c.c.Leading)
	_, first, _ := el.waitEvent(t, 0, 10*time.Second, "the config's policy", policyEvent)
	if !strings.Contains(string(first.GetPolicyChanged().GetSection()), `"from-config"`) {
		t.Fatalf("first policy event %s", first.GetPolicyChanged().GetSection())
	}

	// PUT a new section: a new event, answered with its generation.
	n := el.len()
	var put map[string]uint64
	body := `{"default":"deny","rules":[{"name":"ops-tools","effect":"allow","tools":["alpha_*"],"when":"\"ops\" in claims.roles"}]}`
	if code := httpJSON(t, "PUT", c.admin+"/v1/authorization", body, &put); code != 200 {
		t.Fatalf("PUT authorization: %d %v", code, put)
	}
	_, ev, _ := el.waitEvent(t, n, 10*time.Second, "the PUT policy", policyEvent)
	if ev.Generation <= first.Generation || put["generation"] < ev.Generation {
		t.Fatalf("PUT answered %d; event at %d, first at %d", put["generation"], ev.Generation, first.Generation)
	}
	putGen := ev.Generation
	var got controller.AuthorizationJSON
	httpJSON(t, "GET", c.admin+"/v1/authorization", "", &got)
	if got.Generation != putGen || got.Section == nil || got.Section.Default != "deny" || got.Section.Rules[0].Name != "ops-tools" {
		t.Fatalf("GET authorization %+v", got)
	}
	// The same section again changes nothing.
	if code := httpJSON(t, "PUT", c.admin+"/v1/authorization", body, &put); code != 200 || put["generation"] < putGen {
		t.Fatalf("PUT again: %d %v", code, put)
	}

	// A rule that does not compile: 400 naming it, nothing published.
	var errBody map[string]string
	bad := `{"rules":[{"name":"fine","effect":"deny"},{"name":"broken-rule","effect":"deny","when":"claims.roles =="}]}`
	if code := httpJSON(t, "PUT", c.admin+"/v1/authorization", bad, &errBody); code != 400 || !strings.Contains(errBody["error"], `rule "broken-rule"`) {
		t.Fatalf("PUT bad rule: %d %v", code, errBody)
	}
	if code := httpJSON(t, "PUT", c.admin+"/v1/authorization", `{"rules":[],"extra":1}`, &errBody); code != 400 {
		t.Fatalf("PUT unknown key: %d %v", code, errBody)
	}

	// Reload with a changed section: another event.
	n = el.len()
	if err := os.WriteFile(c.path, []byte(withPolicy("from-reload")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.c.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, ev, _ = el.waitEvent(t, n, 10*time.Second, "the reloaded policy", policyEvent)
	if ev.Generation <= putGen || !strings.Contains(string(ev.GetPolicyChanged().GetSection()), `"from-reload"`) {
		t.Fatalf("reload event at %d: %s", ev.Generation, ev.GetPolicyChanged().GetSection())
	}
	reloadGen := ev.Generation

	var st controller.StateJSON
	eventually(t, 10*time.Second, "state shows the reloaded policy", func() bool {
		httpJSON(t, "GET", c.admin+"/v1/state", "", &st)
		return st.Authorization.Generation == reloadGen
	})
	if st.Authorization.Section.Rules[0].Name != "from-reload" || !strings.HasPrefix(st.Authorization.Digest, "sha256:") {
		t.Fatalf("state authorization %+v", st.Authorization)
	}

	// The events API shows the section; a replay at an older generation
	// has the older policy.
	var evs []events.EventJSON
	httpJSON(t, "GET", c.admin+"/v1/events?from="+itoa(putGen)+"&limit=1", "", &evs)
	if len(evs) != 1 || evs[0].Kind != "policy_changed" || !strings.Contains(string(evs[0].Authorization.Section), "ops-tools") {
		raw, _ := json.Marshal(evs)
		t.Fatalf("events: %s", raw)
	}
	lg, err := events.AttachLog(t.Context(), jsConnect(t, node.ClientURL()), nil)
	if err != nil {
		t.Fatal(err)
	}
	for gen, want := range map[uint64]string{first.Generation: "from-config", putGen: "ops-tools", reloadGen: "from-reload"} {
		s, err := lg.Replay(t.Context(), gen, nil)
		if err != nil {
			t.Fatal(err)
		}
		if s.Authorization == nil || s.Authorization.Section.Rules[0].Name != want || s.Policy().Generation() != gen {
			t.Fatalf("replay at %d: %+v, want rule %q", gen, s.Authorization, want)
		}
	}

	// DELETE removes the section: everything allowed, as an event.
	n = el.len()
	if code := httpJSON(t, "DELETE", c.admin+"/v1/authorization", "", &put); code != 200 {
		t.Fatalf("DELETE authorization: %d", code)
	}
	_, ev, _ = el.waitEvent(t, n, 10*time.Second, "the removal", policyEvent)
	if len(ev.GetPolicyChanged().GetSection()) != 0 {
		t.Fatalf("removal carries %s", ev.GetPolicyChanged().GetSection())
	}
}

func itoa(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
