package planner

import (
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/policy"
)

// Ready is what one step asks of the driver. With Apply set, the driver
// applies it at once and in this order (the policy of a state is in
// force before its view is served), then steps with Input.Applied:
//
//  1. Policy, when PolicyChanged, is the policy in force;
//  2. Backends, when not nil, are the backends calls may reach: pooled
//     connections of the others are pruned;
//  3. View, when not nil, is served: every session is given it and owed
//     Notify, together with what the policy change hides or shows it
//     (one pass over the sessions);
//  4. Generation and Regions are the state at which the served view was
//     found current (the convergence evidence's).
//
// Wake, when not zero, is when to step again if nothing else happens
// first; Ready reports that the edge is ready from now on.
type Ready struct {
	Apply bool
	// State is the state applied.
	State *events.State

	// Policy is the state's policy; OldPolicy the one it replaces.
	Policy, OldPolicy *policy.Policy
	PolicyChanged     bool

	// Backends are the advertised backends of the state's group, set
	// when its group changed (even when no list did).
	Backends map[string]events.BackendConfig
	// Dropped are the definitions of the rebuilt view the go-sdk would
	// refuse (not served; view.Served.Dropped).
	Dropped []string
	// View is the next served view and Prev the one it replaces; nil
	// when no list changed.
	View, Prev *view.Served
	// Change is what changed between Prev and View; Notify is what
	// sessions are told of it (in optimizer mode tools only when the
	// pinned ones changed).
	Change, Notify view.Change
	// EventTime is the oldest timestamp of the group's events the
	// state reflects and no earlier batch did (zero when none).
	EventTime time.Time

	// Generation and Regions (nil on one log) are those of State.
	Generation uint64
	Regions    map[string]uint64

	// Ready: the edge is ready once this is applied (or at once,
	// without Apply).
	Ready bool
	// Wake is when to step again (zero: on the next observation).
	Wake time.Time

	changed  bool // the batch changed a list (opens a window)
	wasReady bool // the edge was ready before the batch
}

// Changed reports whether the batch changed what sessions list.
func (r *Ready) Changed() bool { return r.changed }

// plan makes the Ready that applies st at now.
func (p *Planner) plan(st *events.State, now time.Time) Ready {
	r := Ready{Apply: true, State: st, Generation: st.Generation, Regions: st.Regions,
		Policy: st.Policy(), OldPolicy: p.policy, wasReady: p.ready}
	r.PolicyChanged = r.Policy != r.OldPolicy
	p.policy = r.Policy
	p.applied = st
	if p.caughtUp && !p.ready {
		p.ready, r.Ready = true, true
	}
	g := st.Group(p.o.Group)
	same := g == p.group && p.group != nil
	p.group = g
	if same {
		// The group's backends are unchanged (State shares untouched
		// groups), so the view is too.
		p.takeTime(st)
		return r
	}
	prev := p.served
	next := view.Build(st.Generation, g, p.o.Separator, prev)
	next.Regions = st.Regions
	r.Backends, r.Dropped = next.Backends, next.Dropped
	ch := view.Between(prev, next)
	r.EventTime = p.takeTime(st)
	if ch.None() {
		return r
	}
	notify := ch
	if p.o.Optimizer {
		next.Index = view.NewIndex(next, p.o.Pinned, prev.Index)
		notify.Tools = view.PinnedChanged(prev, next)
	}
	p.served = next
	r.View, r.Prev, r.Change, r.Notify, r.changed = next, prev, ch, notify, true
	return r
}

// takeTime removes the events st reflects and returns the oldest
// timestamp among them (zero when none).
func (p *Planner) takeTime(st *events.State) time.Time {
	var oldest time.Time
	k := 0
	for _, ev := range p.times {
		if !Reflects(st.Generation, st.Regions, ev.Region, ev.Generation) {
			p.times[k] = ev
			k++
			continue
		}
		if oldest.IsZero() || ev.At.Before(oldest) {
			oldest = ev.At
		}
	}
	p.times = p.times[:k]
	return oldest
}

// Reflects reports whether a state of generation gen and regional vector
// regions (nil on a single log) includes generation g of region r's log.
func Reflects(gen uint64, regions map[string]uint64, r string, g uint64) bool {
	if regions == nil {
		return g <= gen
	}
	return g <= regions[r]
}
