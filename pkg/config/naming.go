package config

import (
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/fleetgate/fleetgate/pkg/naming"
)

// A backend's naming rules (INTERFACE.md, Naming):
//
//	tools:                          # also prompts: and resources: (by URI)
//	  include: ["read_*"]           # path.Match globs on the backend's own names; absent = all
//	  exclude: ["delete_*"]
//	  rename: {search: find_docs}   # own name -> exposed name; wins over the strategy
//
// Lists are bounded (naming.MaxPatterns patterns of naming.MaxPatternLen
// bytes, naming.MaxRenames renames); a malformed glob, a bad exposed name,
// and two renames in one group asking for one exposed name are errors at
// the line of the offending entry, naming the backend(s).

// ruleKinds are a backend's rule sections and their kinds.
var ruleKinds = []struct {
	key  string
	kind naming.Kind
}{{"tools", naming.Tool}, {"prompts", naming.Prompt}, {"resources", naming.Resource}}

// renameSite is where a rename of a group was given, to report a second
// rename to the same exposed name.
type renameSite struct {
	backend, own string
	line         int
	path         string
}

// groupRenames tracks the exposed names renames ask for in one group.
type groupRenames map[naming.Kind]map[string]renameSite

// rules decodes one backend's tools, prompts and resources sections.
func (d *decoder) rules(bm map[string]entry, backend string, taken groupRenames) (tools, prompts, resources naming.Rules, err error) {
	out := [3]naming.Rules{}
	for i, rk := range ruleKinds {
		e, ok := bm[rk.key]
		if !ok || isNull(e.val) {
			continue
		}
		if out[i], err = d.ruleSet(e, rk.kind, backend, taken); err != nil {
			return
		}
	}
	return out[0], out[1], out[2], nil
}

func (d *decoder) ruleSet(e entry, kind naming.Kind, backend string, taken groupRenames) (naming.Rules, error) {
	var r naming.Rules
	m, err := d.mapping(e.val, e.path, "include", "exclude", "rename")
	if err != nil {
		return r, err
	}
	if r.Include, err = d.patterns(m["include"], backend); err != nil {
		return r, err
	}
	if r.Exclude, err = d.patterns(m["exclude"], backend); err != nil {
		return r, err
	}
	re, ok := m["rename"]
	if !ok || isNull(re.val) {
		return r, nil
	}
	if re.val.Kind != yaml.MappingNode {
		return r, d.errorf(re.line(), re.path, "backend %q: want a mapping of own names to exposed names, got %s", backend, kindName(re.val))
	}
	if n := len(re.val.Content) / 2; n > naming.MaxRenames {
		return r, d.errorf(re.line(), re.path, "backend %q: %d renames, limit %d", backend, n, naming.MaxRenames)
	}
	r.Rename = map[string]string{}
	if taken[kind] == nil {
		taken[kind] = map[string]renameSite{}
	}
	for i := 0; i+1 < len(re.val.Content); i += 2 {
		k, v := deref(re.val.Content[i]), deref(re.val.Content[i+1])
		own, err := d.str(entry{key: k, val: k, path: re.path})
		if err != nil {
			return r, err
		}
		path := join(re.path, own)
		if _, dup := r.Rename[own]; dup {
			return r, d.errorf(k.Line, path, "backend %q: %q is renamed twice", backend, own)
		}
		exp, err := d.str(entry{key: k, val: v, path: path})
		if err != nil {
			return r, err
		}
		if own == "" || len(own) > naming.MaxRenameLen {
			return r, d.errorf(k.Line, path, "backend %q: own name of %d bytes, want 1 to %d", backend, len(own), naming.MaxRenameLen)
		}
		if err := naming.CheckExposed(kind, exp); err != nil {
			return r, d.errorf(k.Line, path, "backend %q: exposed name %q: %v", backend, exp, err)
		}
		if prev, dup := taken[kind][exp]; dup {
			return r, d.errorf(k.Line, path, "backend %q renames %q to %q, which backend %q already renames %q to at line %d (%s)",
				backend, own, exp, prev.backend, prev.own, prev.line, prev.path)
		}
		taken[kind][exp] = renameSite{backend: backend, own: own, line: k.Line, path: path}
		r.Rename[own] = exp
	}
	if len(r.Rename) == 0 {
		r.Rename = nil
	}
	return r, nil
}

// patterns reads an include or exclude list of globs.
func (d *decoder) patterns(e entry, backend string) ([]string, error) {
	if e.val == nil || isNull(e.val) {
		return nil, nil
	}
	nodes, err := d.sequence(e)
	if err != nil {
		return nil, err
	}
	if len(nodes) > naming.MaxPatterns {
		return nil, d.errorf(e.line(), e.path, "backend %q: %d patterns, limit %d", backend, len(nodes), naming.MaxPatterns)
	}
	out := make([]string, 0, len(nodes))
	for i, n := range nodes {
		pe := entry{val: n, path: index(e.path, i)}
		p, err := d.str(pe)
		if err != nil {
			return nil, err
		}
		if err := naming.CheckPattern(p); err != nil {
			return nil, d.errorf(n.Line, pe.path, "backend %q: %v", backend, err)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// conflicts reads aggregation.conflicts.
func (d *decoder) conflicts(e entry) (naming.Strategy, error) {
	s, err := d.str(e)
	if err != nil {
		return "", err
	}
	st, err := naming.ParseStrategy(s)
	if err != nil {
		return "", d.errorf(e.line(), e.path, "%s", err.Error())
	}
	return st, nil
}

// Naming returns the naming spec of the group: the aggregation section's
// separator and strategy and the group's backends in config order with
// their rules. Nil for an unknown group.
func (f *Fleet) Naming(group string) *naming.Spec {
	g, ok := f.Group(group)
	if !ok {
		return nil
	}
	s := &naming.Spec{Separator: f.Aggregation.Separator, Conflicts: f.Aggregation.Conflicts,
		Backends: make([]naming.BackendRules, 0, len(g.Backends))}
	if s.Conflicts == "" {
		s.Conflicts = naming.Prefix
	}
	for _, b := range g.Backends {
		s.Backends = append(s.Backends, naming.BackendRules{Name: b.Name,
			Tools: b.Tools.Clone(), Prompts: b.Prompts.Clone(), Resources: b.Resources.Clone()})
	}
	return s
}

// checkRules checks a backend's rules given by the admin API, and that no
// rename asks for an exposed name another backend of the group (others)
// renames to. It returns the field ("tools.include[0]", "prompts.rename.x",
// ...) and the message.
func checkRules(b Backend, others []Backend) (string, string) {
	spec := &naming.Spec{}
	for _, o := range others {
		if o.Name != b.Name {
			spec.Backends = append(spec.Backends, naming.BackendRules{Name: o.Name, Tools: o.Tools, Prompts: o.Prompts, Resources: o.Resources})
		}
	}
	for _, rk := range ruleKinds {
		r := ruleOf(b, rk.kind)
		if err := r.Check(rk.kind); err != nil {
			var re *naming.RuleError
			if errors.As(err, &re) {
				return rk.key + "." + re.Field, re.Msg
			}
			return rk.key, err.Error()
		}
	}
	spec.Backends = append(spec.Backends, naming.BackendRules{Name: b.Name, Tools: b.Tools, Prompts: b.Prompts, Resources: b.Resources})
	var ce *naming.ConflictError
	if err := spec.Check(); errors.As(err, &ce) {
		return string(ce.Kind) + "s.rename." + ce.Owns[1], fmt.Sprintf("renames %q to %q, which backend %q already renames %q to",
			ce.Owns[1], ce.Name, ce.Backends[0], ce.Owns[0])
	}
	return "", ""
}

func ruleOf(b Backend, k naming.Kind) naming.Rules {
	switch k {
	case naming.Tool:
		return b.Tools
	case naming.Prompt:
		return b.Prompts
	}
	return b.Resources
}
