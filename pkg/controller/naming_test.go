package controller

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/config"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/health"
	"github.com/fleetgate/fleetgate/pkg/naming"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// applyAll folds evs into s as the log would, numbering them.
func applyAll(t *testing.T, s *events.State, evs []*eventspb.Event) *events.State {
	t.Helper()
	for _, ev := range evs {
		ev.Generation = s.Generation + 1
		var err error
		if s, err = events.Apply(s, ev); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func kinds(evs []*eventspb.Event) string {
	var out []string
	for _, ev := range evs {
		out = append(out, events.Kind(ev)+":"+ev.GetGroup()+"/"+ev.GetBackend())
	}
	return strings.Join(out, " ")
}

func TestCoreNaming(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pol := health.Policy{Interval: time.Second, Timeout: time.Second, UnhealthyAfter: 1, Debounce: time.Second}
	spec := &naming.Spec{Separator: "_", Conflicts: naming.Priority, Backends: []naming.BackendRules{{Name: "b"}, {Name: "a"}}}
	core := NewCore(pol, nil)
	core.SetDesired(map[BackendKey]events.BackendConfig{{"g", "a"}: {URL: "http://a/"}, {"g", "b"}: {URL: "http://b/"}})
	core.SetNaming(map[string]*naming.Spec{"g": spec})
	evs := core.Ready(now)
	if got, want := kinds(evs), "backend_added:g/a backend_added:g/b naming_changed:g/"; got != want {
		t.Fatalf("events %s, want %s", got, want)
	}
	if again := core.Ready(now); len(again) != 0 {
		t.Fatalf("second Ready: %s", kinds(again))
	}
	s := applyAll(t, events.NewState(), evs)
	if !s.Group("g").NamingSpec().Equal(spec) {
		t.Fatalf("log naming %+v", s.Group("g").NamingSpec())
	}
	// A restarted core knows the log's naming: nothing to publish.
	restarted := NewCore(pol, s)
	restarted.SetDesired(core.Desired())
	restarted.SetNaming(map[string]*naming.Spec{"g": spec.Clone()})
	if evs := restarted.Ready(now); len(evs) != 0 {
		t.Fatalf("after restart: %s", kinds(evs))
	}
	// A new rule is one event; the group leaving the config is one without a spec.
	changed := spec.Clone()
	changed.Backends[0].Tools.Exclude = []string{"x*"}
	restarted.SetNaming(map[string]*naming.Spec{"g": changed})
	if got := kinds(restarted.Ready(now)); got != "naming_changed:g/" {
		t.Fatalf("rule change: %s", got)
	}
	restarted.SetDesired(nil)
	restarted.SetNaming(nil)
	evs = restarted.Ready(now)
	if got := kinds(evs); got != "backend_removed:g/a backend_removed:g/b naming_changed:g/" {
		t.Fatalf("group left: %s", got)
	}
	if evs[2].GetNamingChanged().GetSpec() != nil {
		t.Fatal("the group's last naming event carries a spec")
	}
	if s := applyAll(t, s, evs); s.Group("g") != nil {
		t.Fatalf("group still in the state: %+v", s.Group("g"))
	}
}

func stateWithCatalogs(t *testing.T, spec *naming.Spec, cats map[string][]string) *events.State {
	t.Helper()
	now := time.Unix(1, 0)
	var evs []*eventspb.Event
	for _, b := range spec.Backends {
		evs = append(evs, events.NewBackendAdded(now, "g", b.Name, events.BackendConfig{URL: "http://" + b.Name + "/"}))
		var tools []json.RawMessage
		for _, n := range cats[b.Name] {
			tools = append(tools, json.RawMessage(`{"name":"`+n+`","inputSchema":{"type":"object"}}`))
		}
		d, _ := catalog.Digest(tools)
		ev, err := events.NewCatalogChanged(now, "g", b.Name, &events.Catalog{Tools: tools, Digest: d})
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev, events.NewHealthChanged(now, "g", b.Name, "unknown", "healthy", b.Name != "gamma", ""))
	}
	evs = append(evs, events.NewNamingChanged(now, "g", spec))
	return applyAll(t, events.NewState(), evs)
}

func TestGroupViewNamingAndCollisions(t *testing.T) {
	spec := &naming.Spec{Separator: "_", Conflicts: naming.Priority, Backends: []naming.BackendRules{
		{Name: "gamma"}, {Name: "alpha"}, {Name: "beta", Tools: naming.Rules{Exclude: []string{"drop"}, Rename: map[string]string{"lookup": "find"}}},
	}}
	s := stateWithCatalogs(t, spec, map[string][]string{
		"gamma": {"ping"}, "alpha": {"echo", "ping"}, "beta": {"echo", "lookup", "drop"},
	})
	v := GroupView(s.Group("g"), "-", nil)
	var names []string
	for _, te := range v.Tools {
		names = append(names, te.Exposed+"="+te.Backend+"/"+te.Original)
	}
	// gamma is not advertisable: its ping keeps the name, served by no one.
	if got, want := strings.Join(names, " "), "alpha_ping=alpha/ping beta_echo=beta/echo echo=alpha/echo find=beta/lookup"; got != want {
		t.Errorf("view %s, want %s", got, want)
	}
	got := collisionsJSON(v.Collisions)
	want := []CollisionJSON{
		{Kind: "tool", Name: "echo", Backends: []string{"alpha", "beta"}, KeptBy: "alpha", Resolution: "prefixed",
			Others: []CollisionOther{{Backend: "beta", Original: "echo", Exposed: "beta_echo", Resolution: "prefixed"}}},
		{Kind: "tool", Name: "ping", Backends: []string{"gamma", "alpha"}, KeptBy: "gamma", Resolution: "prefixed",
			Others: []CollisionOther{{Backend: "alpha", Original: "ping", Exposed: "alpha_ping", Resolution: "prefixed"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("collisions\n got %+v\nwant %+v", got, want)
	}
	// Without a naming event the fallback separator and prefix apply.
	g := *s.Group("g")
	g.Naming = nil
	if v := GroupView(&g, "-", nil); len(v.Tools) == 0 || v.Tools[0].Exposed != "alpha-echo" {
		t.Errorf("fallback view %+v", v.Tools)
	}
}

func TestCheckManual(t *testing.T) {
	fleet, err := config.Parse("m.yaml", []byte(`
aggregation: {conflicts: manual}
groups:
  - name: g
    backends:
      - {name: alpha, url: "http://alpha/"}
      - {name: beta, url: "http://beta/"}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := stateWithCatalogs(t, fleet.Naming("g"), map[string][]string{"alpha": {"echo", "a"}, "beta": {"echo", "b"}})
	err = checkManual(fleet, s)
	if err == nil || !strings.Contains(err.Error(), `tool name "echo" of group "g" is asked for by backend "alpha" ("echo") and backend "beta"`) {
		t.Fatalf("checkManual = %v", err)
	}
	// Excluding one side settles it.
	fixed := fleet.Clone()
	b, _ := fixed.Backend("g", "beta")
	b.Tools.Exclude = []string{"echo"}
	if err := fixed.Put("g", b); err != nil {
		t.Fatal(err)
	}
	if err := checkManual(fixed, s); err != nil {
		t.Fatalf("after exclude: %v", err)
	}
	// So does a rename, and other strategies never refuse.
	b.Tools = naming.Rules{Rename: map[string]string{"echo": "beta_echo"}}
	_ = fixed.Put("g", b)
	if err := checkManual(fixed, s); err != nil {
		t.Fatalf("after rename: %v", err)
	}
	fixed.Aggregation.Conflicts = naming.Priority
	if err := checkManual(fleet.Clone(), events.NewState()); err != nil {
		t.Fatalf("no catalogs known: %v", err)
	}
}
