package fromview_test

import (
	"encoding/json"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/policy"
	"github.com/fleetgate/fleetgate/pkg/policy/fromview"
)

func TestItems(t *testing.T) {
	v := catalog.Aggregate([]catalog.Source{
		{Backend: "alpha", Tools: []json.RawMessage{
			json.RawMessage(`{"name":"drop","inputSchema":{"type":"object"},"annotations":{"destructiveHint":true}}`),
			json.RawMessage(`{"name":"echo","inputSchema":{"type":"object"}}`)},
			Prompts:   []json.RawMessage{json.RawMessage(`{"name":"greet"}`)},
			Resources: []json.RawMessage{json.RawMessage(`{"uri":"file:///a","name":"a"}`)}},
	}, nil)
	set := fromview.Items(9, v)
	if set.Generation() != 9 || set.Len() != 4 {
		t.Fatalf("set of %d at %d", set.Len(), set.Generation())
	}
	p, err := policy.Compile(&policy.Section{Rules: []policy.Rule{{Name: "no-destructive", Effect: policy.Deny,
		When: `has(item.annotations.destructiveHint) && item.annotations.destructiveHint == true`}}})
	if err != nil {
		t.Fatal(err)
	}
	vis := p.Visible(policy.HeaderSubject("x", "default"), set)
	if vis.Allowed(policy.KindTool, "alpha_drop") || !vis.Allowed(policy.KindTool, "alpha_echo") ||
		!vis.Allowed(policy.KindPrompt, "alpha_greet") || !vis.Allowed(policy.KindResource, "file:///a") {
		t.Fatalf("visible: tools %v prompts %v resources %v", vis.Names(policy.KindTool), vis.Names(policy.KindPrompt), vis.Names(policy.KindResource))
	}
	if i, ok := set.Index(policy.KindTool, "alpha_drop"); !ok || set.Item(i).Backend != "alpha" {
		t.Fatal("Index")
	}
	if fromview.Items(1, nil).Len() != 0 {
		t.Fatal("nil view")
	}
}
