package events

import (
	"fmt"
	"time"

	"github.com/fleetgate/fleetgate/pkg/naming"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// Naming is a group's naming in a State: the Spec of its last
// naming_changed event and that event's generation. It is immutable.
type Naming struct {
	Spec       *naming.Spec `json:"spec"`
	Generation uint64       `json:"generation"`
}

// NamingSpec returns the group's naming spec, nil before its first
// naming_changed event (a log written before naming events existed: the
// reader then applies its own default, the prefix strategy).
func (g *Group) NamingSpec() *naming.Spec {
	if g == nil || g.Naming == nil {
		return nil
	}
	return g.Naming.Spec
}

// NewNamingChanged builds a naming-changed event for a group: spec is the
// group's naming (the fleet's separator and strategy, its backends in
// config order with their rules), nil when the group left the config.
func NewNamingChanged(at time.Time, group string, spec *naming.Spec) *eventspb.Event {
	ev := envelope(at, group, "")
	nc := &eventspb.NamingChanged{}
	if spec != nil {
		nc.Spec = specProto(spec)
	}
	ev.Kind = &eventspb.Event_NamingChanged{NamingChanged: nc}
	return ev
}

func specProto(s *naming.Spec) *eventspb.NamingSpec {
	p := &eventspb.NamingSpec{Separator: s.Separator, Conflicts: string(s.Conflicts)}
	for _, b := range s.Backends {
		p.Backends = append(p.Backends, &eventspb.BackendNaming{Name: b.Name,
			Tools: rulesProto(b.Tools), Prompts: rulesProto(b.Prompts), Resources: rulesProto(b.Resources)})
	}
	return p
}

func rulesProto(r naming.Rules) *eventspb.NameRules {
	if r.IsZero() {
		return nil
	}
	p := &eventspb.NameRules{Include: r.Include, Exclude: r.Exclude}
	for _, own := range sortedRenames(r.Rename) { // sorted: the same rules encode the same
		p.Rename = append(p.Rename, &eventspb.NameRename{Own: own, Exposed: r.Rename[own]})
	}
	return p
}

// specFromProto decodes and checks a naming spec (naming.Spec.Check: globs,
// bounds, renames).
func specFromProto(p *eventspb.NamingSpec) (*naming.Spec, error) {
	s := &naming.Spec{Separator: p.GetSeparator(), Conflicts: naming.Strategy(p.GetConflicts())}
	for _, b := range p.GetBackends() {
		br := naming.BackendRules{Name: b.GetName()}
		var err error
		for _, r := range []struct {
			dst *naming.Rules
			src *eventspb.NameRules
		}{{&br.Tools, b.GetTools()}, {&br.Prompts, b.GetPrompts()}, {&br.Resources, b.GetResources()}} {
			if *r.dst, err = rulesFromProto(r.src); err != nil {
				return nil, fmt.Errorf("backend %q: %w", b.GetName(), err)
			}
		}
		s.Backends = append(s.Backends, br)
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	return s, nil
}

func rulesFromProto(p *eventspb.NameRules) (naming.Rules, error) {
	r := naming.Rules{}
	if p == nil {
		return r, nil
	}
	if len(p.GetInclude()) > 0 {
		r.Include = p.GetInclude()
	}
	if len(p.GetExclude()) > 0 {
		r.Exclude = p.GetExclude()
	}
	if n := len(p.GetRename()); n > naming.MaxRenames {
		return r, fmt.Errorf("%d renames, limit %d", n, naming.MaxRenames)
	}
	for _, rn := range p.GetRename() {
		if r.Rename == nil {
			r.Rename = map[string]string{}
		}
		if _, dup := r.Rename[rn.GetOwn()]; dup {
			return r, fmt.Errorf("%q is renamed twice", rn.GetOwn())
		}
		r.Rename[rn.GetOwn()] = rn.GetExposed()
	}
	return r, nil
}

// applyNaming folds a naming_changed event. A spec that does not check
// leaves the group's naming as it was, and an error.
func applyNaming(s *State, gen uint64, group string, nc *eventspb.NamingChanged) (*State, error) {
	if group == "" {
		return s.withGeneration(gen), errorf(CodeInvalidEvent, gen, nil, "apply naming_changed: empty group")
	}
	var n *Naming
	if nc.GetSpec() != nil {
		spec, err := specFromProto(nc.GetSpec())
		if err != nil {
			return s.withGeneration(gen), errorf(CodeInvalidEvent, gen, err, "apply naming_changed %s", group)
		}
		n = &Naming{Spec: spec, Generation: gen}
	}
	return s.withNaming(gen, group, n), nil
}

// withNaming returns a copy of s in which the group's naming is n (nil
// forgets it; a group left with neither backends nor naming is removed).
func (s *State) withNaming(gen uint64, group string, n *Naming) *State {
	next := s.withGeneration(gen)
	next.Groups = cloneGroups(s.Groups)
	g := &Group{Name: group, Backends: map[string]*Backend{}}
	if old := s.Groups[group]; old != nil {
		c := *old
		g = &c
	}
	g.Naming = n
	if len(g.Backends) == 0 && n == nil {
		delete(next.Groups, group)
	} else {
		next.Groups[group] = g
	}
	return next
}

func sortedRenames(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortStrings(keys)
	return keys
}
