package naming

import (
	"reflect"
	"strings"
	"testing"
)

func TestResolveTable(t *testing.T) {
	alphaBeta := []Catalog{
		{Backend: "alpha", Tools: []string{"echo", "add"}},
		{Backend: "beta", Tools: []string{"echo", "sub"}},
	}
	long := strings.Repeat("x", 125)
	tests := []struct {
		name     string
		spec     *Spec
		catalogs []Catalog
		want     map[string]string // backend/own -> exposed ("" not exposed), tools only
		coll     []Collision
	}{
		{"nil spec is prefix", nil, alphaBeta,
			map[string]string{"alpha/echo": "alpha_echo", "alpha/add": "alpha_add", "beta/echo": "beta_echo", "beta/sub": "beta_sub"}, nil},
		{"priority: first listed keeps the bare name",
			&Spec{Conflicts: Priority, Backends: []BackendRules{{Name: "alpha"}, {Name: "beta"}}}, alphaBeta,
			map[string]string{"alpha/echo": "echo", "alpha/add": "add", "beta/echo": "beta_echo", "beta/sub": "sub"},
			[]Collision{{Kind: Tool, Name: "echo", Backend: "beta", Original: "echo", KeptBy: "alpha", Exposed: "beta_echo", Resolution: Prefixed}}},
		{"priority follows config order, not names",
			&Spec{Conflicts: Priority, Backends: []BackendRules{{Name: "beta"}, {Name: "alpha"}}}, alphaBeta,
			map[string]string{"alpha/echo": "alpha_echo", "beta/echo": "echo"},
			[]Collision{{Kind: Tool, Name: "echo", Backend: "alpha", Original: "echo", KeptBy: "beta", Exposed: "alpha_echo", Resolution: Prefixed}}},
		{"priority: a prefixed name taken by a bare one is suffixed",
			&Spec{Conflicts: Priority, Backends: []BackendRules{{Name: "alpha"}, {Name: "beta"}}},
			[]Catalog{{Backend: "alpha", Tools: []string{"echo", "beta_echo"}}, {Backend: "beta", Tools: []string{"echo"}}},
			map[string]string{"alpha/echo": "echo", "alpha/beta_echo": "beta_echo", "beta/echo": "beta_echo_2"},
			[]Collision{{Kind: Tool, Name: "echo", Backend: "beta", Original: "echo", KeptBy: "alpha", Exposed: "beta_echo_2", Resolution: Suffixed}}},
		{"manual withholds a contested name from everyone",
			&Spec{Conflicts: Manual, Backends: []BackendRules{{Name: "alpha"}, {Name: "beta"}}}, alphaBeta,
			map[string]string{"alpha/echo": "", "beta/echo": "", "alpha/add": "add", "beta/sub": "sub"},
			[]Collision{
				{Kind: Tool, Name: "echo", Backend: "alpha", Original: "echo", Resolution: Withheld},
				{Kind: Tool, Name: "echo", Backend: "beta", Original: "echo", Resolution: Withheld},
			}},
		{"rename wins over the strategy",
			&Spec{Conflicts: Priority, Backends: []BackendRules{{Name: "alpha"}, {Name: "beta", Tools: Rules{Rename: map[string]string{"sub": "echo"}}}}}, alphaBeta,
			map[string]string{"alpha/echo": "alpha_echo", "beta/echo": "beta_echo", "beta/sub": "echo"},
			[]Collision{
				{Kind: Tool, Name: "echo", Backend: "alpha", Original: "echo", KeptBy: "beta", Exposed: "alpha_echo", Resolution: Prefixed},
				{Kind: Tool, Name: "echo", Backend: "beta", Original: "echo", KeptBy: "beta", Exposed: "beta_echo", Resolution: Prefixed},
			}},
		{"manual: a rename keeps its name, the other is withheld",
			&Spec{Conflicts: Manual, Backends: []BackendRules{{Name: "alpha", Tools: Rules{Rename: map[string]string{"add": "sub"}}}, {Name: "beta"}}}, alphaBeta,
			map[string]string{"alpha/add": "sub", "beta/sub": "", "alpha/echo": "", "beta/echo": ""},
			[]Collision{
				{Kind: Tool, Name: "echo", Backend: "alpha", Original: "echo", Resolution: Withheld},
				{Kind: Tool, Name: "echo", Backend: "beta", Original: "echo", Resolution: Withheld},
				{Kind: Tool, Name: "sub", Backend: "beta", Original: "sub", KeptBy: "alpha", Resolution: Withheld},
			}},
		{"include, exclude, and rename of an excluded name",
			&Spec{Backends: []BackendRules{{Name: "alpha", Tools: Rules{Include: []string{"e*", "a?d"}, Exclude: []string{"add"}, Rename: map[string]string{"add": "plus"}}}}}, alphaBeta,
			map[string]string{"alpha/echo": "alpha_echo", "alpha/add": "", "beta/echo": "beta_echo"}, nil},
		{"prefix ambiguity: config order keeps, the other is suffixed",
			&Spec{Backends: []BackendRules{{Name: "a-b"}, {Name: "a"}}, Separator: "-"},
			[]Catalog{{Backend: "a", Tools: []string{"b-c"}}, {Backend: "a-b", Tools: []string{"c"}}},
			map[string]string{"a-b/c": "a-b-c", "a/b-c": "a-b-c_2"},
			[]Collision{{Kind: Tool, Name: "a-b-c", Backend: "a", Original: "b-c", KeptBy: "a-b", Exposed: "a-b-c_2", Resolution: Suffixed}}},
		{"too long for anyone", nil, []Catalog{{Backend: "alpha", Tools: []string{long}}},
			map[string]string{"alpha/" + long: "alpha_" + long[:120] + "_2"},
			[]Collision{{Kind: Tool, Name: "alpha_" + long, Backend: "alpha", Original: long, Exposed: "alpha_" + long[:120] + "_2", Resolution: Suffixed}}},
		{"unlisted backends follow, by name",
			&Spec{Conflicts: Priority, Backends: []BackendRules{{Name: "zeta"}}},
			[]Catalog{{Backend: "beta", Tools: []string{"echo"}}, {Backend: "alpha", Tools: []string{"echo"}}, {Backend: "zeta", Tools: []string{"echo"}}},
			map[string]string{"zeta/echo": "echo", "alpha/echo": "alpha_echo", "beta/echo": "beta_echo"},
			[]Collision{
				{Kind: Tool, Name: "echo", Backend: "alpha", Original: "echo", KeptBy: "zeta", Exposed: "alpha_echo", Resolution: Prefixed},
				{Kind: Tool, Name: "echo", Backend: "beta", Original: "echo", KeptBy: "zeta", Exposed: "beta_echo", Resolution: Prefixed},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Resolve(tt.spec, tt.catalogs)
			for bo, want := range tt.want {
				b, own, _ := strings.Cut(bo, "/")
				got, ok := res.Exposed(Tool, b, own)
				if want == "" && ok || want != "" && got != want {
					t.Errorf("Exposed(%s) = %q, %v; want %q", bo, got, ok, want)
				}
			}
			if !reflect.DeepEqual(res.Collisions, tt.coll) {
				t.Errorf("collisions:\n got %+v\nwant %+v", res.Collisions, tt.coll)
			}
		})
	}
}

func TestResolveResources(t *testing.T) {
	spec := &Spec{Conflicts: Prefix, Backends: []BackendRules{
		{Name: "beta", Resources: Rules{Exclude: []string{"file:///secret/*"}, Rename: map[string]string{"file:///b": "docs://b"}}},
		{Name: "alpha"},
	}}
	res := Resolve(spec, []Catalog{
		{Backend: "alpha", Resources: []string{"file:///a", "file:///shared"}},
		{Backend: "beta", Resources: []string{"file:///shared", "file:///b", "file:///secret/k"}},
	})
	for _, c := range []struct{ b, own, want string }{
		{"alpha", "file:///a", "file:///a"}, {"alpha", "file:///shared", ""},
		{"beta", "file:///shared", "file:///shared"}, {"beta", "file:///b", "docs://b"}, {"beta", "file:///secret/k", ""},
	} {
		got, ok := res.Exposed(Resource, c.b, c.own)
		if c.want == "" && ok || c.want != "" && got != c.want {
			t.Errorf("Exposed(%s, %s) = %q, %v; want %q", c.b, c.own, got, ok, c.want)
		}
	}
	want := []Collision{{Kind: Resource, Name: "file:///shared", Backend: "alpha", Original: "file:///shared", KeptBy: "beta", Resolution: Withheld}}
	if !reflect.DeepEqual(res.Collisions, want) {
		t.Errorf("collisions %+v, want %+v", res.Collisions, want)
	}
}

func TestResolveIgnoresCatalogOrder(t *testing.T) {
	spec := &Spec{Conflicts: Priority, Backends: []BackendRules{{Name: "b"}, {Name: "a"}}}
	x := Resolve(spec, []Catalog{{Backend: "a", Tools: []string{"t", "u", "t"}}, {Backend: "b", Tools: []string{"u"}}})
	y := Resolve(spec, []Catalog{{Backend: "b", Tools: []string{"u"}}, {Backend: "a", Tools: []string{"u"}}, {Backend: "a", Tools: []string{"t"}}})
	if !reflect.DeepEqual(x, y) {
		t.Errorf("results differ:\n%+v\n%+v", x, y)
	}
}

func TestKindsAreSeparateNamespaces(t *testing.T) {
	res := Resolve(&Spec{Conflicts: Manual}, []Catalog{{Backend: "a", Tools: []string{"x"}, Prompts: []string{"x"}}})
	if len(res.Collisions) != 0 {
		t.Fatalf("collisions %+v", res.Collisions)
	}
	if n, _ := res.Exposed(Prompt, "a", "x"); n != "x" {
		t.Errorf("prompt exposed as %q", n)
	}
}
