package config

import (
	"cmp"
	"slices"
)

// BackendRef names a backend within its group.
type BackendRef struct {
	Group string
	Name  string
}

// Membership is the difference between two fleets' backends, each list
// sorted by group, then name.
type Membership struct {
	// Added backends are in the new fleet only.
	Added []BackendRef
	// Removed backends are in the old fleet only. A backend moved to
	// another group is removed from the old group and added to the new one.
	Removed []BackendRef
	// Updated backends are in both, with a different URL, transport,
	// headers or allow_link_local.
	Updated []BackendRef
}

// Empty reports whether the membership has no change.
func (m Membership) Empty() bool {
	return len(m.Added) == 0 && len(m.Removed) == 0 && len(m.Updated) == 0
}

// Diff compares the backends of two fleets, as a SIGHUP reload or an admin
// PUT/DELETE does to know which probers to start, stop or restart. A nil
// fleet has no backends. Health, aggregation and pinned tools are not
// membership and are not compared.
func Diff(old, new *Fleet) Membership {
	before, after := backendsByRef(old), backendsByRef(new)
	var m Membership
	for ref, b := range after {
		prev, ok := before[ref]
		switch {
		case !ok:
			m.Added = append(m.Added, ref)
		case !prev.Equal(b):
			m.Updated = append(m.Updated, ref)
		}
	}
	for ref := range before {
		if _, ok := after[ref]; !ok {
			m.Removed = append(m.Removed, ref)
		}
	}
	for _, refs := range [][]BackendRef{m.Added, m.Removed, m.Updated} {
		slices.SortFunc(refs, compareRefs)
	}
	return m
}

func compareRefs(a, b BackendRef) int {
	return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Name, b.Name))
}

func backendsByRef(f *Fleet) map[BackendRef]Backend {
	out := map[BackendRef]Backend{}
	if f == nil {
		return out
	}
	for _, g := range f.Groups {
		for _, b := range g.Backends {
			out[BackendRef{Group: g.Name, Name: b.Name}] = b
		}
	}
	return out
}
