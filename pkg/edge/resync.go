package edge

import (
	"context"
	"runtime"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/policy"

	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/health"
)

// follow is the resync loop. It is level-based: a Reader signal only says
// that the state moved on; the loop reads the state it finds then, so any
// number of events between two passes make one batch. Batches are paced by
// a health.Burst: the first change after a quiet period, or after a
// burst's trailing batch, goes out at once and opens a Coalesce window;
// changes inside the window wait for its end and go out together. The
// start-up batch, before the edge is ready, opens no window. A batch that
// withdraws a backend the served view advertises goes out at once, even
// inside a window: no session is kept calling a backend known to be down.
func (e *Edge) follow(ctx context.Context, watch <-chan struct{}) {
	caught := make(chan struct{})
	go func() {
		if e.reader.WaitCaughtUp(ctx) == nil {
			close(caught)
		}
	}()
	pace := health.NewBurst(e.opts.Coalesce)
	for {
		select {
		case <-ctx.Done():
			return
		case <-watch:
		case <-caught:
			caught = nil
		}
		if wait := time.Until(pace.Due(time.Now(), e.withdraws(e.reader.State()))); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		// The state read below covers any signal raised so far.
		select {
		case <-watch:
		default:
		}
		caughtUp := e.reader.CaughtUp()
		wasReady := e.ready.Load()
		pace.Applied(time.Now(), e.resync(e.reader.State()) && wasReady)
		if caughtUp && !e.ready.Load() {
			e.ready.Store(true)
			e.log.Info().Uint64("generation", e.confirmed.Load()).Msg("caught up with the event log; ready")
		}
	}
}

// withdraws reports whether st takes away (down or removed) a backend of
// the served group that the last applied state advertised.
func (e *Edge) withdraws(st *events.State) bool {
	prev := e.notes.last()
	if prev == nil {
		return false
	}
	g := st.Group(e.opts.Group)
	for name, b := range prev.Backends {
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

// resync brings the served view to state st and applies the change to
// every session. It reports whether the view changed.
func (e *Edge) resync(st *events.State) bool {
	ap := e.spans.StartBatch() // nil untraced
	defer ap.End(st.Generation, func() (trace.SpanContext, []trace.Link) { return e.notes.takeTraces(st) })
	g := st.Group(e.opts.Group)
	// The tool policy of the state is in force before its view is served:
	// a batch that adds a tool and hides it never serves it meanwhile.
	e.applyPolicy(st.Policy(), time.Now())
	defer e.confirmed.store(st, e.m.applied)
	if e.notes.swap(g) {
		// The group's backends are unchanged (State shares untouched
		// groups), so the view is too.
		e.notes.takeTime(st)
		return false
	}
	prev := e.current()
	next := view.Build(st.Generation, g, e.opts.Separator, prev)
	next.Regions = st.Regions
	cfgs := next.Backends
	e.backends.Store(&cfgs)
	// Pooled sessions of backends that left, are not advertisable or
	// changed URL or transport are closed: a backend coming back is
	// reconnected on its next call.
	e.pool.Prune(cfgs)
	for _, d := range next.Dropped {
		e.log.Error().Str("definition", d).Msg("definition refused by the go-sdk; not served")
	}
	ch := view.Between(prev, next)
	at := e.notes.takeTime(st)
	if ch.None() {
		return false
	}
	notify := e.indexView(prev, next, ch) // optimizer: tools only when pinned ones changed
	if len(next.Catalog.Collisions) > 0 {
		for _, c := range next.Catalog.Collisions {
			e.log.Warn().Str("kind", string(c.Kind)).Str("name", c.Name).Str("backend", c.Backend).
				Str("original", c.Original).Str("kept_by", c.KeptBy).Str("exposed_as", c.Exposed).
				Msg("exposed name collision")
		}
	}
	targets := append([]*session.Session{e.shared}, e.reg.Swap(next)...)
	e.m.viewTools.Set(float64(len(next.Catalog.Tools)))
	e.m.collisions.Set(float64(len(next.Catalog.Collisions)))

	start := time.Now()
	if !at.IsZero() {
		e.m.events.ChangeAge(events.HopApplied, start.Sub(at))
	}
	fanOut(targets, func(s *session.Session) {
		if s.Apply(next, notify, at) {
			e.m.notifyDropped.Inc()
		}
	})
	e.m.batches.Inc()
	ap.Reached(len(targets) - 1)
	e.ledger.ViewApplied(targets, next)
	e.hj.Go(func() {
		for _, s := range targets {
			s.Refill()
		}
	})
	e.log.Info().Uint64("generation", st.Generation).Str("digest", next.Catalog.Digest).
		Int("tools", len(next.Catalog.Tools)).Bool("tools_changed", ch.Tools).Bool("prompts_changed", ch.Prompts).
		Bool("resources_changed", ch.Resources).
		Int("sessions", len(targets)-1).Dur("apply", time.Since(start)).Msg("view changed")
	return true
}

// fanOut runs f on every session with one worker per CPU. f only marks
// what is owed and wakes the session's writer (its stream's goroutine or
// flusher, or the go-sdk's timer of a listen session), so a client that
// does not read delays nobody else.
func fanOut(targets []*session.Session, f func(*session.Session)) {
	workers := min(runtime.GOMAXPROCS(0), len(targets))
	if workers <= 1 {
		for _, s := range targets {
			f(s)
		}
		return
	}
	ch := make(chan *session.Session)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for s := range ch {
				f(s)
			}
		})
	}
	for _, s := range targets {
		ch <- s
	}
	close(ch)
	wg.Wait()
}

// applyPolicy makes p the policy in force (the one of state just applied)
// and, when it differs from the previous one, tells every session whose
// visible lists changed: each kind whose visible names differ for the
// session's subject (every kind for a session that has not listed yet,
// and for the listen streams of the shared stateless server).
func (e *Edge) applyPolicy(p *policy.Policy, at time.Time) {
	old := e.calls.SetPolicy(p)
	if old == p {
		return
	}
	if err := e.limits.update(p); err != nil { // validated by the policy: not expected
		e.log.Error().Err(err).Msg("rate limits of the policy refused; the previous ones stay")
	}
	e.log.Info().Uint64("policy_generation", p.Generation()).Msg("tool policy applied")
	cur := e.current()
	targets := e.reg.All()
	all := view.Change{Tools: true, Prompts: true, Resources: true}
	items := cur.Items()
	for _, s := range targets {
		c := all
		if sub := s.Subject(); sub != nil {
			was, now := e.calls.Visibility(old, *sub, items), e.calls.Visibility(p, *sub, items)
			c = view.Change{Tools: !policy.SameNames(was, now, policy.KindTool),
				Prompts:   !policy.SameNames(was, now, policy.KindPrompt),
				Resources: !policy.SameNames(was, now, policy.KindResource)}
		}
		if s.Notify(c, at) {
			e.m.notifyDropped.Inc()
		}
	}
}

// indexView gives next its tool index in optimizer mode and returns the
// change optimizer sessions are notified of: ch without tools, unless the
// pinned tools changed. In passthrough mode it returns ch.
func (e *Edge) indexView(prev, next *view.Served, ch view.Change) view.Change {
	if e.opts.Mode != ModeOptimizer {
		return ch
	}
	next.Index = view.NewIndex(next, e.opts.PinnedTools, prev.Index)
	e.opt.indexSeconds.Set(next.Index.Built.Seconds())
	e.log.Debug().Int("tools", len(next.Index.Tools)).Dur("build", next.Index.Built).Msg("tool index built")
	ch.Tools = view.PinnedChanged(prev, next)
	return ch
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
