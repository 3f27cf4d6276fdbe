package policy

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestNoConcatenation: string and bytes concatenation of typed values
// are not in the policy language; numbers and lists still add (dyn
// values still concatenate, charged by size).
func TestNoConcatenation(t *testing.T) {
	for _, expr := range []string{`(identity + "x").size() > 0`, `(b"a" + b"b").size() == 2`} {
		if _, err := Compile(&Section{Rules: []Rule{{Name: "r", Effect: Deny, When: expr}}}); err == nil {
			t.Errorf("%s compiles", expr)
		}
	}
	mustCompile(t, &Section{Rules: []Rule{{Name: "r", Effect: Deny, When: `1 + 2 == 3 && 1.5 + 1.0 > 2.0 && size(claims.roles + ["x"]) > 0`}}})
}

// TestEvalBounded: hostile expressions over large claims stop at the cost
// limit quickly, and fail closed.
func TestEvalBounded(t *testing.T) {
	big := strings.Repeat("a", 16<<10)
	roles := make([]any, 2000)
	for i := range roles {
		roles[i] = big[:64]
	}
	s := TokenSubject("i", "s", "g", map[string]any{"roles": roles, "s": big})
	s.oversized = false // as if the claims were within bounds
	for _, expr := range []string{
		`claims.roles.all(a, claims.roles.all(b, a == b))`,
		`claims.roles.exists(a, a.matches("(a|aa)*b"))`,
		`claims.s.matches("(a|aa)*b") && claims.s.matches("(a|aa)*c")`,
		`claims.roles.map(a, claims.roles.filter(b, b == a)).size() == 0`,
		`claims.roles.map(a, claims.roles).size() == 0`,
		`claims.roles.all(a, (a + claims.s + claims.s).size() > 0) == false`,
		`claims.roles.all(a, claims.s.contains(a)) == false`,
		`claims.roles.all(a, "zz" in claims.roles) == false`,
	} {
		p := mustCompile(t, &Section{Rules: []Rule{{Name: "r", Effect: Deny, When: expr}}})
		start := time.Now()
		d := p.Decide(s, Item{Kind: KindTool, Name: "x"})
		took := time.Since(start)
		t.Logf("%v %v %s", took, d, expr)
		// The bound is CEL's cost limit (an unbounded expression of these
		// runs for minutes); the time only catches a limit that stopped
		// applying, with room for a loaded machine under -race.
		if took > 5*time.Second {
			t.Errorf("%s took %v", expr, took)
		}
	}
}

// TestOversizedClaimsFailClosed: claims over MaxClaimsBytes evaluate no
// condition; a deny with a condition matches, an allow with one does not,
// and rules without conditions still apply.
func TestOversizedClaimsFailClosed(t *testing.T) {
	p := mustCompile(t, &Section{Default: Deny, Rules: []Rule{
		{Name: "ops", Effect: Allow, When: `"ops" in claims.roles`},
		{Name: "public", Effect: Allow, Tools: []string{"pub_*"}},
		{Name: "no-beta", Effect: Deny, Tools: []string{"beta_*"}, When: `!("ops" in claims.roles)`},
	}})
	big := TokenSubject("i", "s", "g", map[string]any{"roles": []any{"ops"}, "pad": strings.Repeat("x", MaxClaimsBytes)})
	set := NewItemSet(1, tools("alpha_a", "pub_b", "beta_c"))
	v := p.Visible(big, set)
	if got := strings.Join(v.Names(KindTool), ","); got != "pub_b" || !v.FailedClosed() {
		t.Fatalf("visible %q failedClosed %v", got, v.FailedClosed())
	}
	small := TokenSubject("i", "s", "g", map[string]any{"roles": []any{"ops"}})
	if v := p.Visible(small, set); v.Count() != 3 || v.FailedClosed() {
		t.Fatalf("small claims: %v", v.Names(KindTool))
	}
}

// TestBudgetFailsClosed: once one call's evaluations exceed the total
// budget, the remaining conditions fail closed.
func TestBudgetFailsClosed(t *testing.T) {
	roles := make([]any, 400)
	for i := range roles {
		roles[i] = fmt.Sprintf("role%d", i)
	}
	// Reads the item, so it runs per item: about 400 units each.
	p := mustCompile(t, &Section{Rules: []Rule{{Name: "heavy", Effect: Deny, When: `item.name == "never" && claims.roles.exists(r, r == "x") || claims.roles.all(r, r != item.name) == false`}}})
	names := make([]string, 10000)
	for i := range names {
		names[i] = fmt.Sprintf("t_%d", i)
	}
	v := p.Visible(TokenSubject("i", "s", "g", map[string]any{"roles": roles}), NewItemSet(1, tools(names...)))
	if !v.FailedClosed() || v.At(len(names)-1) || !v.At(0) {
		t.Fatalf("failedClosed %v, first %v, last %v", v.FailedClosed(), v.At(0), v.At(len(names)-1))
	}
}
