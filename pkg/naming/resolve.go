package naming

import (
	"cmp"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Catalog is the own names of one backend's definitions: tool names,
// prompt names and resource URIs. Duplicates are ignored.
type Catalog struct {
	Backend   string
	Tools     []string
	Prompts   []string
	Resources []string
}

func (c Catalog) names(k Kind) []string {
	switch k {
	case Tool:
		return c.Tools
	case Prompt:
		return c.Prompts
	case Resource:
		return c.Resources
	}
	return nil
}

// Resolution says what became of a definition that did not get the name
// it asked for.
type Resolution string

// The resolutions.
const (
	// Prefixed: exposed as <backend><separator><own> (Priority).
	Prefixed Resolution = "prefixed"
	// Suffixed: exposed as the name asked for, cut to fit, plus "_<n>".
	Suffixed Resolution = "suffixed"
	// Withheld: not exposed at all (Manual, and resources, whose URI has
	// no fallback).
	Withheld Resolution = "withheld"
)

// Collision reports one definition that did not get the exposed name it
// asked for first.
type Collision struct {
	Kind Kind `json:"kind"`
	// Name is the exposed name (URI for a resource) asked for.
	Name string `json:"name"`
	// Backend and Original identify the definition: its backend and own
	// name (URI for a resource).
	Backend  string `json:"backend"`
	Original string `json:"original"`
	// KeptBy is the backend exposing Name; empty when no one does (a
	// name too long, or withheld from every backend under Manual).
	KeptBy string `json:"kept_by,omitempty"`
	// Exposed is the name the definition got instead; empty when
	// Withheld.
	Exposed    string     `json:"exposed,omitempty"`
	Resolution Resolution `json:"resolution"`
}

// Result is the outcome of Resolve: the exposed name of every definition
// that is exposed, and the collisions. It is immutable.
type Result struct {
	names map[key]string
	// Order is the backends in the order names were decided: the Spec's,
	// then backends it does not list, by name.
	Order []string
	// Collisions are sorted by Kind, Name, Backend, Original.
	Collisions []Collision
}

type key struct {
	kind         Kind
	backend, own string
}

// Exposed returns the exposed name (URI for a resource) of a backend's
// definition, and false when it is not exposed: filtered out by the
// backend's rules, withheld after a collision, or not in the catalogs.
func (r *Result) Exposed(k Kind, backend, own string) (string, bool) {
	if r == nil {
		return "", false
	}
	n, ok := r.names[key{k, backend, own}]
	return n, ok
}

// claim is one definition asking for a name.
type claim struct {
	pos          int
	backend, own string
	// cands are the names asked for in turn, one per tier: tier 0 is a
	// rename, tier 1 the strategy's name, tier 2 Priority's prefixed one.
	cands [3]string
	// got is the name given; lost the first name asked for and not got,
	// keptBy who kept it, res how the claim ended.
	got, lost, keptBy string
	lastAsked         string
	res               Resolution
	done              bool
}

// Resolve decides the exposed names of a group: for each kind, from the
// catalogs of the group's backends, the Spec's rules and strategy. It is a
// pure function of its inputs, and of the set of own names of each backend
// (their order and duplicates do not matter); catalogs naming one backend
// are merged. A nil Spec is the zero Spec.
//
// Every definition the backend's Rules allow asks for names in tiers:
//
//	tier 0  its rename target, if the rules rename it
//	tier 1  Prefix: <backend><sep><own>; Priority, Manual: <own>
//	        (resources: the URI, whatever the strategy)
//	tier 2  Priority only: <backend><sep><own>
//
// Tiers are settled in order, so a name given in an earlier tier is never
// taken away by a later one. Within a tier, the claim whose backend comes
// first in Result.Order, then whose own name sorts first, gets a contested
// name; under Manual a contested name goes to no one. A tool or prompt
// name longer than MaxNameLen is given to no one. A claim left without a
// name is then Withheld under Manual and for resources, and otherwise
// Suffixed: the last name it asked for, cut to fit, plus "_<n>" for the
// smallest n >= 2 no one holds, in the same order. Each claim that did not
// get its first name is one Collision.
func Resolve(spec *Spec, catalogs []Catalog) *Result {
	order, rules, cats := arrange(spec, catalogs)
	res := &Result{names: map[key]string{}, Order: order}
	sep, strat := spec.separator(), spec.strategy()
	for _, k := range Kinds {
		claims := make([]*claim, 0)
		for pos, b := range order {
			r := rules[b].For(k)
			for _, own := range cats[b][k] {
				if !r.Allows(own) {
					continue
				}
				c := &claim{pos: pos, backend: b, own: own}
				if to, ok := r.Rename[own]; ok {
					c.cands[0] = to
				} else if k == Resource {
					c.cands[1] = own
				} else {
					switch strat {
					case Prefix:
						c.cands[1] = b + sep + own
					case Priority:
						c.cands[1], c.cands[2] = own, b+sep+own
					default:
						c.cands[1] = own
					}
				}
				claims = append(claims, c)
			}
		}
		res.Collisions = append(res.Collisions, settle(k, strat, claims, res.names)...)
	}
	slices.SortFunc(res.Collisions, func(x, y Collision) int {
		return cmp.Or(cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.Name, y.Name),
			cmp.Compare(x.Backend, y.Backend), cmp.Compare(x.Original, y.Original))
	})
	return res
}

// arrange orders the backends (the Spec's first, then the others by name),
// merges their catalogs into sorted, deduplicated name lists, and indexes
// their rules.
func arrange(spec *Spec, catalogs []Catalog) ([]string, map[string]BackendRules, map[string]map[Kind][]string) {
	rules := map[string]BackendRules{}
	var order []string
	if spec != nil {
		for _, b := range spec.Backends {
			if _, dup := rules[b.Name]; !dup {
				rules[b.Name] = b
				order = append(order, b.Name)
			}
		}
	}
	cats := map[string]map[Kind][]string{}
	var extra []string
	for _, c := range catalogs {
		m := cats[c.Backend]
		if m == nil {
			m = map[Kind][]string{}
			cats[c.Backend] = m
			if _, listed := rules[c.Backend]; !listed {
				extra = append(extra, c.Backend)
			}
		}
		for _, k := range Kinds {
			m[k] = append(m[k], c.names(k)...)
		}
	}
	for _, m := range cats {
		for k, names := range m {
			slices.Sort(names)
			m[k] = slices.Compact(names)
		}
	}
	slices.Sort(extra)
	order = append(order, extra...)
	return order, rules, cats
}

// settle gives names to the claims of one kind, records them in names and
// returns the collisions.
func settle(k Kind, strat Strategy, claims []*claim, names map[key]string) []Collision {
	taken := map[string]string{} // name -> backend holding it ("" for withheld)
	tooLong := func(n string) bool { return k != Resource && len(n) > MaxNameLen }
	for tier := range 3 {
		var askers []*claim
		byName := map[string][]*claim{}
		for _, c := range claims {
			if c.done || c.cands[tier] == "" {
				continue
			}
			n := c.cands[tier]
			if byName[n] == nil {
				askers = append(askers, c)
			}
			byName[n] = append(byName[n], c)
			c.lastAsked = n
		}
		for _, first := range askers {
			n := first.cands[tier]
			group := byName[n]
			holder, held := taken[n]
			switch {
			case held || tooLong(n):
				for _, c := range group {
					c.lose(n, holder)
				}
			case strat == Manual && len(group) > 1:
				taken[n] = ""
				for _, c := range group {
					c.lose(n, "")
				}
			default:
				taken[n] = first.backend
				first.win(n)
				for _, c := range group[1:] {
					c.lose(n, first.backend)
				}
			}
		}
	}
	var out []Collision
	for _, c := range claims {
		if !c.done {
			if strat == Manual || k == Resource {
				c.res = Withheld
			} else {
				c.got, c.res = suffixed(c.lastAsked, taken), Suffixed
				taken[c.got] = c.backend
			}
			c.done = true
		}
		if c.got != "" {
			names[key{k, c.backend, c.own}] = c.got
		}
		if c.lost != "" {
			out = append(out, Collision{Kind: k, Name: c.lost, Backend: c.backend, Original: c.own,
				KeptBy: c.keptBy, Exposed: c.got, Resolution: c.res})
		}
	}
	return out
}

func (c *claim) win(n string) {
	c.got, c.done = n, true
	if c.lost != "" {
		c.res = Prefixed // only tier 2 follows a loss
	}
}

func (c *claim) lose(n, keptBy string) {
	if c.lost == "" {
		c.lost, c.keptBy = n, keptBy
	}
}

// suffixed returns base cut to fit plus "_<n>" for the smallest n >= 2
// not in taken.
func suffixed(base string, taken map[string]string) string {
	for n := 2; ; n++ {
		s := "_" + strconv.Itoa(n)
		name := truncateUTF8(base, MaxNameLen-len(s)) + s
		if _, ok := taken[name]; !ok {
			return name
		}
	}
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
