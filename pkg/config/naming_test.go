package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/naming"
)

const namingYAML = `
aggregation:
  separator: "."
  conflicts: priority
groups:
  - name: default
    backends:
      - name: beta
        url: http://127.0.0.1:9102/mcp
        tools:
          include: ["read_*", "search"]
          exclude: ["read_secret*"]
          rename: {search: find_docs}
        resources:
          exclude: ["file:///private/*"]
          rename: {"file:///readme": "docs://readme"}
      - name: alpha
        url: http://127.0.0.1:9101/mcp
        prompts:
          rename: {summarize: sum}
`

func TestParseNaming(t *testing.T) {
	f, err := Parse("n.yaml", []byte(namingYAML))
	if err != nil {
		t.Fatal(err)
	}
	if f.Aggregation != (Aggregation{Separator: ".", Conflicts: naming.Priority}) {
		t.Errorf("aggregation %+v", f.Aggregation)
	}
	want := &naming.Spec{Separator: ".", Conflicts: naming.Priority, Backends: []naming.BackendRules{
		{Name: "beta",
			Tools: naming.Rules{Include: []string{"read_*", "search"}, Exclude: []string{"read_secret*"},
				Rename: map[string]string{"search": "find_docs"}},
			Resources: naming.Rules{Exclude: []string{"file:///private/*"}, Rename: map[string]string{"file:///readme": "docs://readme"}}},
		{Name: "alpha", Prompts: naming.Rules{Rename: map[string]string{"summarize": "sum"}}},
	}}
	got := f.Naming("default")
	if !reflect.DeepEqual(got, want) || !got.Equal(want) {
		t.Errorf("Naming:\n got %+v\nwant %+v", got, want)
	}
	if err := got.Check(); err != nil {
		t.Error(err)
	}
	if f.Naming("nope") != nil {
		t.Error("Naming of an unknown group")
	}
	// Clone is deep.
	c := f.Clone()
	c.Groups[0].Backends[0].Tools.Rename["search"] = "x"
	if f.Groups[0].Backends[0].Tools.Rename["search"] != "find_docs" {
		t.Error("Clone shares rename maps")
	}
	res := naming.Resolve(got, []naming.Catalog{{Backend: "beta", Tools: []string{"read_a", "read_secret", "search", "drop"}}})
	for own, exp := range map[string]string{"read_a": "read_a", "search": "find_docs"} {
		if e, ok := res.Exposed(naming.Tool, "beta", own); !ok || e != exp {
			t.Errorf("%s exposed as %q, %v", own, e, ok)
		}
	}
}

func TestPutChecksNamingRules(t *testing.T) {
	f, err := Parse("n.yaml", []byte(namingYAML))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		b     Backend
		field string
		msg   string
	}{
		{Backend{Name: "gamma", URL: "http://h/", Tools: naming.Rules{Include: []string{"[x"}}}, "tools.include[0]", "syntax error in pattern"},
		{Backend{Name: "gamma", URL: "http://h/", Prompts: naming.Rules{Rename: map[string]string{"a": "b c"}}}, "prompts.rename.a", "want [A-Za-z0-9_.-]"},
		{Backend{Name: "gamma", URL: "http://h/", Tools: naming.Rules{Rename: map[string]string{"lookup": "find_docs"}}}, "tools.rename.lookup",
			`renames "lookup" to "find_docs", which backend "beta" already renames "search" to`},
	}
	for _, tt := range tests {
		err := f.Clone().Put("default", tt.b)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field || !strings.Contains(fe.Msg, tt.msg) {
			t.Errorf("Put(%+v) = %v; want field %q, message with %q", tt.b, err, tt.field, tt.msg)
		}
	}
	// The same rename in the backend that owns it, and in another group, is fine.
	beta, _ := f.Backend("default", "beta")
	if err := f.Clone().Put("default", beta); err != nil {
		t.Errorf("Put of beta again: %v", err)
	}
	other := Backend{Name: "gamma", URL: "http://h/", Tools: naming.Rules{Rename: map[string]string{"lookup": "find_docs"}}}
	if err := f.Clone().Put("other", other); err != nil {
		t.Errorf("Put into another group: %v", err)
	}
}
