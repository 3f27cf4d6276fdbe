package planner

import (
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/fleetgate/fleetgate/pkg/edge/view"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/health"
	"github.com/fleetgate/fleetgate/pkg/policy"
)

// Options configure a Planner. Initial is required.
type Options struct {
	Group     string // the group served
	Separator string // of exposed names (view.Build)
	// Coalesce is the pacing window of batches (health.Burst).
	Coalesce time.Duration
	// Optimizer: each new view gets its tool index, and sessions are
	// told of tools only when the pinned ones changed.
	Optimizer bool
	Pinned    []string
	// Initial is the view served before the first state (view.Empty,
	// with its index in optimizer mode).
	Initial *view.Served
}

// Input is what the driver observed since the previous step.
type Input struct {
	// State is the source's state now (nil before it has one). The
	// planner is level-based: it plans from the newest state it was
	// given, whatever came in between.
	State *events.State
	// CaughtUp: the source has caught up with its log(s).
	CaughtUp bool
	// Events are the group's events read since the previous step, for
	// the event-to-notification latency.
	Events []Event
	// Applied: the driver applied the last Ready that had Apply set
	// (each such Ready is applied, then stepped with Applied, before any
	// other step).
	Applied bool
}

// MaxEvents bounds the events a planner keeps between two batches; more
// are not noted (the oldest timestamps are kept).
const MaxEvents = 4096

// Event is one event of the group read from a log: region ("" on a
// single log), its generation in that log, and its stream timestamp.
type Event struct {
	Region     string
	Generation uint64
	At         time.Time
	// Trace is the trace context the event carried (not valid when the
	// edge traces nothing or the event had none): the batch that applies
	// the event is its child (Ready.Traced).
	Trace trace.SpanContext
}

// Planner is the edge's change path as a pure state machine: the driver
// steps it with what it observed and the time, and gets back a Ready
// saying what to apply and when to step again. It never reads a clock,
// sleeps or starts a goroutine, and is not safe for concurrent use.
//
// Rules (those of the edge's resync loop, docs in package edge):
//   - a new state starts a batch, paced by a health.Burst: the leading
//     batch after a quiet period is applied at once and opens a
//     Coalesce window; a batch signalled inside the window waits for
//     its end and applies the newest state then;
//   - a batch whose first state withdraws a backend the served view
//     advertises is urgent: applied at once, even inside a window (its
//     urgency is judged once, when the batch starts, so a flapping
//     backend still costs at most two batches per window plus one);
//   - the batch that makes the edge ready (the first applied once the
//     source caught up) opens no window;
//   - the policy of a state is part of its batch, with its view.
type Planner struct {
	o    Options
	pace *health.Burst

	served  *view.Served   // the view sessions are given
	group   *events.Group  // of the last applied state (nil before)
	applied *events.State  // the last applied state
	policy  *policy.Policy // in force
	times   []Event        // events not yet reflected by an applied state

	waiting  bool      // a batch waits for due
	due      time.Time // when the waiting batch is applied
	inflight *Ready    // the Ready being applied, until Input.Applied
	caughtUp bool
	ready    bool
}

// New returns a Planner serving o.Initial, with no window open.
func New(o *Options) *Planner {
	return &Planner{o: *o, pace: health.NewBurst(o.Coalesce), served: o.Initial}
}

// Served is the view the planner last gave the sessions.
func (p *Planner) Served() *view.Served { return p.served }

// IsReady reports whether a state was applied once the source caught up.
func (p *Planner) IsReady() bool { return p.ready }

// Step takes what the driver observed at now and returns what to do.
func (p *Planner) Step(now time.Time, in Input) Ready {
	late := p.note(in.Events)
	r := p.step(now, in)
	r.Late = late
	return r
}

// note keeps evs for the batch that will reflect them. An event the
// last applied state reflects already (noted after its state was
// applied) is kept for none: its time would be charged to a later batch;
// the traced ones are returned (Ready.Late).
func (p *Planner) note(evs []Event) (late []Event) {
	for _, ev := range evs {
		switch {
		case p.applied != nil && Reflects(p.applied.Generation, p.applied.Regions, ev.Region, ev.Generation):
			if ev.Trace.IsValid() {
				late = append(late, ev)
			}
		case len(p.times) < MaxEvents:
			p.times = append(p.times, ev)
		}
	}
	return late
}

func (p *Planner) step(now time.Time, in Input) Ready {
	p.caughtUp = p.caughtUp || in.CaughtUp
	if in.Applied && p.inflight != nil {
		r := p.inflight
		p.inflight = nil
		p.pace.Applied(now, r.changed && r.wasReady)
	}
	if p.inflight != nil {
		return Ready{} // the driver has not applied the last one yet
	}
	st := in.State
	if !p.waiting {
		if st == nil || st == p.applied {
			if p.caughtUp && !p.ready && p.applied != nil {
				p.ready = true
				return Ready{Ready: true}
			}
			return Ready{}
		}
		p.due, p.waiting = p.pace.Due(now, p.withdraws(st)), true
	}
	if now.Before(p.due) {
		return Ready{Wake: p.due}
	}
	p.waiting = false
	if st == nil { // a batch started, then the state went away: not expected
		return Ready{}
	}
	r := p.plan(st, now)
	p.inflight = &r
	return r
}

// withdraws reports whether st takes away (down or removed) a backend of
// the served group that the last applied state advertised.
func (p *Planner) withdraws(st *events.State) bool {
	if p.group == nil {
		return false
	}
	g := st.Group(p.o.Group)
	for name, b := range p.group.Backends {
		if !b.Advertisable {
			continue
		}
		if g == nil {
			return true
		}
		if nb := g.Backends[name]; nb == nil || !nb.Advertisable {
			return true
		}
	}
	return false
}

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
	// Traced are those events that carried a trace context, oldest
	// noted first: the batch's span is the first one's child and links
	// the others.
	Traced []Event
	// Late are traced events noted after a state that reflects them was
	// applied (set on any Ready, Apply or not): their application is
	// over already.
	Late []Event

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
		_, r.Traced = p.takeEvents(st)
		return r
	}
	prev := p.served
	next := view.Build(st.Generation, g, p.o.Separator, prev)
	next.Regions = st.Regions
	r.Backends, r.Dropped = next.Backends, next.Dropped
	ch := view.Between(prev, next)
	r.EventTime, r.Traced = p.takeEvents(st)
	if ch.None() {
		return r
	}
	notify := ch
	if p.o.Optimizer {
		next.Index = view.NewIndex(next, p.o.Pinned, prev.Index)
		notify.Tools = view.PinnedChanged(prev, next)
		if notify.Eras { // the stateless generation's clients hold its own pinned tools
			notify.StatelessTools = view.PinnedChanged(prev.Era(view.FirstStateless), next.Era(view.FirstStateless))
		}
	}
	p.served = next
	r.View, r.Prev, r.Change, r.Notify, r.changed = next, prev, ch, notify, true
	return r
}

// takeEvents removes the events st reflects and returns the oldest
// timestamp among them (zero when none) and the traced ones.
func (p *Planner) takeEvents(st *events.State) (oldest time.Time, traced []Event) {
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
		if ev.Trace.IsValid() {
			traced = append(traced, ev)
		}
	}
	clear(p.times[k:])
	p.times = p.times[:k]
	return oldest, traced
}

// Reflects reports whether a state of generation gen and regional vector
// regions (nil on a single log) includes generation g of region r's log.
func Reflects(gen uint64, regions map[string]uint64, r string, g uint64) bool {
	if regions == nil {
		return g <= gen
	}
	return g <= regions[r]
}
