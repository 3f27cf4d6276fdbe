package policy

import (
	"fmt"
	"sync"
	"testing"
)

func TestCache(t *testing.T) {
	p1 := mustCompile(t, &Section{Rules: []Rule{{Name: "ops-only-beta", Effect: Deny, Tools: []string{"beta_*"},
		When: `!("ops" in claims.roles)`}}}).WithGeneration(5)
	set := NewItemSet(3, tools("alpha_a", "beta_b"))
	c := NewCache(&CacheOptions{MaxEntries: 2})
	dev := TokenSubject("iss", "alice", "default", map[string]any{"roles": []any{"dev"}})
	v := c.Visible(p1, dev, set)
	if v.Allowed(KindTool, "beta_b") {
		t.Fatal("dev sees beta")
	}
	if c.Visible(p1, dev, set) != v {
		t.Fatal("second lookup was not a hit")
	}
	if h, m := c.Stats(); h != 1 || m != 1 {
		t.Fatalf("stats %d hits %d misses", h, m)
	}
	// The token is refreshed with the ops role: same iss and sub, new
	// claims, so a new key and a new visible set.
	refreshed := TokenSubject("iss", "alice", "default", map[string]any{"roles": []any{"dev", "ops"}})
	if !c.Visible(p1, refreshed, set).Allowed(KindTool, "beta_b") {
		t.Fatal("refreshed token with ops still hidden from beta")
	}
	// A new policy generation or a new view generation is a miss.
	p2 := mustCompile(t, &Section{}).WithGeneration(6)
	if !c.Visible(p2, dev, set).Allowed(KindTool, "beta_b") {
		t.Fatal("new policy not applied")
	}
	set2 := NewItemSet(4, tools("alpha_a", "beta_b", "beta_c"))
	if c.Visible(p1, dev, set2).Set() != set2 {
		t.Fatal("new view not applied")
	}
	if c.Len() != 2 {
		t.Fatalf("Len = %d, want the bound 2", c.Len())
	}
}

func TestCacheConcurrent(t *testing.T) {
	p := mustCompile(t, &Section{Rules: []Rule{{Name: "r", Effect: Deny, When: `item.name == "beta_b" && identity != "u1"`}}})
	set := NewItemSet(1, tools("alpha_a", "beta_b"))
	c := NewCache(&CacheOptions{MaxEntries: 8})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				id := fmt.Sprintf("u%d", (g+i)%16)
				v := c.Visible(p, HeaderSubject(id, "default"), set)
				if v.Allowed(KindTool, "beta_b") != (id == "u1") {
					t.Errorf("%s: wrong visibility", id)
					return
				}
			}
		})
	}
	wg.Wait()
	if c.Len() > 8 {
		t.Fatalf("Len = %d over the bound", c.Len())
	}
}

// Two regions' policies at the same generation, and two regions' views at
// the same generation, are different keys: an edge merging regional logs
// is never served the visible set one region's policy (or view) computed
// for another's.
func TestCacheRegionsShareGenerations(t *testing.T) {
	hideAlpha := mustCompile(t, &Section{Rules: []Rule{{Name: "no-alpha", Effect: Deny, Tools: []string{"alpha_*"}}}}).WithGeneration(17)
	hideBeta := mustCompile(t, &Section{Rules: []Rule{{Name: "no-beta", Effect: Deny, Tools: []string{"beta_*"}}}}).WithGeneration(17)
	c := NewCache(nil)
	alice := HeaderSubject("alice", "default")
	set := NewItemSet(8, tools("alpha_a", "beta_b"))
	if v := c.Visible(hideAlpha, alice, set); v.Allowed(KindTool, "alpha_a") || !v.Allowed(KindTool, "beta_b") {
		t.Fatal("region a's policy: alpha shown or beta hidden")
	}
	if v := c.Visible(hideBeta, alice, set); !v.Allowed(KindTool, "alpha_a") || v.Allowed(KindTool, "beta_b") {
		t.Fatal("region b's policy at the same generation got region a's visible set")
	}
	other := NewItemSet(8, tools("alpha_a", "beta_b", "gamma_c"))
	if v := c.Visible(hideAlpha, alice, other); v.Set() != other || !v.Allowed(KindTool, "gamma_c") {
		t.Fatal("a view of the same generation got another view's visible set")
	}
	// The same policy over the same view is one entry.
	if h, _ := c.Stats(); h != 0 {
		t.Fatalf("%d hits among distinct keys", h)
	}
	c.Visible(hideBeta, alice, set)
	if h, m := c.Stats(); h != 1 || m != 3 {
		t.Fatalf("%d hits %d misses, want 1 and 3", h, m)
	}
}
