package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/policy"
)

// TestAuditStatePolicy: audit state at a generation shows the policy in
// force then, not the latest one.
func TestAuditStatePolicy(t *testing.T) {
	node, _, w := auditFleet(t)
	ctx := context.Background()
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	rule := func(name string) *policy.Section {
		return &policy.Section{Rules: []policy.Rule{{Name: name, Effect: policy.Deny, Tools: []string{"beta_*"}, When: `!("ops" in claims.roles)`}}}
	}
	for i, ev := range []func() error{
		func() error {
			_, err := w.Publish(ctx, events.NewBackendAdded(at, "default", "beta", events.BackendConfig{URL: "http://b/mcp"}), "1")
			return err
		},
		func() error { _, err := w.Publish(ctx, events.NewPolicyChanged(at, rule("older")), "2"); return err },
		func() error {
			_, err := w.Publish(ctx, events.NewHealthChanged(at, "default", "beta", "unknown", "healthy", true, "ok"), "3")
			return err
		},
		func() error { _, err := w.Publish(ctx, events.NewPolicyChanged(at, rule("newer")), "4"); return err },
	} {
		if err := ev(); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	state := func(gen string) events.State {
		var out, errb bytes.Buffer
		if code := audit([]string{"state", "--generation", gen, "--nats-url", node.ClientURL()}, &out, &errb); code != 0 {
			t.Fatalf("audit state %s: %d %s", gen, code, errb.String())
		}
		var st events.State
		if err := json.Unmarshal(out.Bytes(), &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := state("1"); st.Authorization != nil {
		t.Fatalf("policy at 1: %+v", st.Authorization)
	}
	for gen, want := range map[string]string{"2": "older", "3": "older", "4": "newer"} {
		st := state(gen)
		if st.Authorization == nil || st.Authorization.Section.Rules[0].Name != want || st.Authorization.Digest != rule(want).Digest() {
			t.Fatalf("policy at %s: %+v, want rule %q", gen, st.Authorization, want)
		}
	}
	var out, errb bytes.Buffer
	if code := audit([]string{"export", "--from", "2", "--to", "2", "--nats-url", node.ClientURL()}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), `"kind":"policy_changed"`) || !strings.Contains(out.String(), `"name":"older"`) {
		t.Fatalf("export: %d %s %s", code, out.String(), errb.String())
	}
}
