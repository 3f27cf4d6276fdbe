package controller

import (
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/health"
	"github.com/fleetgate/fleetgate/pkg/policy"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

func denyBeta(name string) *policy.Section {
	return &policy.Section{Rules: []policy.Rule{{Name: name, Effect: policy.Deny, Tools: []string{"beta_*"}}}}
}

// TestCorePolicy: the policy reconciles like the membership. A core
// publishes the desired section once, never again for the same one, not
// after a restart from a log that holds it, and again when it changes or
// goes away.
func TestCorePolicy(t *testing.T) {
	now := time.Unix(1700000000, 0)
	var log *events.State
	fold := func(evs []*eventspb.Event) {
		for _, ev := range evs {
			if log == nil {
				log = events.NewState()
			}
			ev.Generation = log.Generation + 1
			var err error
			if log, err = events.Apply(log, ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	kinds := func(evs []*eventspb.Event) []string {
		var out []string
		for _, ev := range evs {
			out = append(out, events.Kind(ev))
		}
		return out
	}
	steps := []struct {
		name    string
		restart bool
		set     bool
		section *policy.Section
		want    int // policy_changed events expected from Ready
		digest  string
	}{
		{name: "no SetPolicy yet: nothing", want: 0},
		{name: "none desired, none in the log: nothing", set: true, want: 0},
		{name: "a section: one event", set: true, section: denyBeta("r1"), want: 1, digest: denyBeta("r1").Digest()},
		{name: "the same again: nothing", set: true, section: denyBeta("r1"), want: 0, digest: denyBeta("r1").Digest()},
		{name: "restart with the log's section: nothing", restart: true, set: true, section: denyBeta("r1"), want: 0, digest: denyBeta("r1").Digest()},
		{name: "restart before SetPolicy: the log's stays", restart: true, want: 0, digest: denyBeta("r1").Digest()},
		{name: "a changed section: one event", set: true, section: denyBeta("r2"), want: 1, digest: denyBeta("r2").Digest()},
		{name: "removed: one event", set: true, want: 1, digest: ""},
	}
	core := NewCore((&health.Policy{}).WithDefaults(), nil)
	core.SetDesired(map[BackendKey]events.BackendConfig{})
	for _, st := range steps {
		if st.restart {
			core = NewCore((&health.Policy{}).WithDefaults(), log)
			core.SetDesired(map[BackendKey]events.BackendConfig{})
		}
		if st.set {
			core.SetPolicy(st.section)
		}
		evs := core.Ready(now)
		if len(evs) != st.want {
			t.Fatalf("%s: Ready = %v, want %d policy_changed", st.name, kinds(evs), st.want)
		}
		for _, ev := range evs {
			if ev.GetPolicyChanged() == nil || ev.GetGroup() != "" || ev.GetBackend() != "" {
				t.Fatalf("%s: event %v", st.name, ev)
			}
		}
		fold(evs)
		got := ""
		if log != nil && log.Authorization != nil {
			got = log.Authorization.Digest
		}
		if got != st.digest {
			t.Fatalf("%s: log digest %q, want %q", st.name, got, st.digest)
		}
	}
}

// TestCorePolicyFirst: a policy change is ordered before the membership
// changes of the same batch.
func TestCorePolicyFirst(t *testing.T) {
	core := NewCore((&health.Policy{}).WithDefaults(), nil)
	core.SetDesired(map[BackendKey]events.BackendConfig{{"default", "beta"}: {URL: "http://b/mcp", Transport: "streamable-http"}})
	core.SetPolicy(denyBeta("r"))
	evs := core.Ready(time.Unix(1, 0))
	if len(evs) != 2 || events.Kind(evs[0]) != "policy_changed" || events.Kind(evs[1]) != "backend_added" {
		t.Fatalf("Ready = %v", evs)
	}
}
