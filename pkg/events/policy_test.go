package events

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
	"github.com/fleetgate/fleetgate/pkg/policy"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

func opsOnly(name string) *policy.Section {
	return &policy.Section{Rules: []policy.Rule{{Name: name, Effect: policy.Deny, Tools: []string{"beta_*"},
		When: `!("ops" in claims.roles)`}}}
}

func at(gen uint64, ev *eventspb.Event) *eventspb.Event {
	ev.Generation = gen
	return ev
}

func TestApplyPolicy(t *testing.T) {
	now := time.Unix(1700000000, 0)
	s := NewState()
	if s.Policy() != nil || s.Policy().Generation() != 0 {
		t.Fatal("a state without policy events must allow everything")
	}
	s, err := Apply(s, at(1, NewBackendAdded(now, "default", "beta", BackendConfig{URL: "http://b"})))
	if err != nil {
		t.Fatal(err)
	}
	s, err = Apply(s, at(2, NewPolicyChanged(now, opsOnly("ops-only-beta"))))
	if err != nil {
		t.Fatal(err)
	}
	// The policy survives later backend events, and is compiled once.
	s3, err := Apply(s, at(3, NewHealthChanged(now, "default", "beta", "unknown", "healthy", true, "")))
	if err != nil {
		t.Fatal(err)
	}
	p := s3.Policy()
	if p == nil || p.Generation() != 2 || p != s.Policy() || s3.Authorization.Digest != opsOnly("ops-only-beta").Digest() {
		t.Fatalf("policy %+v at generation %d", s3.Authorization, p.Generation())
	}
	dev := policy.TokenSubject("iss", "bob", "default", map[string]any{"roles": []any{"dev"}})
	if d := p.Decide(dev, policy.Item{Kind: policy.KindTool, Name: "beta_x"}); d.Allowed || d.Rule != "ops-only-beta" {
		t.Fatalf("Decide = %+v", d)
	}
	// Removing the section is an event too: everything allowed again.
	s4, err := Apply(s3, at(4, NewPolicyChanged(now, nil)))
	if err != nil || s4.Authorization.Section != nil || s4.Policy().Generation() != 4 ||
		!s4.Policy().Decide(dev, policy.Item{Kind: policy.KindTool, Name: "beta_x"}).Allowed {
		t.Fatalf("after removal: %+v %v", s4.Authorization, err)
	}
	// The previous state is untouched.
	if s3.Policy().Generation() != 2 {
		t.Fatal("Apply changed an older state")
	}
}

func TestApplyPolicyFailsClosed(t *testing.T) {
	ev := at(5, NewPolicyChanged(time.Now(), nil))
	ev.GetPolicyChanged().Section = []byte(`{"rules":[{"name":"x","effect":"deny","when":"nope("}]}`)
	s, err := Apply(NewState(), ev)
	if !errors.Is(err, ErrInvalidEvent) || s.Generation != 5 {
		t.Fatalf("Apply = %v at %d, want ErrInvalidEvent at 5", err, s.Generation)
	}
	if d := s.Policy().Decide(policy.HeaderSubject("a", "g"), policy.Item{Name: "alpha_echo"}); d.Allowed {
		t.Fatal("an unreadable section must refuse everything")
	}
	if s.Authorization.Error == "" || s.Policy().Generation() != 5 {
		t.Fatalf("authorization %+v", s.Authorization)
	}
}

func TestPolicyJSONView(t *testing.T) {
	ev := at(7, NewPolicyChanged(time.Unix(1700000000, 0), opsOnly("ops-only-beta")))
	b, err := MarshalEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got["kind"] != "policy_changed" || !strings.Contains(string(b), `"section":{"default":"allow","rules":[{"name":"ops-only-beta"`) {
		t.Fatalf("JSON %s", b)
	}
	none, _ := MarshalEvent(at(8, NewPolicyChanged(time.Unix(1700000000, 0), nil)))
	if !strings.Contains(string(none), `"authorization":{"section":null}`) {
		t.Fatalf("JSON %s", none)
	}
}

func TestSnapshotCarriesPolicy(t *testing.T) {
	s, _ := Apply(NewState(), at(3, NewPolicyChanged(time.Now(), opsOnly("r1"))))
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodeSnapshot(compress(raw))
	if err != nil {
		t.Fatal(err)
	}
	if back.Authorization.Digest != s.Authorization.Digest || back.Policy().Generation() != 3 ||
		back.Policy().Digest() != opsOnly("r1").Digest() {
		t.Fatalf("snapshot authorization %+v", back.Authorization)
	}
}

// TestReplayShowsOlderPolicy: the state at an older generation has the
// policy in force then.
func TestReplayShowsOlderPolicy(t *testing.T) {
	node := natstest.Start(t)
	ctx := testContext(t)
	f := &fleet{url: node.ClientURL(), replicas: 1}
	l := f.openLog(t, ctx)
	w, err := NewWriter(ctx, l, "ctl")
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range []*eventspb.Event{
		NewBackendAdded(time.Now(), "default", "beta", BackendConfig{URL: "http://b"}),
		NewPolicyChanged(time.Now(), opsOnly("first")),
		NewHealthChanged(time.Now(), "default", "beta", "unknown", "healthy", true, ""),
		NewPolicyChanged(time.Now(), opsOnly("second")),
	} {
		if _, err := w.Publish(ctx, ev, "m"+string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	for gen, want := range map[uint64]string{1: "", 2: "first", 3: "first", 4: "second"} {
		s, err := l.Replay(ctx, gen, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if s.Authorization != nil && s.Authorization.Section != nil {
			got = s.Authorization.Section.Rules[0].Name
		}
		if got != want {
			t.Fatalf("generation %d: policy rule %q, want %q", gen, got, want)
		}
	}
	evs, err := l.Events(ctx, 2, 1)
	if err != nil || len(evs) != 1 || evs[0].Kind != "policy_changed" || evs[0].Authorization == nil {
		t.Fatalf("Events: %+v %v", evs, err)
	}
}
