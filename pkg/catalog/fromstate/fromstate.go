// Package fromstate builds a group's catalog View from the folded event
// state: the one function the controller (GET /v1/groups/{g}/view, /v1/state)
// and every edge (what it serves) call, so that they reach the same exposed
// names and the same digest at every generation.
//
//	v := fromstate.View(state.Group("default"), "_", previous)
//
// The group's naming is the spec of its last naming_changed event; before
// one (a log written by an older controller), the prefix strategy with the
// caller's fallback separator. Names are decided over every backend of the
// group whose catalog is known, advertisable or not (package naming says
// why); only the advertisable ones are served.
package fromstate

import (
	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/naming"
)

// View aggregates group g (nil: empty) into the view its passthrough edges
// serve. fallbackSep is the separator when the group has no naming in the
// state ("" for catalog.DefaultSeparator); prev is the previous
// generation's View or nil (it only saves work).
func View(g *events.Group, fallbackSep string, prev *catalog.View) *catalog.View {
	return catalog.Aggregate(Sources(g), Options(g, fallbackSep, prev))
}

// Sources returns a source per backend of g with a catalog, in name order:
// those not advertisable are marked Reserve.
func Sources(g *events.Group) []catalog.Source {
	var srcs []catalog.Source
	for _, name := range g.BackendNames() {
		b := g.Backends[name]
		if b.Catalog == nil {
			continue
		}
		srcs = append(srcs, catalog.Source{Backend: name, Tools: b.Catalog.Tools,
			Resources: b.Catalog.Resources, Prompts: b.Catalog.Prompts, ResourceTemplates: b.Catalog.ResourceTemplates,
			Reserve: !b.Advertisable})
	}
	return srcs
}

// Options returns the aggregation options of g: its naming spec, or the
// prefix strategy with fallbackSep.
func Options(g *events.Group, fallbackSep string, prev *catalog.View) *catalog.AggregateOptions {
	spec := g.NamingSpec()
	if spec == nil {
		spec = &naming.Spec{Separator: fallbackSep, Conflicts: naming.Prefix}
	}
	return &catalog.AggregateOptions{Separator: fallbackSep, Naming: spec, Previous: prev}
}
