package naming_test

import (
	"fmt"

	"github.com/fleetgate/fleetgate/pkg/naming"
)

func ExampleResolve() {
	spec := &naming.Spec{Conflicts: naming.Priority, Backends: []naming.BackendRules{
		{Name: "alpha"},
		{Name: "beta", Tools: naming.Rules{Exclude: []string{"delete_*"}, Rename: map[string]string{"search": "find_docs"}}},
	}}
	if err := spec.Check(); err != nil {
		fmt.Println(err)
		return
	}
	res := naming.Resolve(spec, []naming.Catalog{
		{Backend: "alpha", Tools: []string{"echo"}},
		{Backend: "beta", Tools: []string{"echo", "search", "delete_all"}},
	})
	for _, own := range []string{"echo", "search", "delete_all"} {
		name, ok := res.Exposed(naming.Tool, "beta", own)
		fmt.Println("beta", own, "->", name, ok)
	}
	for _, c := range res.Collisions {
		fmt.Printf("%s %q: %s/%s %s as %s (kept by %s)\n", c.Kind, c.Name, c.Backend, c.Original, c.Resolution, c.Exposed, c.KeptBy)
	}
	// Output:
	// beta echo -> beta_echo true
	// beta search -> find_docs true
	// beta delete_all ->  false
	// tool "echo": beta/echo prefixed as beta_echo (kept by alpha)
}
