package session

import (
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/view"
)

// confirmed is the state at which a served value was last found current:
// its generation and, on merged regional logs, its vector.
type confirmed struct {
	view    *view.Served
	gen     uint64
	regions map[string]uint64 // nil on one log
}

// Confirm records that the current view was found current at generation
// gen (regions: the state's regional vector, nil on one log): the edge
// applied a state, whether or not it changed the view.
func (g *Registry) Confirm(gen uint64, regions map[string]uint64) {
	g.mu.Lock()
	c := &confirmed{view: g.cur, gen: gen, regions: regions}
	g.mu.Unlock()
	g.conf.Store(c)
}

// Confirmed is the generation and regional vector (nil on one log) of
// the state last confirmed (0 and nil before the first).
func (g *Registry) Confirmed() (gen uint64, regions map[string]uint64) {
	if c := g.conf.Load(); c != nil {
		return c.gen, c.regions
	}
	return 0, nil
}

// Evidence is the generation and regional vector the evidence of a
// session served sv names: while sv is the current view and the one last
// confirmed, those of the state confirmed (its generation at least sv's
// own); sv's own otherwise (not yet confirmed, or no longer served).
func (g *Registry) Evidence(sv *view.Served) (gen uint64, regions map[string]uint64) {
	if c := g.conf.Load(); c != nil && c.view == sv && sv == g.Current() {
		regions = c.regions
		if regions == nil {
			regions = sv.Regions
		}
		return max(sv.Gen, c.gen), regions
	}
	return sv.Gen, sv.Regions
}

// signalling records, in s's evidence, the tools list_changed about to be
// written to its stream, for the view s serves (recorded before the
// write: a client may list again before the write returns). The
// returned func takes it back when the write fails. It reads only s and
// the registry.
func (s *Session) signalling() (undo func()) {
	g := s.reg
	sv := s.Served()
	var digest string
	if !g.o.NoDigest {
		digest, _ = sv.ToolDefs()
	}
	gen, regions := g.Evidence(sv)
	return s.rec.Signalling(digest, gen, regions, time.Now())
}
