// Package fromview builds the items a tool policy decides over from a
// group's catalog view: every tool and prompt under its exposed name and
// every resource under its URI, with its backend and the annotations of
// its definition.
package fromview

import (
	"encoding/json"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/policy"
)

// Items returns the item set of view v at view generation gen, in view
// order: tools, then prompts, then resources. Build it once per view (the
// generation is part of the visible-set cache key) and share it. A nil
// view gives an empty set.
func Items(gen uint64, v *catalog.View) *policy.ItemSet {
	if v == nil {
		return policy.NewItemSet(gen, nil)
	}
	items := make([]policy.Item, 0, len(v.Tools)+len(v.Prompts)+len(v.Resources))
	for _, t := range v.Tools {
		items = append(items, policy.Item{Kind: policy.KindTool, Name: t.Exposed, Backend: t.Backend, Annotations: annotations(t.Def)})
	}
	for _, p := range v.Prompts {
		items = append(items, policy.Item{Kind: policy.KindPrompt, Name: p.Exposed, Backend: p.Backend, Annotations: annotations(p.Def)})
	}
	for _, r := range v.Resources {
		items = append(items, policy.Item{Kind: policy.KindResource, Name: r.URI, Backend: r.Backend, Annotations: annotations(r.Def)})
	}
	return policy.NewItemSet(gen, items)
}

// annotations reads a definition's "annotations" object; nil when it has
// none or it is not an object. Definitions in a view are already
// validated and bounded by the catalog.
func annotations(def json.RawMessage) map[string]any {
	var head struct {
		Annotations map[string]any `json:"annotations"`
	}
	if json.Unmarshal(def, &head) != nil {
		return nil
	}
	return head.Annotations
}
