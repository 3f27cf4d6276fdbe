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

// StatelessView is the view clients of the stateless generation are
// served when it differs from View's: some backend of g lists them other
// definitions (events.Catalog.Stateless) and the edges speak that
// generation to it (its credentials are not per caller: the edges call
// such a backend in the session-based generation for every client, so
// every client sees its session-based lists). Nil when no backend of g
// does, the view being View's for every era.
func StatelessView(g *events.Group, fallbackSep string, prev *catalog.View) *catalog.View {
	if !eraDependent(g) {
		return nil
	}
	return catalog.Aggregate(sources(g, true), Options(g, fallbackSep, prev))
}

// eraDependent reports whether some advertisable backend of g lists the stateless
// generation other definitions, which the edges serve its clients.
func eraDependent(g *events.Group) bool {
	for _, name := range g.BackendNames() {
		if b := g.Backends[name]; b.Advertisable && statelessLists(b) != nil {
			return true
		}
	}
	return false
}

// statelessLists are the stateless generation's lists of b that differ,
// nil for none or for a backend the edges call with per-caller
// credentials (in the session-based generation).
func statelessLists(b *events.Backend) *catalog.EraLists {
	if b.Catalog == nil || b.Catalog.Stateless == nil || b.Catalog.ProtocolVersion == "" || b.Config.Auth.PerCaller() {
		return nil
	}
	return b.Catalog.Stateless
}

// Sources returns a source per backend of g with a catalog, in name order:
// those not advertisable are marked Reserve.
func Sources(g *events.Group) []catalog.Source { return sources(g, false) }

// sources is Sources, of the stateless generation's lists where a backend
// has its own (statelessLists) when stateless is set.
func sources(g *events.Group, stateless bool) []catalog.Source {
	var srcs []catalog.Source
	for _, name := range g.BackendNames() {
		b := g.Backends[name]
		if b.Catalog == nil {
			continue
		}
		src := catalog.Source{Backend: name, Tools: b.Catalog.Tools,
			Resources: b.Catalog.Resources, Prompts: b.Catalog.Prompts, ResourceTemplates: b.Catalog.ResourceTemplates,
			Reserve: !b.Advertisable}
		if e := statelessLists(b); stateless && e != nil {
			src.Tools, src.Resources, src.Prompts, src.ResourceTemplates = e.Tools, e.Resources, e.Prompts, e.ResourceTemplates
		}
		srcs = append(srcs, src)
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
