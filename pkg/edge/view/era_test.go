package view

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/catalog/fromstate"
	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/policy"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// eraDefs are tool definitions named names.
func eraDefs(names ...string) []json.RawMessage {
	var out []json.RawMessage
	for _, n := range names {
		out = append(out, json.RawMessage(`{"inputSchema":{"type":"object"},"name":"`+n+`"}`))
	}
	return out
}

// eraGroup is group g of a state with backends alpha (session-based
// tools echo; stateless tools echo, fresh and stateless extra, when
// extra is set) and beta (echo in both eras alike), both advertisable;
// alpha's credentials per caller when perCaller.
func eraGroup(t *testing.T, extra string, perCaller bool) *events.Group {
	t.Helper()
	at := time.Unix(1, 0)
	st := &catalog.EraLists{Tools: eraDefs("echo", "fresh")}
	if extra != "" {
		st.Tools = eraDefs("echo", "fresh", extra)
	}
	st.Digest, _ = catalog.Digest(st.Tools)
	cfg := events.BackendConfig{URL: "http://alpha/"}
	if perCaller {
		cfg.Auth = &credential.Auth{Type: credential.AuthTokenExchange, TokenURL: "http://idp/token", ClientID: "c"}
	}
	alpha, err := events.NewCatalogChanged(at, "g", "alpha", &events.Catalog{Tools: eraDefs("echo"), ProtocolVersion: "2026-07-28", Stateless: st})
	if err != nil {
		t.Fatal(err)
	}
	beta, err := events.NewCatalogChanged(at, "g", "beta", &events.Catalog{Tools: eraDefs("echo"), ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	s := events.NewState()
	for i, ev := range []*eventspb.Event{events.NewBackendAdded(at, "g", "alpha", cfg), alpha,
		events.NewHealthChanged(at, "g", "alpha", "unknown", "healthy", true, ""),
		events.NewBackendAdded(at, "g", "beta", events.BackendConfig{URL: "http://beta/"}), beta,
		events.NewHealthChanged(at, "g", "beta", "unknown", "healthy", true, "")} {
		ev.Generation = uint64(i + 1)
		if s, err = events.Apply(s, ev); err != nil {
			t.Fatal(err)
		}
	}
	return s.Group("g")
}

func toolNames(s *Served) []string {
	var out []string
	for _, t := range s.ToolList {
		out = append(out, t.Name)
	}
	return out
}

// TestEraViews: a group one of whose backends lists the stateless
// generation other tools is served to each era its own tools (lists,
// index, routing), the generation's digest being the era digest of both
// (the controller's, fromstate); a change of the stateless lists alone is
// a change for that generation only; a filtered value keeps the eras
// apart; a backend called with per-caller credentials (in the
// session-based generation for every client) is served alike to both.
func TestEraViews(t *testing.T) {
	g := eraGroup(t, "", false)
	s := Build(6, g, "_", Empty())
	if s.Stateless == nil {
		t.Fatal("no stateless view")
	}
	for rev, want := range map[string][]string{"2025-11-25": {"alpha_echo", "beta_echo"}, "2025-06-18": {"alpha_echo", "beta_echo"},
		"2026-07-28": {"alpha_echo", "alpha_fresh", "beta_echo"}} {
		if got := toolNames(s.Era(rev)); !slices.Equal(got, want) {
			t.Errorf("%s: tools %v, want %v", rev, got, want)
		}
	}
	if _, ok := s.Era("2025-11-25").Catalog.Tool("alpha_fresh"); ok {
		t.Error("alpha_fresh routed for the session-based revisions")
	}
	if e, ok := s.Era("2026-07-28").Catalog.Tool("alpha_fresh"); !ok || e.Backend != "alpha" || e.Original != "fresh" {
		t.Errorf("alpha_fresh routed as %+v for 2026-07-28", e)
	}
	want := catalog.ViewDigest(fromstate.View(g, "_", nil), fromstate.StatelessView(g, "_", nil))
	if d, _ := s.ToolDefs(); s.Digest() != want || want == d {
		t.Errorf("digest %s, want the controller's %s (not the session era's %s)", s.Digest(), want, d)
	}

	ix := NewIndex(s, []string{"alpha_fresh"}, nil)
	s.Index = ix
	if s.Stateless.Index == nil || !slices.ContainsFunc(s.Stateless.Index.Advertised, func(t *mcp.Tool) bool { return t.Name == "alpha_fresh" }) {
		t.Error("the stateless view's index does not advertise its pinned tool")
	}
	if slices.ContainsFunc(ix.Advertised, func(t *mcp.Tool) bool { return t.Name == "alpha_fresh" }) {
		t.Error("the session-based index advertises a tool of the stateless generation")
	}

	next := Build(7, eraGroup(t, "later", false), "_", s)
	c := Between(s, next)
	if c.Tools || !c.StatelessTools || c.Era(false).Tools || !c.Era(true).Tools || c.None() {
		t.Errorf("change of the stateless list alone: %+v", c)
	}
	if next.Era("2025-11-25").Tools["alpha_echo"] != s.Era("2025-11-25").Tools["alpha_echo"] {
		t.Error("an unchanged definition was built again")
	}

	f := s.Filter(func(_ policy.Kind, name string) bool { return name != "alpha_fresh" })
	if got := toolNames(f.Era("2026-07-28")); !slices.Equal(got, []string{"alpha_echo", "beta_echo"}) {
		t.Errorf("filtered 2026-07-28 tools %v", got)
	}

	pc := Build(6, eraGroup(t, "", true), "_", Empty())
	if pc.Stateless != nil || pc.Digest() != pc.Catalog.Digest {
		t.Errorf("a per-caller backend's stateless lists served: %v", toolNames(pc.Era("2026-07-28")))
	}
}
