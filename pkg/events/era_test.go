package events

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/catalog"
)

// TestEraListsRoundTrip: a catalog's stateless lists go through the log
// as they were given, plain and compressed (with the catalog's own lists
// when together they are large), and a catalog without them reads back
// without them.
func TestEraListsRoundTrip(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tool := func(name, desc string) json.RawMessage {
		return json.RawMessage(`{"description":"` + desc + `","inputSchema":{"type":"object"},"name":"` + name + `"}`)
	}
	big := strings.Repeat("d", compressAbove)
	for _, tc := range []struct {
		name string
		c    Catalog
	}{
		{"none", Catalog{Tools: []json.RawMessage{tool("echo", "e")}, Digest: "sha256:a"}},
		{"plain", Catalog{Tools: []json.RawMessage{tool("echo", "e")}, Digest: "sha256:a", ProtocolVersion: "2026-07-28",
			Stateless: &catalog.EraLists{Tools: []json.RawMessage{tool("echo", "e2"), tool("fresh", "f")},
				Prompts: []json.RawMessage{json.RawMessage(`{"name":"p"}`)}, Digest: "sha256:b"}}},
		{"compressed by the stateless lists' size", Catalog{Tools: []json.RawMessage{tool("echo", "e")}, Digest: "sha256:a", ProtocolVersion: "2026-07-28",
			Stateless: &catalog.EraLists{Tools: []json.RawMessage{tool("fresh", big)}, Digest: "sha256:b",
				ResourceTemplates: []json.RawMessage{json.RawMessage(`{"name":"t","uriTemplate":"x://{a}"}`)}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := NewCatalogChanged(at, "g", "b", &tc.c)
			if err != nil {
				t.Fatal(err)
			}
			if cc := ev.GetCatalogChanged(); (tc.c.Stateless != nil && len(tc.c.Stateless.Tools[0]) > compressAbove) != (cc.Compression != 0) {
				t.Errorf("compression %v", cc.Compression)
			}
			enc, err := Encode(ev)
			if err != nil {
				t.Fatal(err)
			}
			dec, err := Decode(0, enc)
			if err != nil {
				t.Fatal(err)
			}
			got, err := catalogFromEvent(1, dec.GetCatalogChanged())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Stateless, tc.c.Stateless) {
				t.Errorf("stateless lists read back as %+v, want %+v", got.Stateless, tc.c.Stateless)
			}
		})
	}
}
