package controller

import (
	"context"
	"slices"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/catalog/fromstate"
	"github.com/fleetgate/fleetgate/pkg/events"
)

// viewCache holds the last view built per group, keyed by the group's
// state value: a State shares the groups an event did not touch, so an
// unchanged *events.Group means an unchanged view.
type viewCache struct {
	group *events.Group
	sep   string
	view  *catalog.View
	// stateless is the view of the stateless generation where it
	// differs (fromstate.StatelessView), nil otherwise.
	stateless *catalog.View
}

// groupView returns the view of the named group at state s (fromstate.View,
// as the edges build it), from the cache when the group did not change.
func (c *Controller) groupView(s *events.State, group string) *catalog.View {
	v, _ := c.groupViews(s, group)
	return v
}

// groupViews is groupView and the view of the stateless generation where
// it differs (nil otherwise), as the edges build them.
func (c *Controller) groupViews(s *events.State, group string) (v, stateless *catalog.View) {
	g := s.Group(group)
	sep := c.Fleet().Aggregation.Separator // the fallback of a log without naming events
	c.mu.Lock()
	if c.views == nil {
		c.views = map[string]viewCache{}
	}
	cached, ok := c.views[group]
	c.mu.Unlock()
	if ok && g != nil && cached.group == g && cached.sep == sep {
		return cached.view, cached.stateless
	}
	var prev, prevStateless *catalog.View
	if ok {
		prev, prevStateless = cached.view, cached.stateless
	}
	v = GroupView(g, sep, prev)
	if g != nil {
		if prevStateless == nil {
			prevStateless = v
		}
		stateless = fromstate.StatelessView(g, sep, prevStateless)
	}
	c.mu.Lock()
	if g == nil {
		delete(c.views, group)
	} else {
		c.views[group] = viewCache{group: g, sep: sep, view: v, stateless: stateless}
	}
	c.mu.Unlock()
	return v, stateless
}

// logCollisions follows the event log and logs, at warn, every exposed
// name collision of every group each time a group's set of collisions
// changes: no collision is ever silent. It returns when ctx ends.
func (c *Controller) logCollisions(ctx context.Context) error {
	changed, stop := c.reader.Watch()
	defer stop()
	last := map[string][]catalog.Collision{}
	for {
		s := c.reader.State()
		for _, name := range s.GroupNames() {
			cs := c.groupView(s, name).Collisions
			if slices.Equal(cs, last[name]) {
				continue
			}
			last[name] = cs
			for _, col := range cs {
				c.zl.Warn().Str("group", name).Uint64("generation", s.Generation).Str("kind", string(col.Kind)).
					Str("name", col.Name).Str("backend", col.Backend).Str("original", col.Original).
					Str("kept_by", col.KeptBy).Str("exposed_as", col.Exposed).Str("resolution", col.Resolution).
					Msg("exposed name collision")
			}
		}
		for name := range last {
			if s.Group(name) == nil {
				delete(last, name)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}
