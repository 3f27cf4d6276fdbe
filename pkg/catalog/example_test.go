package catalog_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fleetgate/fleetgate/pkg/catalog"
)

func ExampleAggregate() {
	alpha := []json.RawMessage{
		json.RawMessage(`{"name":"echo","inputSchema":{"type":"object"}}`),
	}
	beta := []json.RawMessage{
		json.RawMessage(`{"name":"echo","description":"louder","inputSchema":{"type":"object"}}`),
	}
	view := catalog.Aggregate([]catalog.Source{
		{Backend: "beta", Tools: beta},
		{Backend: "alpha", Tools: alpha},
	}, nil)
	for _, t := range view.Tools {
		fmt.Printf("%s -> %s/%s %s\n", t.Exposed, t.Backend, t.Original, t.Def)
	}
	entry, _ := view.Tool("beta_echo")
	fmt.Println("route beta_echo to", entry.Backend, "as", entry.Original)
	// Output:
	// alpha_echo -> alpha/echo {"name":"alpha_echo","inputSchema":{"type":"object"}}
	// beta_echo -> beta/echo {"name":"beta_echo","description":"louder","inputSchema":{"type":"object"}}
	// route beta_echo to beta as echo
}

func ExampleAggregate_collision() {
	tool := func(name string) json.RawMessage {
		return json.RawMessage(`{"name":"` + name + `","inputSchema":{"type":"object"}}`)
	}
	view := catalog.Aggregate([]catalog.Source{
		{Backend: "a_b", Tools: []json.RawMessage{tool("c")}},
		{Backend: "a", Tools: []json.RawMessage{tool("b_c")}},
	}, nil)
	for _, c := range view.Collisions {
		fmt.Printf("%s/%s wanted %s (kept by %s), served as %s\n", c.Backend, c.Original, c.Name, c.KeptBy, c.Exposed)
	}
	// Output:
	// a_b/c wanted a_b_c (kept by a), served as a_b_c_2
}

func ExampleDigest() {
	d, err := catalog.Digest([]json.RawMessage{
		json.RawMessage(`{"name":"a","inputSchema":{"type":"object"},"_meta":{"ignored":true}}`),
	})
	fmt.Println(d, err)
	// Output:
	// sha256:6466400fd2e7d487fd5604f2628816b750b85b429c2064a9d991d7060d80833b <nil>
}

func ExampleDiff() {
	src := func(desc string) []catalog.Source {
		return []catalog.Source{{Backend: "alpha", Tools: []json.RawMessage{
			json.RawMessage(`{"name":"search","description":"` + desc + `","inputSchema":{"type":"object"}}`),
		}}}
	}
	before := catalog.Aggregate(src("v1"), nil)
	after := catalog.Aggregate(src("v2"), nil)
	d := catalog.Diff(before, after)
	fmt.Println(d.Changed, d.Empty(), catalog.Diff(after, after).Empty())
	// Output:
	// [alpha_search] false true
}

func ExampleValidateTool() {
	_, err := catalog.ValidateTool(json.RawMessage(`{"name":"x","inputSchema":{"type":"string"}}`))
	var invalid *catalog.InvalidToolError
	fmt.Println(errors.Is(err, catalog.ErrInvalidTool), errors.As(err, &invalid), invalid.Reason)
	// Output:
	// true true inputSchema: type is "string", want "object"
}
