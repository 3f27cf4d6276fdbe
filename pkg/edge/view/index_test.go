package view

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/naming"
)

// servedNamed builds the view of backends cats (backend → tool name →
// description) under the given naming strategy.
func servedNamed(t *testing.T, strategy naming.Strategy, cats map[string]map[string]string) *Served {
	t.Helper()
	g := &events.Group{Name: "default", Backends: map[string]*events.Backend{},
		Naming: &events.Naming{Spec: &naming.Spec{Separator: "_", Conflicts: strategy}}}
	for backend, tools := range cats {
		var defs []json.RawMessage
		for name, desc := range tools {
			b, err := json.Marshal(map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object"}})
			if err != nil {
				t.Fatal(err)
			}
			defs = append(defs, b)
		}
		d, err := catalog.Digest(defs)
		if err != nil {
			t.Fatal(err)
		}
		g.Backends[backend] = &events.Backend{Name: backend, Group: "default", Advertisable: true, Status: "healthy",
			Config: events.BackendConfig{URL: "http://127.0.0.1:1/mcp"}, Catalog: &events.Catalog{Tools: defs, Digest: d}}
	}
	sv := Build(1, g, "_", Empty())
	if len(sv.Dropped) > 0 {
		t.Fatalf("dropped: %v", sv.Dropped)
	}
	return sv
}

// The index groups tools by the backend that serves them, not by a guess
// from their names: under priority naming the exposed names carry no
// backend prefix, and a query that names what a backend is about ("in
// Stripe") still finds that backend's tool whose own text does not say it.
func TestIndexGroupsByBackend(t *testing.T) {
	cats := map[string]map[string]string{
		"payments": {
			"send_refund":     "Send a refund to the card a payment was made with.",
			"list_charges":    "List the charges of a Stripe account.",
			"create_customer": "Create a customer with an email address.",
			"get_balance":     "Get the Stripe balance.",
		},
		"shop": {
			"order_refund":  "Refund an order to its buyer.",
			"list_orders":   "List the orders of the shop.",
			"ship_order":    "Mark an order shipped with a tracking number.",
			"cancel_order":  "Cancel an order before it ships.",
			"create_coupon": "Create a discount coupon.",
		},
	}
	for _, strategy := range []naming.Strategy{naming.Priority, naming.Manual} {
		sv := servedNamed(t, strategy, cats)
		if sv.Tools["send_refund"] == nil {
			t.Fatalf("%s naming: tools %v, want unprefixed names", strategy, sv.ToolList)
		}
		ti := NewIndex(sv, nil, nil)
		var res FindResult
		body, err := ti.Find("refund on stripe", 3)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(body, &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Tools) == 0 || res.Tools[0].Name != "send_refund" {
			t.Errorf("%s naming: find_tool ranks %+v, want send_refund (of payments) first", strategy, res.Tools)
		}
	}
}

// A find_tool result carries, after each tool's score, the query words
// the tool matched: on the wire (encoded from the definition) and decoded.
func TestFindMatched(t *testing.T) {
	sv := servedNamed(t, naming.Prefix, map[string]map[string]string{
		"mail": {"send": "Send an email message.", "search": "Search the mailbox."},
		"cal":  {"create_event": "Create a calendar event."},
	})
	body, err := NewIndex(sv, nil, nil).Find("send an email to Ann", 8)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(body, []byte(`"score":`)) || !bytes.Contains(body, []byte(`,"matched":["send","email"]}`)) {
		t.Fatalf("result %s: no matched words after the score of mail_send", body)
	}
	var res FindResult
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, f := range res.Tools {
		got[f.Name] = f.Matched
	}
	want := map[string][]string{"mail_send": {"send", "email"}, "mail_search": {"email"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("matched %q, want %q", got, want)
	}
}
