package policy

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzCompile feeds hostile section JSON to ParseJSON and Compile: they
// never panic and stay fast; a section that compiles decides an item.
func FuzzCompile(f *testing.F) {
	for _, seed := range []string{
		`{"default":"deny","rules":[{"name":"ops-only-beta","effect":"deny","tools":["beta_*"],"when":"!(\"ops\" in claims.roles)"}]}`,
		`{"rules":[{"name":"a","effect":"allow","prompts":["[a-z]*"],"resources":["file:///*"],"when":"item.kind == 'prompt'"}]}`,
		`{"rules":[{"name":"x","effect":"deny","when":"claims.roles[5] == \"x\""}]}`,
		`{"rules":[{"name":"x","effect":"deny","when":"claims.roles.all(a, claims.roles.exists(b, a == b))"}]}`,
		`{"rules":[{"name":"x","effect":"deny","tools":["\\"]}]}`,
		`{}`, `null`, `{"default":"allow","rules":null}`,
	} {
		f.Add([]byte(seed), []byte(`{"roles":["ops"],"level":3}`))
	}
	f.Fuzz(func(t *testing.T, section, claims []byte) {
		start := time.Now()
		s, err := ParseJSON(section)
		if err != nil {
			return
		}
		p, err := Compile(s)
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("compile of %d bytes took %v", len(section), took)
		}
		if err != nil {
			return
		}
		var c map[string]any
		_ = json.Unmarshal(claims, &c)
		sub := TokenSubject("iss", "sub", "default", c)
		items := NewItemSet(1, []Item{{Kind: KindTool, Name: "beta_echo", Backend: "beta",
			Annotations: map[string]any{"destructiveHint": true}}, {Kind: KindResource, Name: "file:///a/b"}})
		start = time.Now()
		v := p.Visible(sub, items)
		if d := p.Decide(sub, items.Item(0)); d.Allowed != v.At(0) {
			t.Fatalf("Decide %+v and Visible %v disagree", d, v.At(0))
		}
		if took := time.Since(start); took > time.Second {
			t.Fatalf("deciding took %v", took)
		}
		// The canonical form reads back to the same section.
		back, err := ParseJSON(s.Canonical())
		if err != nil || back.Digest() != s.Digest() {
			t.Fatalf("canonical form does not round-trip: %v", err)
		}
	})
}

// FuzzDecide decides a fixed policy for random claims: no panic, and a
// deny rule whose expression errors refuses.
func FuzzDecide(f *testing.F) {
	p, err := Compile(&Section{Default: Deny, Rules: []Rule{
		{Name: "oob", Effect: Deny, Tools: []string{"beta_*"}, When: `claims.roles[1] == "x"`},
		{Name: "ops", Effect: Allow, When: `"ops" in claims.roles || claims.?admin.orValue(false) == true`},
		{Name: "size", Effect: Deny, When: `size(claims) > 50 || claims.exists(k, k.startsWith("evil"))`},
	}})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{`{"roles":["ops","x"]}`, `{"roles":"ops"}`, `{"admin":true}`, `{"roles":[1,2,{"a":[]}]}`, `null`, `{"evil":1}`} {
		f.Add([]byte(seed), "alpha_echo")
	}
	f.Fuzz(func(t *testing.T, claims []byte, name string) {
		var c map[string]any
		if json.Unmarshal(claims, &c) != nil {
			return
		}
		s := TokenSubject("iss", "sub", "default", c)
		d := p.Decide(s, Item{Kind: KindTool, Name: name})
		if d.Allowed && d.Rule != "ops" {
			t.Fatalf("allowed by %q", d.Rule)
		}
	})
}
