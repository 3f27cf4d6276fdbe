package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/naming"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// TestAuditStateNaming: audit state at a generation shows the exposed
// names in force then: replaying the log to G gives the names at G.
func TestAuditStateNaming(t *testing.T) {
	node, _, w := auditFleet(t)
	ctx := context.Background()
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	spec := func(first, second string) *naming.Spec {
		return &naming.Spec{Separator: "_", Conflicts: naming.Priority, Backends: []naming.BackendRules{{Name: first}, {Name: second}}}
	}
	var evs []*eventspb.Event
	for _, b := range []string{"alpha", "beta"} {
		cat, err := events.NewCatalogChanged(at, "default", b, &events.Catalog{Tools: []json.RawMessage{
			json.RawMessage(`{"name":"echo","inputSchema":{"type":"object"}}`)}})
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, events.NewBackendAdded(at, "default", b, events.BackendConfig{URL: "http://" + b + "/mcp"}), cat,
			events.NewHealthChanged(at, "default", b, "unknown", "healthy", true, "ok"))
	}
	evs = append(evs, events.NewNamingChanged(at, "default", spec("alpha", "beta")), events.NewNamingChanged(at, "default", spec("beta", "alpha")))
	for i, ev := range evs {
		if _, err := w.Publish(ctx, ev, fmt.Sprint(i)); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	tools := func(gen int) []string {
		var out, errb bytes.Buffer
		if code := audit([]string{"state", "--generation", fmt.Sprint(gen), "--nats-url", node.ClientURL()}, &out, &errb); code != 0 {
			t.Fatalf("audit state %d: %d %s", gen, code, errb.String())
		}
		var st struct {
			Views map[string]struct {
				Tools []string `json:"tools"`
			} `json:"views"`
		}
		if err := json.Unmarshal(out.Bytes(), &st); err != nil {
			t.Fatal(err)
		}
		return st.Views["default"].Tools
	}
	for gen, want := range map[int][]string{
		6: {"alpha_echo", "beta_echo"}, // no naming event yet: prefix
		7: {"beta_echo", "echo"},       // alpha first
		8: {"alpha_echo", "echo"},      // beta first
	} {
		if got := tools(gen); !slices.Equal(got, want) {
			t.Errorf("tools at %d: %v, want %v", gen, got, want)
		}
	}
}
