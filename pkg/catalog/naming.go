package catalog

import (
	"fmt"

	"github.com/fleetgate/fleetgate/pkg/naming"
)

// claim is one valid definition of a backend waiting for its exposed name.
type claim struct {
	backend, original string
	exposed           string // set by resolve
	idx               int    // index of the definition in the aggregator's slice
}

// resolve names every claim with naming.Resolve, drops what is not served
// (filtered out, withheld, or of a Reserve source) and records the
// collisions.
func (a *aggregator) resolve(spec *naming.Spec) {
	cats := map[string]*naming.Catalog{}
	var order []string
	cat := func(b string) *naming.Catalog {
		c := cats[b]
		if c == nil {
			c = &naming.Catalog{Backend: b}
			cats[b] = c
			order = append(order, b)
		}
		return c
	}
	for _, c := range a.toolClaims {
		cat(c.backend).Tools = append(cat(c.backend).Tools, c.original)
	}
	for _, c := range a.promptClaim {
		cat(c.backend).Prompts = append(cat(c.backend).Prompts, c.original)
	}
	for _, r := range a.resources {
		cat(r.backend).Resources = append(cat(r.backend).Resources, r.key)
	}
	list := make([]naming.Catalog, 0, len(order))
	for _, b := range order {
		list = append(list, *cats[b])
	}
	res := naming.Resolve(spec, list)
	for _, c := range res.Collisions {
		a.view.Collisions = append(a.view.Collisions, Collision{Kind: Kind(c.Kind), Name: c.Name, Backend: c.Backend,
			Original: c.Original, KeptBy: c.KeptBy, Exposed: c.Exposed, Resolution: string(c.Resolution)})
	}
	a.toolClaims = a.keep(a.toolClaims, naming.Tool, res)
	a.promptClaim = a.keep(a.promptClaim, naming.Prompt, res)
	kept := a.resources[:0]
	for _, r := range a.resources {
		if e, ok := res.Exposed(naming.Resource, r.backend, r.key); ok && !a.reserve[r.backend] {
			r.exposed = e
			kept = append(kept, r)
		}
	}
	a.resources = kept
}

// keep returns the claims that are served, with their exposed names. A
// tool whose exposed name is not a valid tool name is rejected.
func (a *aggregator) keep(claims []claim, k naming.Kind, res *naming.Result) []claim {
	out := claims[:0]
	for _, c := range claims {
		e, ok := res.Exposed(k, c.backend, c.original)
		if !ok || a.reserve[c.backend] {
			continue
		}
		if k == naming.Tool {
			if err := ValidateName(e); err != nil {
				a.reject(c.backend, KindTool, c.original, fmt.Sprintf("exposed %v", err))
				continue
			}
		}
		c.exposed = e
		out = append(out, c)
	}
	return out
}
