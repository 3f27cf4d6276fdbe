package edge

import (
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/policy"
)

// A user_oauth backend the policy denies a caller entirely offers that
// caller no sign-in: its sign-in tool is neither listed nor callable (a
// call of it is an unknown tool, with no authorization URL), while a
// caller the policy lets use it is offered the sign-in as before.
func TestSignInFollowsPolicy(t *testing.T) {
	sf := startSignInFleet(t, "")
	gen := sf.fleet.publish(events.NewPolicyChanged(time.Now(), &policy.Section{Rules: []policy.Rule{
		{Name: "docs-for-alice-only", Effect: policy.Deny, Tools: []string{"docs_*"}, When: `claims.sub != "alice"`}}}))
	for _, e := range []*recordEdge{sf.a, sf.b} {
		eventually(t, 10*time.Second, "policy applied", func() bool { return e.confirmed.Load() >= gen })
	}
	alice, bob := sf.user(t, "alice"), sf.user(t, "bob")
	if names := alice.toolNames(t); !names["docs_sign_in"] {
		t.Fatalf("alice, allowed docs, is not offered its sign-in: %v", names)
	}
	if names := bob.toolNames(t); names["docs_sign_in"] || names["docs_sign_out"] {
		t.Fatalf("bob, denied docs, is offered its sign-in: %v", names)
	}
	res := bob.call(t, "docs_sign_in", nil)
	if !res.IsError || strings.Contains(text(res), "http") {
		t.Fatalf("bob's call of docs_sign_in: %q", text(res))
	}
}
