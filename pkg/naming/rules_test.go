package naming

import (
	"errors"
	"strings"
	"testing"
)

func TestRulesCheck(t *testing.T) {
	many := make([]string, MaxPatterns+1)
	for i := range many {
		many[i] = "x"
	}
	tests := []struct {
		name  string
		kind  Kind
		rules Rules
		field string // "" for valid
		msg   string
	}{
		{"valid", Tool, Rules{Include: []string{"read_*", "[a-c]?"}, Exclude: []string{"delete_*"}, Rename: map[string]string{"search": "find_docs"}}, "", ""},
		{"bad glob", Tool, Rules{Exclude: []string{"ok", "[a-"}}, "exclude[1]", "syntax error in pattern"},
		{"empty pattern", Tool, Rules{Include: []string{""}}, "include[0]", "pattern is empty"},
		{"long pattern", Tool, Rules{Include: []string{strings.Repeat("a", MaxPatternLen+1)}}, "include[0]", "limit 256"},
		{"too many patterns", Tool, Rules{Include: many}, "include", "65 patterns, limit 64"},
		{"bad exposed tool name", Tool, Rules{Rename: map[string]string{"a": "b c"}}, "rename.a", "want [A-Za-z0-9_.-]"},
		{"two renames to one name", Prompt, Rules{Rename: map[string]string{"a": "z", "b": "z"}}, "rename.b", `"a" and "b" are both renamed to "z"`},
		{"resource rename to a URI", Resource, Rules{Rename: map[string]string{"file:///a": "docs://a"}}, "", ""},
		{"resource rename without scheme", Resource, Rules{Rename: map[string]string{"file:///a": "a b"}}, `rename."file:///a"`, "no scheme"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.rules.Check(tt.kind)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			var re *RuleError
			if !errors.As(err, &re) || !errors.Is(err, ErrInvalidRules) {
				t.Fatalf("Check = %v, want a *RuleError", err)
			}
			if re.Field != tt.field || !strings.Contains(re.Msg, tt.msg) {
				t.Errorf("Check = field %q msg %q; want field %q msg containing %q", re.Field, re.Msg, tt.field, tt.msg)
			}
		})
	}
}

func TestSpecCheck(t *testing.T) {
	ok := &Spec{Separator: "__", Conflicts: Priority, Backends: []BackendRules{{Name: "a"}, {Name: "b"}}}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		spec *Spec
		want string
	}{
		{&Spec{Separator: "/"}, "separator: name has"},
		{&Spec{Conflicts: "first"}, `conflicts: "first" is not a conflict strategy`},
		{&Spec{Backends: []BackendRules{{Name: "a"}, {Name: "a"}}}, "backends[1].name"},
		{&Spec{Backends: []BackendRules{{Name: "a"}, {Name: "b", Tools: Rules{Include: []string{"["}}}}}, "backends[1].tools.include[0]: pattern"},
		{&Spec{Backends: []BackendRules{
			{Name: "a", Tools: Rules{Rename: map[string]string{"x": "find"}}},
			{Name: "b", Tools: Rules{Rename: map[string]string{"y": "find"}}},
		}}, `tool name "find" is asked for by backend "a" ("x") and backend "b" ("y")`},
	}
	for _, tt := range tests {
		err := tt.spec.Check()
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalidRules) {
			t.Errorf("Check(%+v) = %v, want %q", tt.spec, err, tt.want)
		}
	}
}

func TestSpecEqualClone(t *testing.T) {
	s := &Spec{Conflicts: Manual, Backends: []BackendRules{{Name: "a", Tools: Rules{Rename: map[string]string{"x": "y"}}}}}
	c := s.Clone()
	if !s.Equal(c) {
		t.Fatal("clone differs")
	}
	c.Backends[0].Tools.Rename["x"] = "z"
	if s.Equal(c) || s.Backends[0].Tools.Rename["x"] != "y" {
		t.Fatal("clone shares its rename map")
	}
	if (*Spec)(nil).Equal(&Spec{}) || !(*Spec)(nil).Equal(nil) {
		t.Fatal("nil Equal")
	}
}

func TestParseStrategy(t *testing.T) {
	for in, want := range map[string]Strategy{"": Prefix, "prefix": Prefix, "priority": Priority, "manual": Manual} {
		if got, err := ParseStrategy(in); err != nil || got != want {
			t.Errorf("ParseStrategy(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseStrategy("Prefix"); err == nil {
		t.Error("strategies are case-sensitive")
	}
}
