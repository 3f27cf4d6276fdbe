package policy

import (
	"errors"
	"strings"
	"testing"
)

func tools(names ...string) []Item {
	out := make([]Item, len(names))
	for i, n := range names {
		be, _, _ := strings.Cut(n, "_")
		out[i] = Item{Kind: KindTool, Name: n, Backend: be}
	}
	return out
}

func mustCompile(t testing.TB, s *Section) *Policy {
	t.Helper()
	p, err := Compile(s)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return p
}

func TestDecide(t *testing.T) {
	ops := TokenSubject("https://issuer", "alice", "default", map[string]any{"roles": []any{"ops", "dev"}})
	dev := TokenSubject("https://issuer", "bob", "default", map[string]any{"roles": []any{"dev"}})
	anon := HeaderSubject("carol", "default")
	destructive := Item{Kind: KindTool, Name: "alpha_drop", Backend: "alpha", Annotations: map[string]any{"destructiveHint": true}}
	beta := Item{Kind: KindTool, Name: "beta_echo", Backend: "beta"}
	alpha := Item{Kind: KindTool, Name: "alpha_echo", Backend: "alpha"}
	prompt := Item{Kind: KindPrompt, Name: "beta_greet", Backend: "beta"}
	res := Item{Kind: KindResource, Name: "file:///etc/passwd", Backend: "alpha"}

	cases := []struct {
		name    string
		section *Section
		subject Subject
		item    Item
		want    Decision
	}{
		{"no section allows", nil, anon, beta, Decision{Allowed: true}},
		{"empty section allows", &Section{}, anon, beta, Decision{Allowed: true}},
		{"default deny", &Section{Default: Deny}, ops, beta, Decision{}},
		{"deny by claim: not ops", &Section{Rules: []Rule{{Name: "ops-only-beta", Effect: Deny, Tools: []string{"beta_*"},
			When: `!("ops" in claims.roles)`}}}, dev, beta, Decision{Rule: "ops-only-beta"}},
		{"deny by claim: ops passes", &Section{Rules: []Rule{{Name: "ops-only-beta", Effect: Deny, Tools: []string{"beta_*"},
			When: `!("ops" in claims.roles)`}}}, ops, beta, Decision{Allowed: true}},
		{"glob does not select", &Section{Rules: []Rule{{Name: "r", Effect: Deny, Tools: []string{"beta_*"}}}}, dev, alpha, Decision{Allowed: true}},
		{"deny wins over allow", &Section{Default: Deny, Rules: []Rule{
			{Name: "all", Effect: Allow},
			{Name: "no-beta", Effect: Deny, Tools: []string{"beta_*"}}}}, ops, beta, Decision{Rule: "no-beta"}},
		{"allow under default deny", &Section{Default: Deny, Rules: []Rule{
			{Name: "ops", Effect: Allow, When: `"ops" in claims.roles`}}}, ops, beta, Decision{Allowed: true, Rule: "ops"}},
		{"allow under default deny: no claim", &Section{Default: Deny, Rules: []Rule{
			{Name: "ops", Effect: Allow, When: `"ops" in claims.roles`}}}, anon, beta, Decision{}},
		{"kinds: tools rule skips prompts", &Section{Rules: []Rule{{Name: "r", Effect: Deny, Tools: []string{"*"}}}}, ops, prompt, Decision{Allowed: true}},
		{"kinds: prompts rule", &Section{Rules: []Rule{{Name: "r", Effect: Deny, Prompts: []string{"beta_*"}}}}, ops, prompt, Decision{Rule: "r"}},
		{"kinds: no kind names everything", &Section{Rules: []Rule{{Name: "r", Effect: Deny}}}, ops, res, Decision{Rule: "r"}},
		{"resources: star stops at slash", &Section{Rules: []Rule{{Name: "r", Effect: Deny, Resources: []string{"file:///*"}}}}, ops, res, Decision{Allowed: true}},
		{"resources: full path", &Section{Rules: []Rule{{Name: "r", Effect: Deny, Resources: []string{"file:///etc/*"}}}}, ops, res, Decision{Rule: "r"}},
		{"glob class", &Section{Rules: []Rule{{Name: "r", Effect: Deny, Tools: []string{"[ab]*_echo"}}}}, ops, beta, Decision{Rule: "r"}},
		{"destructive denied without claim", &Section{Rules: []Rule{{Name: "no-destructive", Effect: Deny,
			When: `has(tool.annotations.destructiveHint) && tool.annotations.destructiveHint == true && !("destructive" in claims.roles)`}}},
			ops, destructive, Decision{Rule: "no-destructive"}},
		{"destructive rule leaves others", &Section{Rules: []Rule{{Name: "no-destructive", Effect: Deny,
			When: `has(tool.annotations.destructiveHint) && tool.annotations.destructiveHint == true && !("destructive" in claims.roles)`}}},
			ops, alpha, Decision{Allowed: true}},
		{"item fields", &Section{Rules: []Rule{{Name: "r", Effect: Deny,
			When: `item.kind == "tool" && item.backend == "beta" && item.name.startsWith("beta_") && group == "default" && identity == "bob"`}}},
			dev, beta, Decision{Rule: "r"}},
		{"eval error fails closed for deny", &Section{Rules: []Rule{{Name: "oob", Effect: Deny, When: `claims.roles[5] == "x"`}}},
			ops, beta, Decision{Rule: "oob"}},
		{"eval error fails closed for allow", &Section{Default: Deny, Rules: []Rule{{Name: "oob", Effect: Allow, When: `claims.roles[5] == "x"`}}},
			ops, beta, Decision{}},
		{"missing claim fails closed", &Section{Rules: []Rule{{Name: "r", Effect: Deny, When: `!("ops" in claims.roles)`}}},
			anon, beta, Decision{Rule: "r"}},
		{"cost limit fails closed", &Section{Rules: []Rule{{Name: "slow", Effect: Deny,
			When: `claims.roles.all(a, claims.roles.all(b, a.matches("^(a|b)*c$") || a == b))`}}},
			TokenSubject("i", "s", "g", map[string]any{"roles": manyRoles(2000)}), beta, Decision{Rule: "slow"}},
		{"numbers from JSON", &Section{Rules: []Rule{{Name: "r", Effect: Deny, When: `claims.level < 3`}}},
			TokenSubject("i", "s", "g", map[string]any{"level": float64(2)}), beta, Decision{Rule: "r"}},
		{"optional syntax", &Section{Rules: []Rule{{Name: "r", Effect: Deny, When: `claims.?team.orValue("") != "core"`}}},
			anon, beta, Decision{Rule: "r"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := mustCompile(t, tc.section)
			if got := p.Decide(tc.subject, tc.item); got != tc.want {
				t.Fatalf("Decide = %+v, want %+v", got, tc.want)
			}
			set := NewItemSet(1, []Item{alpha, tc.item})
			if got := p.Visible(tc.subject, set).At(1); got != tc.want.Allowed {
				t.Fatalf("Visible = %v, want %v", got, tc.want.Allowed)
			}
		})
	}
}

func manyRoles(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"
	}
	return out
}

func TestCompileErrors(t *testing.T) {
	cases := []struct {
		name    string
		section Section
		rule    string
		field   string
		index   int
	}{
		{"bad default", Section{Default: "maybe"}, "", "default", -1},
		{"bad name", Section{Rules: []Rule{{Name: "Bad Name", Effect: Deny}}}, "", "name", 0},
		{"long name", Section{Rules: []Rule{{Name: strings.Repeat("a", 64), Effect: Deny}}}, "", "name", 0},
		{"duplicate name", Section{Rules: []Rule{{Name: "a", Effect: Deny}, {Name: "a", Effect: Allow}}}, "a", "name", 1},
		{"bad effect", Section{Rules: []Rule{{Name: "a", Effect: "maybe"}}}, "a", "effect", 0},
		{"bad glob", Section{Rules: []Rule{{Name: "a", Effect: Deny, Tools: []string{"beta_[*"}}}}, "a", "tools", 0},
		{"empty kind list", Section{Rules: []Rule{{Name: "a", Effect: Deny, Prompts: []string{}}}}, "a", "prompts", 0},
		{"syntax error", Section{Rules: []Rule{{Name: "ok", Effect: Deny}, {Name: "broken-rule", Effect: Deny, When: `claims.roles ==`}}}, "broken-rule", "when", 1},
		{"not bool", Section{Rules: []Rule{{Name: "str", Effect: Deny, When: `identity`}}}, "str", "when", 0},
		{"dyn is not bool", Section{Rules: []Rule{{Name: "dyn", Effect: Deny, When: `claims.admin`}}}, "dyn", "when", 0},
		{"unknown variable", Section{Rules: []Rule{{Name: "var", Effect: Deny, When: `request.ip == "x"`}}}, "var", "when", 0},
		{"too deep", Section{Rules: []Rule{{Name: "deep", Effect: Deny, When: strings.Repeat("(", 100) + "true" + strings.Repeat(")", 100)}}}, "deep", "when", 0},
		{"nested comprehension", Section{Rules: []Rule{{Name: "nest", Effect: Deny,
			When: `[1].all(a, [1].all(b, [1].all(c, true)))`}}}, "nest", "when", 0},
		{"bad regex literal", Section{Rules: []Rule{{Name: "re", Effect: Deny, When: `identity.matches("(")`}}}, "re", "when", 0},
		{"too long", Section{Rules: []Rule{{Name: "long", Effect: Deny, When: strings.Repeat("true && ", 600) + "true"}}}, "long", "when", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(&tc.section)
			var re *RuleError
			if !errors.As(err, &re) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Compile err = %v, want a *RuleError", err)
			}
			if re.Name != tc.rule || re.Field != tc.field || re.Index != tc.index {
				t.Fatalf("RuleError = %+v, want rule %q field %q index %d", re, tc.rule, tc.field, tc.index)
			}
			if tc.rule != "" && !strings.Contains(err.Error(), tc.rule) {
				t.Fatalf("error %q does not name the rule %q", err, tc.rule)
			}
			if len(err.Error()) > 400 {
				t.Fatalf("error text is %d bytes", len(err.Error()))
			}
		})
	}
}

func TestParseJSON(t *testing.T) {
	s, err := ParseJSON([]byte(`{"default":"deny","rules":[{"name":"a","effect":"allow","tools":["x_*"],"when":"true"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(s.Canonical()), `{"default":"deny","rules":[{"name":"a","effect":"allow","tools":["x_*"],"when":"true"}]}`; got != want {
		t.Fatalf("Canonical = %s, want %s", got, want)
	}
	empty, _ := ParseJSON([]byte(`{}`))
	if got := string(empty.Canonical()); got != `{"default":"allow","rules":[]}` {
		t.Fatalf("Canonical of {} = %s", got)
	}
	if s.Digest() == empty.Digest() || !strings.HasPrefix(s.Digest(), "sha256:") {
		t.Fatalf("digests %s %s", s.Digest(), empty.Digest())
	}
	for _, bad := range []string{`{"default":"allow","extra":1}`, `{"rules":[{"name":"a","effect":"deny","tool":["x"]}]}`,
		`{} {}`, `[]`, `{"rules":[{"name":"a"}]}`, strings.Repeat(" ", MaxSectionBytes+1)} {
		if _, err := ParseJSON([]byte(bad)); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseJSON(%.40q) err = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestSubjectKey(t *testing.T) {
	a := TokenSubject("iss", "alice", "default", map[string]any{"roles": []any{"dev"}, "exp": 1.0})
	b := TokenSubject("iss", "alice", "default", map[string]any{"exp": 1.0, "roles": []any{"dev"}})
	c := TokenSubject("iss", "alice", "default", map[string]any{"roles": []any{"dev", "ops"}, "exp": 1.0})
	d := TokenSubject("other", "alice", "default", map[string]any{"roles": []any{"dev"}, "exp": 1.0})
	e := TokenSubject("iss", "alice", "other", map[string]any{"roles": []any{"dev"}, "exp": 1.0})
	if a.Key() != b.Key() {
		t.Fatal("same claims give different keys")
	}
	for _, x := range []Subject{c, d, e, HeaderSubject("alice", "default")} {
		if x.Key() == a.Key() {
			t.Fatalf("different subject %+v has the same key", x)
		}
	}
	if HeaderSubject("ab", "c").Key() == HeaderSubject("a", "bc").Key() {
		t.Fatal("keys are not length-prefixed")
	}
}

func TestVisibility(t *testing.T) {
	p := mustCompile(t, &Section{Rules: []Rule{{Name: "no-beta", Effect: Deny, Tools: []string{"beta_*"}}}})
	set := NewItemSet(7, append(tools("alpha_a", "beta_b", "alpha_c"), Item{Kind: KindPrompt, Name: "beta_b"}))
	v := p.Visible(HeaderSubject("x", "g"), set)
	if got := strings.Join(v.Names(KindTool), ","); got != "alpha_a,alpha_c" {
		t.Fatalf("visible tools %s", got)
	}
	if !v.Allowed(KindPrompt, "beta_b") || v.Allowed(KindTool, "beta_b") || v.Allowed(KindTool, "nope") || v.Count() != 3 {
		t.Fatal("Allowed/Count wrong")
	}
	all := (*Policy)(nil).Visible(HeaderSubject("x", "g"), set)
	if all.Count() != 4 || SameNames(all, v, KindTool) || !SameNames(all, v, KindPrompt) {
		t.Fatal("nil policy must allow all")
	}
}

// TestPerItemDetection: an expression that reads the item anywhere (in a
// comprehension, a has(), an optional select, a literal) is evaluated per
// item, never memoised across items.
func TestPerItemDetection(t *testing.T) {
	s := TokenSubject("i", "s", "g", map[string]any{"roles": []any{"alpha_a"}})
	for _, expr := range []string{
		`claims.roles.exists(r, r == item.name)`,
		`[tool][0].name in claims.roles`,
		`has(item.name) && item.name == "alpha_a"`,
		`item.?name.orValue("") == "alpha_a"`,
		`{"k": tool}.k.name == "alpha_a"`,
	} {
		p := mustCompile(t, &Section{Rules: []Rule{{Name: "r", Effect: Deny, When: expr}}})
		v := p.Visible(s, NewItemSet(1, tools("alpha_a", "alpha_b", "alpha_a2")))
		if got := strings.Join(v.Names(KindTool), ","); got != "alpha_b,alpha_a2" {
			t.Errorf("%s: visible %q", expr, got)
		}
	}
}
