package session

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/events"
)

// A change of a kind a listen stream did not subscribe to owes it
// nothing: no pending bit, no latency clock started.
func TestListenIgnoresUnsubscribedKinds(t *testing.T) {
	g := NewRegistry(nil)
	s := g.New("listen-1", KindListen, "2026-07-28", "")
	s.Listen(PendingPrompts)
	s.Apply(view.Empty(), view.Change{Tools: true}, time.Now())
	if s.Pending() != 0 || s.since.Load() != 0 {
		t.Fatalf("pending %b, since %d: want nothing owed", s.Pending(), s.since.Load())
	}
	s.Apply(&view.Served{}, view.Change{Prompts: true}, time.Now())
	if s.Pending() != PendingPrompts || s.since.Load() == 0 {
		t.Fatalf("pending %b, since %d: want the prompts notification owed", s.Pending(), s.since.Load())
	}
}

// The evidence of a list_changed to a client of the stateless generation
// names its era's list: the stateless generation's when the eras are
// served differently.
func TestSignallingRecordsTheSessionsEra(t *testing.T) {
	tool := func(name string) json.RawMessage {
		return json.RawMessage(`{"name":"` + name + `","inputSchema":{"type":"object"}}`)
	}
	c := &events.Catalog{Tools: []json.RawMessage{tool("a")}, ProtocolVersion: view.FirstStateless, Digest: "d",
		Stateless: &catalog.EraLists{Tools: []json.RawMessage{tool("a"), tool("b")}, Digest: "d26"}}
	grp := &events.Group{Name: "default", Backends: map[string]*events.Backend{"alpha": {Name: "alpha", Group: "default",
		Advertisable: true, Status: "healthy", Config: events.BackendConfig{URL: "http://alpha.test/mcp"}, Catalog: c}}}
	sv := view.Build(1, grp, "_", view.Empty())
	if sv.Stateless == nil {
		t.Fatal("no view of the stateless generation")
	}
	want25, _ := sv.ToolDefs()
	want26, _ := sv.Era(view.FirstStateless).ToolDefs()
	if want25 == want26 {
		t.Fatal("the eras' lists have one digest")
	}
	g := NewRegistry(nil)
	for kind, want := range map[string]string{KindSession: want25, KindListen: want26} {
		s := g.New("s-"+kind, kind, "", "")
		s.Apply(sv, view.Change{}, time.Now())
		s.signalling()
		if got := s.Record().Convergence().CurrentDigest; got != want {
			t.Errorf("%s: signalled digest %q, want %q", kind, got, want)
		}
	}
}
