package policy_test

import (
	"fmt"

	"github.com/fleetgate/fleetgate/pkg/policy"
)

func Example() {
	section, err := policy.ParseJSON([]byte(`{"rules": [
		{"name": "ops-only-beta", "effect": "deny", "tools": ["beta_*"], "when": "!(\"ops\" in claims.roles)"},
		{"name": "no-destructive", "effect": "deny",
		 "when": "has(tool.annotations.destructiveHint) && tool.annotations.destructiveHint && !(\"destructive\" in claims.roles)"}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := policy.Compile(section)
	if err != nil {
		fmt.Println(err)
		return
	}
	p = p.WithGeneration(12) // the generation of the PolicyChanged event

	items := policy.NewItemSet(40, []policy.Item{ // the view at generation 40
		{Kind: policy.KindTool, Name: "alpha_echo", Backend: "alpha"},
		{Kind: policy.KindTool, Name: "alpha_drop", Backend: "alpha", Annotations: map[string]any{"destructiveHint": true}},
		{Kind: policy.KindTool, Name: "beta_deploy", Backend: "beta"},
	})
	cache := policy.NewCache(nil)
	dev := policy.TokenSubject("https://issuer.example", "alice", "default", map[string]any{"roles": []any{"dev"}})
	ops := policy.TokenSubject("https://issuer.example", "bob", "default", map[string]any{"roles": []any{"ops"}})
	fmt.Println(cache.Visible(p, dev, items).Names(policy.KindTool))
	fmt.Println(cache.Visible(p, ops, items).Names(policy.KindTool))
	fmt.Printf("%+v\n", p.Decide(dev, items.Item(2)))
	// Output:
	// [alpha_echo]
	// [alpha_echo beta_deploy]
	// {Allowed:false Rule:ops-only-beta}
}
