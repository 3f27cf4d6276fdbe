package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/naming"
	"github.com/fleetgate/fleetgate/pkg/policy"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// fuzzBase is the state events are folded into: generation 1, backend
// g/b added (health and catalog events for it apply).
func fuzzBase(t testing.TB) *State {
	t.Helper()
	ev := NewBackendAdded(time.Unix(1, 0), "g", "b", BackendConfig{URL: "http://h/mcp", Transport: "streamable-http"})
	ev.Generation = 1
	s, err := Apply(NewState(), ev)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// encodedAt is ev at generation gen, encoded for the log.
func encodedAt(t testing.TB, gen uint64, ev *eventspb.Event) []byte {
	t.Helper()
	ev.Generation = gen
	b, err := Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// eventSeeds are encoded events of generation 2, of every kind.
func eventSeeds(t testing.TB) [][]byte {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	small, err := NewCatalogChanged(at, "g", "b", &Catalog{Tools: []json.RawMessage{json.RawMessage(`{"name":"echo","inputSchema":{"type":"object"}}`)},
		Digest: "sha256:x", InvalidTools: []InvalidTool{{Name: "bad", Reason: "r"}}})
	if err != nil {
		t.Fatal(err)
	}
	var tools []json.RawMessage
	for i := range 40 {
		tools = append(tools, json.RawMessage(fmt.Sprintf(`{"name":"t%d","description":"%s","inputSchema":{"type":"object"}}`, i, strings.Repeat("d", 40))))
	}
	big, err := NewCatalogChanged(at, "g", "b", &Catalog{Tools: tools, Resources: []json.RawMessage{json.RawMessage(`{"uri":"file:///x","name":"x"}`)},
		Prompts: []json.RawMessage{json.RawMessage(`{"name":"p"}`)}, Digest: "sha256:y"}) // compressed
	if err != nil {
		t.Fatal(err)
	}
	badZstd := &eventspb.Event{SchemaVersion: SchemaVersion, Group: "g", Backend: "b", Time: timestamppb.New(at),
		Kind: &eventspb.Event_CatalogChanged{CatalogChanged: &eventspb.CatalogChanged{Compression: eventspb.Compression_COMPRESSION_ZSTD, Tools: []byte("\x28\xb5\x2f\xfd garbage")}}}
	notJSON := &eventspb.Event{SchemaVersion: SchemaVersion, Group: "g", Backend: "b",
		Kind: &eventspb.Event_CatalogChanged{CatalogChanged: &eventspb.CatalogChanged{Tools: []byte(`[{"name":`)}}}
	deep := &eventspb.Event{SchemaVersion: SchemaVersion, Group: "g", Backend: "b",
		Kind: &eventspb.Event_CatalogChanged{CatalogChanged: &eventspb.CatalogChanged{Tools: []byte("[" + strings.Repeat("[", 20000))}}}
	era := &catalog.EraLists{Tools: []json.RawMessage{json.RawMessage(`{"name":"fresh","inputSchema":{"type":"object"}}`)},
		Prompts: []json.RawMessage{json.RawMessage(`{"name":"p"}`)}, Digest: "sha256:z"}
	smallEra, err := NewCatalogChanged(at, "g", "b", &Catalog{Tools: tools[:1], Digest: "sha256:x", ProtocolVersion: "2026-07-28", Stateless: era})
	if err != nil {
		t.Fatal(err)
	}
	bigEra, err := NewCatalogChanged(at, "g", "b", &Catalog{Tools: tools, Digest: "sha256:y", ProtocolVersion: "2026-07-28",
		Stateless: &catalog.EraLists{Tools: tools[1:], Digest: "sha256:w"}}) // compressed
	if err != nil {
		t.Fatal(err)
	}
	badEra := &eventspb.Event{SchemaVersion: SchemaVersion, Group: "g", Backend: "b", Time: timestamppb.New(at),
		Kind: &eventspb.Event_CatalogChanged{CatalogChanged: &eventspb.CatalogChanged{Compression: eventspb.Compression_COMPRESSION_ZSTD,
			StatelessLists: &eventspb.EraLists{Prompts: []byte("\x28\xb5\x2f\xfd garbage")}}}}
	farTime := NewHealthChanged(at, "g", "b", "unknown", "healthy", true, "")
	farTime.Time = &timestamppb.Timestamp{Seconds: 1 << 40}
	return [][]byte{
		encodedAt(t, 2, NewBackendAdded(at, "g", "c", BackendConfig{URL: "http://c/", Transport: "sse"})),
		encodedAt(t, 2, NewBackendAdded(at, "g", "d", BackendConfig{URL: "http://d/", AllowLinkLocal: true,
			Headers: credential.Headers{"Authorization": {Env: "D_AUTH"}, "X-Tenant": {File: "/run/t"}}})),
		encodedAt(t, 2, NewBackendAdded(at, "g", "b", BackendConfig{})),
		encodedAt(t, 2, NewBackendRemoved(at, "g", "b", BackendConfig{})),
		encodedAt(t, 2, NewBackendRemoved(at, "h", "x", BackendConfig{})),
		encodedAt(t, 2, NewHealthChanged(at, "g", "b", "unknown", "healthy", true, "ok")),
		encodedAt(t, 2, NewHealthChanged(at, "g", "zz", "unknown", "healthy", true, "")),
		encodedAt(t, 2, small),
		encodedAt(t, 2, big),
		encodedAt(t, 2, badZstd),
		encodedAt(t, 2, notJSON),
		encodedAt(t, 2, deep),
		encodedAt(t, 2, farTime),
		encodedAt(t, 2, smallEra),
		encodedAt(t, 2, bigEra),
		encodedAt(t, 2, badEra),
		encodedAt(t, 3, NewBackendRemoved(at, "g", "b", BackendConfig{})), // the wrong generation
		encodedAt(t, 2, NewPolicyChanged(at, &policy.Section{Default: policy.Deny, Rules: []policy.Rule{
			{Name: "ops", Effect: policy.Allow, Tools: []string{"beta_*"}, When: `"ops" in claims.roles`}}})),
		encodedAt(t, 2, NewPolicyChanged(at, nil)),
		encodedAt(t, 2, &eventspb.Event{SchemaVersion: SchemaVersion, Kind: &eventspb.Event_PolicyChanged{
			PolicyChanged: &eventspb.PolicyChanged{Section: []byte(`{"rules":[{"name":"x","effect":"deny","when":"(("}]}`)}}}),
		encodedAt(t, 2, NewNamingChanged(at, "g", &naming.Spec{Separator: "_", Conflicts: naming.Priority, Backends: []naming.BackendRules{
			{Name: "b", Tools: naming.Rules{Include: []string{"read_*"}, Exclude: []string{"x"}, Rename: map[string]string{"a": "z", "b": "y"}}},
			{Name: "c", Resources: naming.Rules{Rename: map[string]string{"file:///a": "docs://a"}}}}})),
		encodedAt(t, 2, NewNamingChanged(at, "h", &naming.Spec{Conflicts: naming.Manual})),
		encodedAt(t, 2, NewNamingChanged(at, "g", nil)),
		encodedAt(t, 2, &eventspb.Event{SchemaVersion: SchemaVersion, Group: "g", Kind: &eventspb.Event_NamingChanged{NamingChanged: &eventspb.NamingChanged{
			Spec: &eventspb.NamingSpec{Conflicts: "first", Backends: []*eventspb.BackendNaming{{Name: "b", Tools: &eventspb.NameRules{Include: []string{"[x"}}}}}}}}),
		encodedAt(t, 2, &eventspb.Event{SchemaVersion: SchemaVersion, Group: "g", Backend: "b"}),
		encodedAt(t, 2, &eventspb.Event{SchemaVersion: 2, Group: "g", Backend: "b", Kind: &eventspb.Event_BackendRemoved{}}),
		{},
		[]byte("\xff\xff\xff"),
	}
}

// checkState checks the invariants of a folded state: every group and
// backend under its own name, no empty group, no backend changed after the
// state's generation, and a catalog of JSON definitions.
func checkState(t *testing.T, s *State) {
	t.Helper()
	if a := s.Authorization; a != nil && a.Generation > s.Generation {
		t.Fatalf("authorization %+v at state generation %d", a, s.Generation)
	}
	for name, g := range s.Groups {
		if g == nil || g.Name != name || len(g.Backends) == 0 && g.Naming == nil {
			t.Fatalf("group %q: %+v", name, g)
		}
		if n := g.Naming; n != nil && (n.Generation > s.Generation || n.Spec == nil) {
			t.Fatalf("group %q: naming %+v at state generation %d", name, n, s.Generation)
		}
		for bn, b := range g.Backends {
			if b == nil || b.Name != bn || b.Group != name || b.Generation > s.Generation {
				t.Fatalf("backend %s/%s: %+v at state generation %d", name, bn, b, s.Generation)
			}
			if c := b.Catalog; c != nil {
				for _, defs := range [][]json.RawMessage{c.Tools, c.Resources, c.Prompts} {
					for _, d := range defs {
						if !json.Valid(d) {
							t.Fatalf("backend %s/%s: definition %q is not JSON", name, bn, d)
						}
					}
				}
			}
		}
	}
}

// snapshotJSON is s as a snapshot stores it.
func snapshotJSON(t *testing.T, s *State) []byte {
	t.Helper()
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatalf("snapshot of %+v: %v", s, err)
	}
	return raw
}

// FuzzDecodeEvent folds arbitrary bytes, as a reader folds a message of
// the event stream, into a state: it never panics, the state moves to the
// message's generation whether the event decodes or not, the state folded
// into is left as it was, the new state keeps its invariants and survives
// a snapshot round trip, and a decoded event re-encodes to the same event
// and converts to JSON for the admin API.
func FuzzDecodeEvent(f *testing.F) {
	for _, s := range eventSeeds(f) {
		f.Add(s)
	}
	base := fuzzBase(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		before := snapshotJSON(t, base)
		var reported error
		next, ev, err := fold(base, 2, data, NewMetrics(nil), func(err error) { reported = err })
		if err != nil {
			t.Fatalf("fold at the next generation: %v", err)
		}
		if after := snapshotJSON(t, base); !bytes.Equal(before, after) {
			t.Fatalf("the state folded into changed:\n%s\n%s", before, after)
		}
		if next == nil || next.Generation != 2 {
			t.Fatalf("state %+v, want generation 2", next)
		}
		checkState(t, next)
		if ev == nil {
			if !errors.Is(reported, ErrDecode) {
				t.Fatalf("not decoded, reported %v", reported)
			}
			if next.Groups["g"] != base.Groups["g"] || len(next.Groups) != len(base.Groups) {
				t.Fatalf("an event not decoded changed the state: %+v", next)
			}
		} else {
			if ev.GetGeneration() != 2 || ev.GetSchemaVersion() != SchemaVersion || ev.Kind == nil {
				t.Fatalf("decoded %v", ev)
			}
			if reported != nil && !errors.Is(reported, ErrInvalidEvent) {
				t.Fatalf("applied, reported %v", reported)
			}
			enc, err := Encode(ev)
			if err != nil {
				t.Fatalf("re-encode %v: %v", ev, err)
			}
			again, err := Decode(2, enc)
			if err != nil || !proto.Equal(again, ev) {
				t.Fatalf("re-encoded %v decodes to %v, %v", ev, again, err)
			}
			if _, err := MarshalEvent(ev); err != nil {
				t.Fatalf("event %v as JSON: %v", ev, err)
			}
		}
		// A snapshot of the new state decodes to the same state.
		raw := snapshotJSON(t, next)
		s, err := decodeSnapshot(compress(raw))
		if err != nil {
			t.Fatalf("snapshot %s: %v", raw, err)
		}
		if again := snapshotJSON(t, s); !bytes.Equal(again, raw) {
			t.Fatalf("snapshot\n%s\nread back as\n%s", raw, again)
		}
		// Folding the same message again is a no-op.
		if same, ev2, err := fold(next, 2, data, nil, nil); same != next || ev2 != nil || err != nil {
			t.Fatalf("a redelivery changed the state")
		}
	})
}

// FuzzDecodeSnapshot: a snapshot read from the KV bucket never panics the
// reader, and one that decodes has its groups map and stores and reads
// back as itself.
func FuzzDecodeSnapshot(f *testing.F) {
	base := fuzzBase(f)
	for _, raw := range [][]byte{
		mustJSON(f, base),
		mustJSON(f, NewState()),
		[]byte(`{"generation":3,"groups":{"g":{"name":"g","backends":{"b":{"name":"b","group":"g","generation":2,"catalog":{"tools":[{"name":"x"}],"digest":"d","generation":2}}}}}}`),
		[]byte(`{"generation":1,"groups":{"g":null}}`),
		[]byte(`{"generation":1,"groups":{"g":{"name":"x","backends":{}}}}`),
		[]byte(`{"generation":-1}`),
		[]byte(`{"generation":4,"groups":{},"authorization":{"section":{"default":"deny","rules":[{"name":"a","effect":"allow","when":"true"}]},"generation":4}}`),
		[]byte(`{"generation":4,"groups":{},"authorization":{"section":{"rules":[{"name":"a","effect":"allow","when":"(("}]},"generation":4}}`),
		[]byte(`{"groups":` + strings.Repeat("[", 100000)),
	} {
		f.Add(compress(raw))
		f.Add(raw) // not compressed: refused
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeSnapshot(b)
		if err != nil {
			return
		}
		if s.Groups == nil {
			t.Fatal("a snapshot without its groups map")
		}
		raw := snapshotJSON(t, s)
		again, err := decodeSnapshot(compress(raw))
		if err != nil {
			t.Fatalf("stored %s, read back: %v", raw, err)
		}
		if r2 := snapshotJSON(t, again); !bytes.Equal(r2, raw) {
			t.Fatalf("stored\n%s\nread back as\n%s", raw, r2)
		}
	})
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
