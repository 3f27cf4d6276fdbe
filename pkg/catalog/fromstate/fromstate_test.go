package fromstate_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/catalog/fromstate"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/naming"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// group folds the events into a state and returns group "g".
func group(t testing.TB, evs ...*eventspb.Event) *events.Group {
	s := events.NewState()
	for i, ev := range evs {
		ev.Generation = uint64(i + 1)
		var err error
		if s, err = events.Apply(s, ev); err != nil {
			t.Fatal(err)
		}
	}
	return s.Group("g")
}

func backend(t testing.TB, name string, advertisable bool, tools ...string) []*eventspb.Event {
	at := time.Unix(1, 0)
	var defs []json.RawMessage
	for _, n := range tools {
		defs = append(defs, json.RawMessage(`{"name":"`+n+`","inputSchema":{"type":"object"}}`))
	}
	cat, err := events.NewCatalogChanged(at, "g", name, &events.Catalog{Tools: defs})
	if err != nil {
		t.Fatal(err)
	}
	return []*eventspb.Event{events.NewBackendAdded(at, "g", name, events.BackendConfig{URL: "http://" + name + "/"}), cat,
		events.NewHealthChanged(at, "g", name, "unknown", "healthy", advertisable, "")}
}

func names(g *events.Group, sep string) []string {
	var out []string
	for _, t := range fromstate.View(g, sep, nil).Tools {
		out = append(out, t.Exposed+"="+t.Backend)
	}
	return out
}

func TestViewNamesOverKnownCatalogs(t *testing.T) {
	spec := &naming.Spec{Separator: "_", Conflicts: naming.Priority, Backends: []naming.BackendRules{{Name: "alpha"}, {Name: "beta"}}}
	evs := append(backend(t, "alpha", false, "echo"), backend(t, "beta", true, "echo")...)
	evs = append(evs, events.NewNamingChanged(time.Unix(1, 0), "g", spec))
	// alpha is down: beta's echo stays prefixed, so that it does not move
	// when alpha comes back.
	if got := fmt.Sprint(names(group(t, evs...), "-")); got != "[beta_echo=beta]" {
		t.Errorf("alpha down: %s", got)
	}
	evs = append(evs, events.NewHealthChanged(time.Unix(2, 0), "g", "alpha", "unhealthy", "healthy", true, ""))
	if got := fmt.Sprint(names(group(t, evs...), "-")); got != "[beta_echo=beta echo=alpha]" {
		t.Errorf("alpha up: %s", got)
	}
	// A log without naming: prefix with the fallback separator.
	g := group(t, append(backend(t, "alpha", true, "echo"), backend(t, "beta", true, "echo")...)...)
	if got := fmt.Sprint(names(g, "-")); got != "[alpha-echo=alpha beta-echo=beta]" {
		t.Errorf("no naming: %s", got)
	}
	if v := fromstate.View(nil, "", nil); len(v.Tools) != 0 {
		t.Errorf("nil group: %+v", v.Tools)
	}
}

func ExampleView() {
	at := time.Unix(1, 0)
	s := events.NewState()
	evs := []*eventspb.Event{
		events.NewBackendAdded(at, "default", "alpha", events.BackendConfig{URL: "http://alpha/"}),
		events.NewNamingChanged(at, "default", &naming.Spec{Conflicts: naming.Priority, Backends: []naming.BackendRules{{Name: "alpha"}}}),
	}
	cat, _ := events.NewCatalogChanged(at, "default", "alpha", &events.Catalog{Tools: []json.RawMessage{
		json.RawMessage(`{"name":"echo","inputSchema":{"type":"object"}}`)}})
	evs = append(evs, cat, events.NewHealthChanged(at, "default", "alpha", "unknown", "healthy", true, ""))
	for i, ev := range evs {
		ev.Generation = uint64(i + 1)
		s, _ = events.Apply(s, ev)
	}
	v := fromstate.View(s.Group("default"), "_", nil)
	fmt.Println(v.Tools[0].Exposed, v.Tools[0].Backend)
	// Output:
	// echo alpha
}
