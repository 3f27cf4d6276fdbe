package events

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/naming"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

func TestNamingFold(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v1 := &naming.Spec{Separator: "_", Conflicts: naming.Priority, Backends: []naming.BackendRules{
		{Name: "beta", Tools: naming.Rules{Exclude: []string{"delete_*"}, Rename: map[string]string{"search": "find_docs", "a": "b"}}},
		{Name: "alpha"},
	}}
	v2 := &naming.Spec{Separator: "_", Conflicts: naming.Manual, Backends: []naming.BackendRules{{Name: "alpha"}}}
	evs := []*eventspb.Event{
		NewBackendAdded(at, "g", "alpha", BackendConfig{URL: "http://a/"}),
		NewNamingChanged(at, "g", v1),
		NewBackendRemoved(at, "g", "alpha", BackendConfig{}),
		NewNamingChanged(at, "g", v2),
		NewNamingChanged(at, "g", nil),
	}
	states := []*State{NewState()}
	s := NewState()
	for i, ev := range evs {
		ev.Generation = uint64(i + 1)
		raw, err := Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := Decode(ev.Generation, raw)
		if err != nil {
			t.Fatal(err)
		}
		if s, err = Apply(s, dec); err != nil {
			t.Fatalf("gen %d: %v", i+1, err)
		}
		states = append(states, s)
	}
	if got := states[1].Group("g").NamingSpec(); got != nil {
		t.Errorf("naming before the first event: %+v", got)
	}
	if got := states[2].Group("g").NamingSpec(); !got.Equal(v1) || states[2].Group("g").Naming.Generation != 2 {
		t.Errorf("naming at 2: %+v", got)
	}
	// The last backend leaves: the group stays, with its naming.
	if g := states[3].Group("g"); g == nil || len(g.Backends) != 0 || !g.NamingSpec().Equal(v1) {
		t.Errorf("group at 3: %+v", g)
	}
	if got := states[4].Group("g").NamingSpec(); !got.Equal(v2) {
		t.Errorf("naming at 4: %+v", got)
	}
	// A nil spec forgets the naming, and the empty group with it.
	if g := states[5].Group("g"); g != nil {
		t.Errorf("group at 5: %+v", g)
	}
	// The snapshot keeps the naming.
	raw, err := json.Marshal(states[2])
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodeSnapshot(compress(raw))
	if err != nil {
		t.Fatal(err)
	}
	if !back.Group("g").NamingSpec().Equal(v1) {
		t.Errorf("snapshot naming %+v", back.Group("g").NamingSpec())
	}
	j := ToJSON(evs[1])
	if j.Kind != "naming_changed" || j.Naming == nil || !j.Naming.Spec.Equal(v1) {
		t.Errorf("JSON %+v", j)
	}
}

func TestNamingFoldRefusesBadSpec(t *testing.T) {
	first := NewNamingChanged(time.Unix(1, 0), "g", &naming.Spec{Conflicts: naming.Prefix})
	first.Generation = 1
	s, err := Apply(NewState(), first)
	if err != nil {
		t.Fatal(err)
	}
	bad := &eventspb.Event{Generation: 2, SchemaVersion: SchemaVersion, Group: "g", Kind: &eventspb.Event_NamingChanged{
		NamingChanged: &eventspb.NamingChanged{Spec: &eventspb.NamingSpec{Backends: []*eventspb.BackendNaming{
			{Name: "b", Tools: &eventspb.NameRules{Exclude: []string{"[x"}}}}}}}}
	next, err := Apply(s, bad)
	if !errors.Is(err, ErrInvalidEvent) || next.Generation != 2 || next.Group("g").Naming.Generation != 1 {
		t.Fatalf("bad spec: %v, state %+v", err, next.Group("g"))
	}
	noGroup := NewNamingChanged(time.Unix(1, 0), "", &naming.Spec{})
	noGroup.Generation = 3
	if _, err := Apply(next, noGroup); !errors.Is(err, ErrInvalidEvent) {
		t.Fatalf("no group: %v", err)
	}
}
