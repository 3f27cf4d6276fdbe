package policy

import (
	"fmt"
	"testing"
)

// benchPolicy is a 20-rule policy: deny rules by claim over globs, a
// destructive-tool rule that reads each item, and allow rules by role
// under default deny.
func benchPolicy(b *testing.B) *Policy {
	s := &Section{Default: Deny}
	for i := range 8 {
		s.Rules = append(s.Rules, Rule{Name: fmt.Sprintf("deny-b%d", i), Effect: Deny,
			Tools: []string{fmt.Sprintf("b%d_*", i)}, When: fmt.Sprintf(`!("team%d" in claims.roles)`, i)})
	}
	s.Rules = append(s.Rules, Rule{Name: "no-destructive", Effect: Deny,
		When: `has(tool.annotations.destructiveHint) && tool.annotations.destructiveHint == true && !("destructive" in claims.roles)`})
	for i := range 10 {
		s.Rules = append(s.Rules, Rule{Name: fmt.Sprintf("allow-%d", i), Effect: Allow,
			Tools: []string{fmt.Sprintf("b%d_*", i), fmt.Sprintf("x%d_tool", i)}, When: fmt.Sprintf(`"team%d" in claims.roles || identity == "admin"`, i)})
	}
	s.Rules = append(s.Rules, Rule{Name: "allow-prompts", Effect: Allow, Prompts: []string{"*"}})
	if len(s.Rules) != 20 {
		b.Fatalf("%d rules", len(s.Rules))
	}
	return mustCompile(b, s).WithGeneration(1)
}

func benchItems() *ItemSet {
	items := make([]Item, 1000)
	for i := range items {
		items[i] = Item{Kind: KindTool, Name: fmt.Sprintf("b%d_tool%d", i%10, i), Backend: fmt.Sprintf("b%d", i%10)}
		if i%7 == 0 {
			items[i].Annotations = map[string]any{"destructiveHint": true, "readOnlyHint": false}
		}
	}
	return NewItemSet(1, items)
}

func benchClaims(i int) map[string]any {
	return map[string]any{"iss": "https://issuer", "sub": fmt.Sprintf("user%d", i), "aud": "http://edge/mcp",
		"exp": 1.9e9, "iat": 1.8e9, "roles": []any{"team1", "team3", "team5"}, "scope": "mcp"}
}

// BenchmarkVisibleUncached is tools/list of 1,000 tools for a new identity:
// the subject key and a full policy evaluation.
func BenchmarkVisibleUncached(b *testing.B) {
	p, set := benchPolicy(b), benchItems()
	c := NewCache(nil)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		s := TokenSubject("https://issuer", fmt.Sprintf("user%d", i), "default", benchClaims(i))
		if c.Visible(p, s, set).Count() == 0 {
			b.Fatal("nothing visible")
		}
	}
}

// BenchmarkVisibleCached is the same list for a caller already cached.
func BenchmarkVisibleCached(b *testing.B) {
	p, set := benchPolicy(b), benchItems()
	c := NewCache(nil)
	s := TokenSubject("https://issuer", "user1", "default", benchClaims(1))
	c.Visible(p, s, set)
	b.ReportAllocs()
	for b.Loop() {
		if c.Visible(p, s, set) == nil {
			b.Fatal("nil")
		}
	}
}

// BenchmarkDecide is one tools/call decided without the cache (the item
// reads a per-item rule).
func BenchmarkDecide(b *testing.B) {
	p := benchPolicy(b)
	s := TokenSubject("https://issuer", "user1", "default", benchClaims(1))
	it := Item{Kind: KindTool, Name: "b3_tool3", Backend: "b3", Annotations: map[string]any{"readOnlyHint": true}}
	b.ReportAllocs()
	for b.Loop() {
		if !p.Decide(s, it).Allowed {
			b.Fatal("refused")
		}
	}
}

// BenchmarkSubject is the per-token cost of building a subject (its key).
func BenchmarkSubject(b *testing.B) {
	claims := benchClaims(1)
	b.ReportAllocs()
	for b.Loop() {
		_ = TokenSubject("https://issuer", "user1", "default", claims)
	}
}
