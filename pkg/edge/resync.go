package edge

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/pkg/edge/planner"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/policy"

	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/events"
)

// newPlanner is the resync loop of e over its source: a planner.Loop
// whose pure Planner decides what each state changes and when
// (batches paced by Options.Coalesce, a withdrawal at once, the start-up
// batch opening no window; see package planner and its scenarios), and
// whose Ready e applies (apply).
func (e *Edge) newPlanner() *planner.Loop {
	return &planner.Loop{Source: e.reader, Apply: e.apply,
		Planner: planner.New(&planner.Options{Group: e.opts.Group, Separator: e.opts.Separator, Coalesce: e.opts.Coalesce,
			Optimizer: e.opts.Mode == ModeOptimizer, Pinned: e.opts.PinnedTools, Initial: e.empty})}
}

// apply applies one Ready of the planner: the policy in force, the
// backends calls may reach, the view served and told to every session,
// in one pass over them (fanOutState), and the state confirmed.
func (e *Edge) apply(r planner.Ready) {
	e.spans.Late(r.Late)
	if r.Apply {
		e.applyState(r)
	}
	if r.Ready && !e.ready.Load() {
		e.ready.Store(true)
		e.log.Info().Uint64("generation", e.confirmed.Load()).Msg("caught up with the event log; ready")
	}
}

// applyState applies a Ready with Apply set.
func (e *Edge) applyState(r planner.Ready) {
	st := r.State
	ap := e.spans.StartBatch() // nil untraced
	defer ap.End(st.Generation, r.Traced)
	// The tool policy of the state is in force before its view is served:
	// a batch that adds a tool and hides it never serves it meanwhile.
	if r.PolicyChanged {
		e.setPolicy(r.Policy)
	}
	defer e.confirmed.store(st, e.m.applied)
	if r.Backends != nil {
		cfgs := r.Backends
		e.backends.Store(&cfgs)
		// Pooled sessions of backends that left, are not advertisable or
		// changed URL or transport are closed: a backend coming back is
		// reconnected on its next call.
		e.pool.Prune(cfgs)
		for _, d := range r.Dropped {
			e.log.Error().Str("definition", d).Msg("definition refused by the go-sdk; not served")
		}
	}
	if r.View == nil && !r.PolicyChanged {
		return
	}
	next := r.View
	if next != nil {
		if e.opt != nil && next.Index != nil {
			e.opt.indexSeconds.Set(next.Index.Built.Seconds())
			e.log.Debug().Int("tools", len(next.Index.Tools)).Dur("build", next.Index.Built).Msg("tool index built")
		}
		for _, c := range next.Catalog.Collisions {
			e.log.Warn().Str("kind", string(c.Kind)).Str("name", c.Name).Str("backend", c.Backend).
				Str("original", c.Original).Str("kept_by", c.KeptBy).Str("exposed_as", c.Exposed).
				Msg("exposed name collision")
		}
		e.m.viewTools.Set(float64(len(next.Catalog.Tools)))
		e.m.collisions.Set(float64(len(next.Catalog.Collisions)))
	}
	start := time.Now()
	if next != nil && !r.EventTime.IsZero() {
		e.m.events.ChangeAge(events.HopApplied, start.Sub(r.EventTime))
	}
	targets := e.fanOutState(r, start)
	if next == nil {
		return
	}
	e.m.batches.Inc()
	ap.Reached(len(targets) - 1)
	e.hj.Go(func() {
		for _, s := range targets {
			s.Refill()
		}
	})
	e.log.Info().Uint64("generation", st.Generation).Str("digest", next.Catalog.Digest).
		Int("tools", len(next.Catalog.Tools)).Bool("tools_changed", r.Change.Tools).Bool("prompts_changed", r.Change.Prompts).
		Bool("resources_changed", r.Change.Resources).Bool("policy_changed", r.PolicyChanged).
		Int("sessions", len(targets)-1).Dur("apply", time.Since(start)).Msg("view changed")
}

// fanOutState passes once over the sessions: each is given r.View (when
// the view changed) and owed its change and what the policy change hides
// or shows its subject, and its evidence names the new view. It returns
// the sessions given the view (the shared server first).
func (e *Edge) fanOutState(r planner.Ready, now time.Time) []*session.Session {
	prev, targets := e.current(), []*session.Session(nil)
	if r.View != nil {
		prev = r.Prev
		targets = append([]*session.Session{e.shared}, e.reg.Swap(r.View)...)
	} else {
		targets = e.reg.All()
	}
	var items *policy.ItemSet
	if r.PolicyChanged {
		items = prev.Items() // what the sessions could see so far
	}
	var digest string
	if r.View != nil {
		digest = e.ledger.CurrentDigest(r.View)
	}
	fanOut(targets, func(s *session.Session) {
		var pc view.Change
		if r.PolicyChanged {
			pc = e.policyChange(s, r.OldPolicy, r.Policy, items)
		}
		if r.View != nil { // before Give writes the signal, which names the view
			e.ledger.ViewAppliedTo(s, r.View, digest)
		}
		if s.Give(r.View, r.Notify.Era(s.Kind() != session.KindSession), r.EventTime, pc, now) {
			e.m.notifyDropped.Inc()
		}
	})
	return targets
}

// fanOut runs f on every session with one worker per CPU, each taking
// the next session by an atomic index (no hand-off per session). f marks
// what is owed and writes it to a taken-over stream as far as its socket
// takes it at once (session.Session.Give); everything that would wait is
// left to the session's own writer (its stream's goroutine or flusher,
// or the go-sdk's timer of a listen session), so a client that does not
// read delays nobody else.
func fanOut(targets []*session.Session, f func(*session.Session)) {
	workers := min(runtime.GOMAXPROCS(0), len(targets))
	if workers <= 1 {
		for _, s := range targets {
			f(s)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(targets)); i = next.Add(1) - 1 {
				f(targets[i])
			}
		})
	}
	wg.Wait()
}

// setPolicy makes p the policy in force (the one of the state being
// applied); the sessions are told by the same batch's pass.
func (e *Edge) setPolicy(p *policy.Policy) {
	e.calls.SetPolicy(p)
	if err := e.limits.update(p); err != nil { // validated by the policy: not expected
		e.log.Error().Err(err).Msg("rate limits of the policy refused; the previous ones stay")
	}
	e.log.Info().Uint64("policy_generation", p.Generation()).Msg("tool policy applied")
}

// policyChange is what a change of policy from old to p changes for the
// client of s: each kind whose visible names differ for the session's
// subject (every kind for a session that has not listed yet, and for the
// listen streams of the shared stateless server).
func (e *Edge) policyChange(s *session.Session, old, p *policy.Policy, items *policy.ItemSet) view.Change {
	sub := s.Subject()
	if sub == nil {
		return view.Change{Tools: true, Prompts: true, Resources: true}
	}
	was, now := e.calls.Visibility(old, *sub, items), e.calls.Visibility(p, *sub, items)
	return view.Change{Tools: !policy.SameNames(was, now, policy.KindTool),
		Prompts:   !policy.SameNames(was, now, policy.KindPrompt),
		Resources: !policy.SameNames(was, now, policy.KindResource)}
}

// optimizerMetrics are the optimizer mode's collectors (find_tool's are
// the call plane's).
type optimizerMetrics struct {
	indexSeconds prometheus.Gauge
}

// newOptimizerMetrics registers the optimizer's collectors on reg.
func newOptimizerMetrics(reg *prometheus.Registry) *optimizerMetrics {
	m := &optimizerMetrics{
		indexSeconds: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetgate_edge_tool_index_build_seconds",
			Help: "Time the last tool index build took (once per view change, optimizer mode)."}),
	}
	reg.MustRegister(m.indexSeconds)
	return m
}
