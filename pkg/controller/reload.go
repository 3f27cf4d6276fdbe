package controller

import (
	"errors"
	"fmt"
	"slices"

	"github.com/fleetgate/fleetgate/pkg/config"
)

// adminChange is a change the admin API made to the running fleet: a
// backend's PUT or DELETE, or the authorization's. The controller keeps
// them as state on top of the config file: a reload applies what changed
// in the file since it was last loaded and then the admin changes again,
// but for those whose target the file changed too (the file, edited
// later, wins). They last until the controller restarts.
type adminChange struct {
	// ref is the backend changed; zero for the authorization.
	ref config.BackendRef
	// what describes the change for the log ("PUT default/alpha").
	what  string
	apply func(*config.Fleet) error
}

func (a adminChange) authorization() bool { return a.ref == config.BackendRef{} }

// remember adds a change, replacing an earlier one of the same target
// (the later one decides); the caller holds c.mu.
func remember(changes []adminChange, a adminChange) []adminChange {
	changes = slices.DeleteFunc(changes, func(o adminChange) bool { return o.ref == a.ref })
	return append(changes, a)
}

// droppedChange is an admin change a reload did not keep, and why.
type droppedChange struct {
	what, why string
}

// rebased is what a reload makes of the running fleet.
type rebased struct {
	fleet   *config.Fleet
	kept    []adminChange
	dropped []droppedChange
}

// rebase is the fleet a reload runs: the new file, with the admin changes
// made since applied again, but for those whose target the file changed
// between old and new (the file wins; the change is dropped, and named).
// An admin change the new file makes impossible (a PUT of a name the file
// now gives another group) is dropped too. A DELETE of a backend the file
// does not have is a no-op, and forgotten.
func rebase(oldFile, newFile *config.Fleet, changes []adminChange) rebased {
	out := rebased{fleet: newFile.Clone()}
	touched := fileChanges(oldFile, newFile)
	authChanged := oldFile.Authorization.Digest() != newFile.Authorization.Digest()
	for _, a := range changes {
		if a.authorization() && authChanged || !a.authorization() && touched[a.ref] {
			out.dropped = append(out.dropped, droppedChange{a.what, "the config file changed it too"})
			continue
		}
		next := out.fleet.Clone()
		if err := a.apply(next); err != nil {
			if !errors.Is(err, config.ErrNotFound) {
				out.dropped = append(out.dropped, droppedChange{a.what, err.Error()})
			}
			continue
		}
		out.fleet = next
		out.kept = append(out.kept, a)
	}
	return out
}

// fileChanges are the backends a config file changed between two loads:
// added, removed, or with another connection or naming rules.
func fileChanges(oldFile, newFile *config.Fleet) map[config.BackendRef]bool {
	out := map[config.BackendRef]bool{}
	m := config.Diff(oldFile, newFile)
	for _, refs := range [][]config.BackendRef{m.Added, m.Removed, m.Updated} {
		for _, r := range refs {
			out[r] = true
		}
	}
	for _, r := range renamed(oldFile, newFile) {
		out[r] = true
	}
	return out
}

// renamed are the backends in both fleets, with the same connection and
// other naming rules.
func renamed(a, b *config.Fleet) []config.BackendRef {
	var out []config.BackendRef
	for _, g := range b.Groups {
		for _, nb := range g.Backends {
			if ob, ok := a.Backend(g.Name, nb.Name); ok && ob.Equal(nb) && !ob.NamingEqual(nb) {
				out = append(out, config.BackendRef{Group: g.Name, Name: nb.Name})
			}
		}
	}
	return out
}

// membershipChange is one line of a reload's log.
type membershipChange struct {
	ref  config.BackendRef
	verb string // "adds", "removes", "changes"
}

// membershipChanges are the backends a reload adds, removes or changes
// (connection or naming rules) in the running fleet.
func membershipChanges(running, next *config.Fleet) []membershipChange {
	m := config.Diff(running, next)
	var out []membershipChange
	for _, r := range m.Added {
		out = append(out, membershipChange{r, "adds"})
	}
	for _, r := range m.Removed {
		out = append(out, membershipChange{r, "removes"})
	}
	updated := append(slices.Clone(m.Updated), renamed(running, next)...)
	slices.SortFunc(updated, func(a, b config.BackendRef) int { return cmpString(a.Group+"/"+a.Name, b.Group+"/"+b.Name) })
	for _, r := range updated {
		out = append(out, membershipChange{r, "changes"})
	}
	return out
}

func refString(r config.BackendRef) string { return fmt.Sprintf("%s/%s", r.Group, r.Name) }
