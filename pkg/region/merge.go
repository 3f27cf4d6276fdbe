package region

import (
	"fmt"
	"maps"
	"slices"

	"github.com/fleetgate/fleetgate/pkg/events"
)

// Conflict is something two regions' logs disagree on, which the merge
// resolved by region name order and reports (never silently).
type Conflict struct {
	// Kind is "backend" (one backend published by two regions), "naming"
	// (two regions publish a naming for the group) or "policy" (the fleet
	// policies differ by digest).
	Kind    string `json:"kind"`
	Group   string `json:"group,omitempty"`
	Backend string `json:"backend,omitempty"`
	// Kept is the region whose version the view uses, Dropped the other.
	Kept    string `json:"kept"`
	Dropped string `json:"dropped"`
}

func (c Conflict) String() string {
	return fmt.Sprintf("%s %s/%s: kept region %s, dropped region %s", c.Kind, c.Group, c.Backend, c.Kept, c.Dropped)
}

// Merge folds the regional states into one view. A group present in
// several regions holds the union of their backends (a backend belongs to
// the region whose controller probes it); a backend, a group naming or the
// fleet policy published by more than one region is taken from the first
// region in name order and reported as a Conflict. Backend and catalog
// generations stay those of their own region's log. The merged state's
// Generation is the vector's Sum (it orders one follower's views; the
// vector names them). Nil states count as empty. Merge is pure.
func Merge(states map[string]*events.State) (*events.State, Vector, []Conflict) {
	out := events.NewState()
	vec := Vector{}
	var conflicts []Conflict
	from := map[string]string{} // group/backend -> region
	namingFrom := map[string]string{}
	policyFrom := ""
	// A group only one region publishes is that region's *Group itself, so
	// a follower's successive views share the groups nothing changed (as
	// the states of one log do, events.State).
	publishers := map[string]int{}
	for _, s := range states {
		if s != nil {
			for name := range s.Groups {
				publishers[name]++
			}
		}
	}
	for _, r := range slices.Sorted(maps.Keys(states)) {
		s := states[r]
		if s == nil {
			vec[r] = 0
			continue
		}
		vec[r] = s.Generation
		if s.Authorization != nil {
			if policyFrom == "" {
				out.Authorization, policyFrom = s.Authorization, r
			} else if s.Authorization.Digest != out.Authorization.Digest {
				conflicts = append(conflicts, Conflict{Kind: "policy", Kept: policyFrom, Dropped: r})
			}
		}
		for _, gname := range s.GroupNames() {
			g := s.Groups[gname]
			if publishers[gname] == 1 {
				out.Groups[gname] = g
				continue
			}
			mg := out.Groups[gname]
			if mg == nil {
				mg = &events.Group{Name: gname, Backends: map[string]*events.Backend{}}
				out.Groups[gname] = mg
			}
			if g.Naming != nil {
				if mg.Naming == nil {
					mg.Naming, namingFrom[gname] = g.Naming, r
				} else {
					conflicts = append(conflicts, Conflict{Kind: "naming", Group: gname, Kept: namingFrom[gname], Dropped: r})
				}
			}
			for _, bname := range g.BackendNames() {
				key := gname + "/" + bname
				if kept, dup := from[key]; dup {
					conflicts = append(conflicts, Conflict{Kind: "backend", Group: gname, Backend: bname, Kept: kept, Dropped: r})
					continue
				}
				from[key] = r
				mg.Backends[bname] = g.Backends[bname]
			}
		}
	}
	out.Generation = vec.Sum()
	out.Regions = maps.Clone(vec)
	return out, vec, conflicts
}
