package naming

import (
	"fmt"
	"slices"
)

// Kind is a namespace of exposed names: tools, prompts and resources
// never collide with each other.
type Kind string

// The kinds of definition.
const (
	Tool     Kind = "tool"
	Prompt   Kind = "prompt"
	Resource Kind = "resource"
)

// Kinds lists the kinds in the order Resolve reports them.
var Kinds = []Kind{Prompt, Resource, Tool}

// Strategy is aggregation.conflicts: how a backend's own names become
// exposed names and how collisions between them are settled.
type Strategy string

// The strategies.
const (
	// Prefix exposes every tool and prompt as <backend><separator><name>.
	Prefix Strategy = "prefix"
	// Priority exposes names as the backends give them; of backends
	// asking for one name, the one listed first keeps it and the others
	// get the prefix.
	Priority Strategy = "priority"
	// Manual exposes names as given; a collision is a configuration
	// error, and one found in a catalog at run time withholds the name
	// from every backend asking for it.
	Manual Strategy = "manual"
)

// DefaultSeparator is the separator of a Spec that sets none.
const DefaultSeparator = "_"

// ParseStrategy reads a strategy name; "" is Prefix.
func ParseStrategy(s string) (Strategy, error) {
	switch Strategy(s) {
	case "":
		return Prefix, nil
	case Prefix, Priority, Manual:
		return Strategy(s), nil
	}
	return "", &RuleError{Msg: fmt.Sprintf("%q is not a conflict strategy (want prefix, priority or manual)", s)}
}

// BackendRules are one backend's rules for each kind.
type BackendRules struct {
	Name      string `json:"name"`
	Tools     Rules  `json:"tools,omitzero"`
	Prompts   Rules  `json:"prompts,omitzero"`
	Resources Rules  `json:"resources,omitzero"`
}

// For returns the rules of kind k.
func (b BackendRules) For(k Kind) Rules {
	switch k {
	case Tool:
		return b.Tools
	case Prompt:
		return b.Prompts
	case Resource:
		return b.Resources
	}
	return Rules{}
}

// Equal reports whether b and o are the same rules.
func (b BackendRules) Equal(o BackendRules) bool {
	return b.Name == o.Name && b.Tools.Equal(o.Tools) && b.Prompts.Equal(o.Prompts) && b.Resources.Equal(o.Resources)
}

// Clone returns a deep copy of b.
func (b BackendRules) Clone() BackendRules {
	return BackendRules{Name: b.Name, Tools: b.Tools.Clone(), Prompts: b.Prompts.Clone(), Resources: b.Resources.Clone()}
}

// Spec is everything that decides the exposed names of one group: the
// separator, the strategy and the group's backends in configuration order
// (the order Priority follows) with their rules. The zero Spec is the
// prefix strategy with DefaultSeparator and backends in name order.
type Spec struct {
	Separator string         `json:"separator"`
	Conflicts Strategy       `json:"conflicts"`
	Backends  []BackendRules `json:"backends,omitempty"`
}

// Equal reports whether s and o decide names alike. A nil Spec equals
// only nil.
func (s *Spec) Equal(o *Spec) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.Separator == o.Separator && s.Conflicts == o.Conflicts &&
		slices.EqualFunc(s.Backends, o.Backends, BackendRules.Equal)
}

// Clone returns a deep copy of s.
func (s *Spec) Clone() *Spec {
	if s == nil {
		return nil
	}
	out := &Spec{Separator: s.Separator, Conflicts: s.Conflicts, Backends: make([]BackendRules, len(s.Backends))}
	for i, b := range s.Backends {
		out.Backends[i] = b.Clone()
	}
	return out
}

// separator is the effective separator.
func (s *Spec) separator() string {
	if s == nil || s.Separator == "" {
		return DefaultSeparator
	}
	return s.Separator
}

func (s *Spec) strategy() Strategy {
	if s == nil || s.Conflicts == "" {
		return Prefix
	}
	return s.Conflicts
}

// ConflictError is a collision found in a configuration: two backends
// whose rules (or, under Manual, whose catalogs) ask for one exposed name.
type ConflictError struct {
	Kind     Kind
	Name     string
	Backends [2]string // in configuration order
	Owns     [2]string // the own names asking for Name
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s name %q is asked for by backend %q (%q) and backend %q (%q)",
		e.Kind, e.Name, e.Backends[0], e.Owns[0], e.Backends[1], e.Owns[1])
}

// Is reports whether target is ErrInvalidRules.
func (e *ConflictError) Is(target error) bool { return target == ErrInvalidRules }

// Check validates s without any catalog: a separator of tool-name
// characters, a known strategy, unique backend names, every backend's
// rules (Rules.Check), and no two renames of the group, in any backends,
// to one exposed name (a *ConflictError naming both). Other errors are
// *RuleError whose Field starts with the backend's index, such as
// "backends[1].tools.include[0]".
func (s *Spec) Check() error {
	if s.Separator != "" {
		if err := CheckName(s.Separator); err != nil {
			return &RuleError{Field: "separator", Msg: err.Error()}
		}
	}
	if _, err := ParseStrategy(string(s.Conflicts)); err != nil {
		return &RuleError{Field: "conflicts", Msg: err.(*RuleError).Msg}
	}
	seen := map[string]bool{}
	type owner struct{ backend, own string }
	renamed := map[Kind]map[string]owner{}
	for i, b := range s.Backends {
		prefix := fmt.Sprintf("backends[%d]", i)
		if b.Name == "" || seen[b.Name] {
			return &RuleError{Field: prefix + ".name", Msg: fmt.Sprintf("backend %q is empty or listed twice", b.Name)}
		}
		seen[b.Name] = true
		for _, k := range Kinds {
			r := b.For(k)
			if err := r.Check(k); err != nil {
				re := err.(*RuleError)
				return &RuleError{Field: prefix + "." + plural(k) + "." + re.Field, Msg: re.Msg}
			}
			if renamed[k] == nil {
				renamed[k] = map[string]owner{}
			}
			for _, own := range sortedKeys(r.Rename) {
				exp := r.Rename[own]
				if prev, dup := renamed[k][exp]; dup {
					return &ConflictError{Kind: k, Name: exp, Backends: [2]string{prev.backend, b.Name}, Owns: [2]string{prev.own, own}}
				}
				renamed[k][exp] = owner{b.Name, own}
			}
		}
	}
	return nil
}

// plural names a kind's section: tools, prompts, resources.
func plural(k Kind) string { return string(k) + "s" }
