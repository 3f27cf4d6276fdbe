package controller

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/config"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/naming"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// namingState reconciles each group's naming spec like the policy:
// desired (the config) against expected (the log).
type namingState struct {
	known    bool // SetNaming was called: until then Ready leaves the log's naming alone
	desired  map[string]*naming.Spec
	expected map[string]*naming.Spec
}

// SetNaming sets the desired naming spec of every group (config.Fleet.Naming
// of each). Ready publishes a naming_changed event for each group whose spec
// differs from the log's, and one without a spec for a group of the log
// that is no longer desired.
func (c *Core) SetNaming(specs map[string]*naming.Spec) {
	c.names.known = true
	c.names.desired = map[string]*naming.Spec{}
	for g, s := range specs {
		c.names.desired[g] = s.Clone()
	}
}

// namingEvents returns the naming events Ready must emit, and records them
// as expected.
func (c *Core) namingEvents(now time.Time) []*eventspb.Event {
	if !c.names.known {
		return nil
	}
	if c.names.expected == nil {
		c.names.expected = map[string]*naming.Spec{}
	}
	var out []*eventspb.Event
	for _, g := range slices.Sorted(maps.Keys(c.names.expected)) {
		if _, ok := c.names.desired[g]; !ok {
			out = append(out, events.NewNamingChanged(now, g, nil))
			delete(c.names.expected, g)
		}
	}
	for _, g := range slices.Sorted(maps.Keys(c.names.desired)) {
		want := c.names.desired[g]
		if !want.Equal(c.names.expected[g]) {
			out = append(out, events.NewNamingChanged(now, g, want))
			c.names.expected[g] = want
		}
	}
	return out
}

// namingOf returns the naming spec of every group of the fleet.
func namingOf(f *config.Fleet) map[string]*naming.Spec {
	out := map[string]*naming.Spec{}
	for _, g := range f.Groups {
		out[g.Name] = f.Naming(g.Name)
	}
	return out
}

// expectedNaming reads the naming of every group of the log's state.
func expectedNaming(s *events.State) map[string]*naming.Spec {
	out := map[string]*naming.Spec{}
	for name, g := range s.Groups {
		if spec := g.NamingSpec(); spec != nil {
			out[name] = spec
		}
	}
	return out
}

// checkManual refuses a fleet whose manual strategy meets a collision in
// the catalogs the log knows (st): a *config.FieldError naming the name and
// both backends. Other strategies settle collisions themselves.
func checkManual(f *config.Fleet, st *events.State) error {
	if f.Aggregation.Conflicts != naming.Manual {
		return nil
	}
	for _, g := range f.Groups {
		spec := f.Naming(g.Name)
		var cats []naming.Catalog
		for _, b := range g.Backends {
			be := st.Backend(g.Name, b.Name)
			if be == nil || be.Catalog == nil {
				continue
			}
			cats = append(cats, catalogNames(b.Name, be.Catalog))
		}
		res := naming.Resolve(spec, cats)
		if len(res.Collisions) == 0 {
			continue
		}
		c := res.Collisions[0]
		others := []string{}
		for _, o := range res.Collisions {
			if o.Kind == c.Kind && o.Name == c.Name && o.Backend != c.Backend {
				others = append(others, o.Backend)
			}
		}
		if c.KeptBy != "" {
			others = append([]string{c.KeptBy}, others...)
		}
		return &config.FieldError{Field: "aggregation.conflicts", Msg: fmt.Sprintf(
			"manual: %s name %q of group %q is asked for by backend %q (%q) and backend %s: rename or exclude one",
			c.Kind, c.Name, g.Name, c.Backend, c.Original, quoteList(others))}
	}
	return nil
}

// catalogNames lists the own names of a backend's catalog as package
// naming takes them (its valid definitions: catalog.Aggregate drops the
// others before naming).
func catalogNames(backend string, c *events.Catalog) naming.Catalog {
	v := catalog.Aggregate([]catalog.Source{{Backend: "x", Tools: c.Tools, Prompts: c.Prompts, Resources: c.Resources}}, nil)
	out := naming.Catalog{Backend: backend}
	for _, t := range v.Tools {
		out.Tools = append(out.Tools, t.Original)
	}
	for _, p := range v.Prompts {
		out.Prompts = append(out.Prompts, p.Original)
	}
	for _, r := range v.Resources {
		out.Resources = append(out.Resources, r.OriginalURI)
	}
	return out
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// CollisionJSON is one contested exposed name of a group in GET /v1/state.
type CollisionJSON struct {
	Kind string `json:"kind"`
	// Name is the exposed name (URI for a resource) asked for.
	Name string `json:"name"`
	// Backends are every backend asking for Name: the one keeping it
	// first, when one does, then the others by name.
	Backends []string `json:"backends"`
	// KeptBy is the backend exposing Name; empty when no one does.
	KeptBy string `json:"kept_by,omitempty"`
	// Resolution is what became of the others: "prefixed", "suffixed" or
	// "withheld", comma-separated when they differ.
	Resolution string `json:"resolution"`
	// Others are the definitions that did not get Name, and what they got.
	Others []CollisionOther `json:"others"`
}

// CollisionOther is one definition that lost a contested name.
type CollisionOther struct {
	Backend    string `json:"backend"`
	Original   string `json:"original"`
	Exposed    string `json:"exposed,omitempty"` // empty: withheld
	Resolution string `json:"resolution"`
}

// collisionsJSON groups a view's collisions by contested name.
func collisionsJSON(cs []catalog.Collision) []CollisionJSON {
	out := []CollisionJSON{}
	for i := 0; i < len(cs); {
		j := i
		for j < len(cs) && cs[j].Kind == cs[i].Kind && cs[j].Name == cs[i].Name {
			j++
		}
		cj := CollisionJSON{Kind: string(cs[i].Kind), Name: cs[i].Name, KeptBy: cs[i].KeptBy, Others: []CollisionOther{}}
		var res []string
		var backends []string
		for _, c := range cs[i:j] {
			cj.Others = append(cj.Others, CollisionOther{Backend: c.Backend, Original: c.Original, Exposed: c.Exposed, Resolution: c.Resolution})
			backends = append(backends, c.Backend)
			res = append(res, c.Resolution)
		}
		slices.Sort(backends)
		backends = slices.Compact(backends)
		if cj.KeptBy != "" && !slices.Contains(backends, cj.KeptBy) {
			backends = append([]string{cj.KeptBy}, backends...)
		} else if cj.KeptBy != "" {
			backends = append([]string{cj.KeptBy}, slices.DeleteFunc(backends, func(b string) bool { return b == cj.KeptBy })...)
		}
		cj.Backends = backends
		slices.Sort(res)
		cj.Resolution = strings.Join(slices.Compact(res), ",")
		out = append(out, cj)
		i = j
	}
	return out
}

// NamingJSON is a group's naming in GET /v1/state: the spec in force and
// the generation of the naming_changed event that set it (0: none yet;
// the prefix strategy applies).
type NamingJSON struct {
	Generation uint64       `json:"generation"`
	Spec       *naming.Spec `json:"spec"`
}
