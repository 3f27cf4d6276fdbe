package catalog

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/naming"
)

func TestAggregateNaming(t *testing.T) {
	tool := func(name string) json.RawMessage {
		return json.RawMessage(`{"name":"` + name + `","inputSchema":{"type":"object"}}`)
	}
	res := func(uri, name string) json.RawMessage {
		return json.RawMessage(`{"uri":"` + uri + `","name":"` + name + `"}`)
	}
	srcs := []Source{
		{Backend: "alpha", Tools: []json.RawMessage{tool("echo"), tool("search")}, Resources: []json.RawMessage{res("file:///a", "a")}},
		{Backend: "beta", Tools: []json.RawMessage{tool("echo"), tool("delete_all"), tool("lookup")},
			Resources: []json.RawMessage{res("file:///b", "b")}},
		{Backend: "gamma", Reserve: true, Tools: []json.RawMessage{tool("search")}},
	}
	spec := &naming.Spec{Conflicts: naming.Priority, Backends: []naming.BackendRules{
		{Name: "gamma"},
		{Name: "alpha"},
		{Name: "beta", Tools: naming.Rules{Exclude: []string{"delete_*"}, Rename: map[string]string{"lookup": "find_docs"}},
			Resources: naming.Rules{Rename: map[string]string{"file:///b": "docs://b"}}},
	}}
	v := Aggregate(srcs, &AggregateOptions{Naming: spec})
	checkView(t, v)
	var names []string
	for _, te := range v.Tools {
		names = append(names, te.Exposed+"="+te.Backend+"/"+te.Original)
	}
	// gamma is reserved: its search keeps the bare name, served by no one,
	// and alpha's search is prefixed.
	if got, want := strings.Join(names, " "), "alpha_search=alpha/search beta_echo=beta/echo echo=alpha/echo find_docs=beta/lookup"; got != want {
		t.Errorf("tools %s, want %s", got, want)
	}
	e, _ := v.Tool("find_docs")
	if !strings.Contains(string(e.Def), `"name":"find_docs"`) {
		t.Errorf("def %s", e.Def)
	}
	r, ok := v.Resource("docs://b")
	if !ok || r.OriginalURI != "file:///b" || r.Exposed != "b" || !strings.Contains(string(r.Def), `"uri":"docs://b"`) {
		t.Errorf("renamed resource %+v, %v", r, ok)
	}
	if len(v.Collisions) != 2 || v.Collisions[0].Name != "echo" || v.Collisions[1].Name != "search" ||
		v.Collisions[1].KeptBy != "gamma" || v.Collisions[1].Resolution != "prefixed" {
		t.Errorf("collisions %+v", v.Collisions)
	}
}
