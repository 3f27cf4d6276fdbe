package edge

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/fleetgate/fleetgate/pkg/events"
)

// follow is the resync loop. It is level-based: a Reader signal only says
// that the state moved on; the loop reads the state it finds then, so any
// number of events between two passes make one batch. Batches are at least
// Coalesce apart: the first change after a quiet period goes out at once,
// later ones wait for the end of the window and go out together.
func (e *Edge) follow(ctx context.Context, watch <-chan struct{}) {
	caught := make(chan struct{})
	go func() {
		if e.reader.WaitCaughtUp(ctx) == nil {
			close(caught)
		}
	}()
	var last time.Time // when the last batch was applied
	for {
		select {
		case <-ctx.Done():
			return
		case <-watch:
		case <-caught:
			caught = nil
		}
		if !last.IsZero() {
			if wait := e.opts.Coalesce - time.Since(last); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
		}
		// The state read below covers any signal raised so far.
		select {
		case <-watch:
		default:
		}
		caughtUp := e.reader.CaughtUp()
		if e.resync(e.reader.State()) {
			last = time.Now()
		}
		if caughtUp && !e.ready.Load() {
			e.ready.Store(true)
			e.log.Info().Uint64("generation", e.confirmed.Load()).Msg("caught up with the event log; ready")
		}
	}
}

// resync brings the served view to state st and applies the change to
// every session. It reports whether the view changed.
func (e *Edge) resync(st *events.State) bool {
	g := st.Group(e.opts.Group)
	defer func() {
		e.confirmed.Store(st.Generation)
		e.m.applied.Set(float64(st.Generation))
	}()
	e.evMu.Lock()
	same := g == e.lastGroup && e.lastGroup != nil
	e.lastGroup = g
	e.evMu.Unlock()
	if same {
		// The group's backends are unchanged (State shares untouched
		// groups), so the view is too.
		e.takeEventTime(st.Generation)
		return false
	}
	prev := e.current()
	next := buildServed(st.Generation, g, e.opts.Separator, prev)
	_, cfgs := groupSources(g)
	e.backends.Store(&cfgs)
	// Pooled sessions of backends that left, are not advertisable or
	// changed URL or transport are closed: a backend coming back is
	// reconnected on its next call.
	e.pool.prune(cfgs)
	for _, d := range next.dropped {
		e.log.Error().Str("definition", d).Msg("definition refused by the go-sdk; not served")
	}
	ch := changeBetween(prev, next)
	at := e.takeEventTime(st.Generation)
	if ch.empty() {
		return false
	}
	notify := e.indexView(prev, next, ch) // optimizer: tools only when pinned ones changed
	if len(next.view.Collisions) > 0 {
		for _, c := range next.view.Collisions {
			e.log.Warn().Str("kind", string(c.Kind)).Str("name", c.Name).Str("backend", c.Backend).
				Str("original", c.Original).Str("kept_by", c.KeptBy).Str("exposed_as", c.Exposed).
				Msg("exposed name collision")
		}
	}
	e.mu.Lock()
	e.cur = next
	targets := make([]*session, 0, len(e.sessions)+1)
	targets = append(targets, e.shared)
	for _, s := range e.sessions {
		targets = append(targets, s)
	}
	e.mu.Unlock()
	e.m.viewTools.Set(float64(len(next.view.Tools)))
	e.m.collisions.Set(float64(len(next.view.Collisions)))

	start := time.Now()
	e.fanOut(targets, func(s *session) {
		if s.apply(next, notify, at) {
			e.m.notifyDropped.Inc()
		}
	})
	e.m.batches.Inc()
	e.viewApplied(targets, next)
	e.wg.Go(func() {
		for _, s := range targets {
			s.refill()
		}
	})
	e.log.Info().Uint64("generation", st.Generation).Str("digest", next.view.Digest).
		Int("tools", len(next.view.Tools)).Bool("tools_changed", ch.tools).Bool("prompts_changed", ch.prompts).
		Bool("resources_changed", ch.resources).
		Int("sessions", len(targets)-1).Dur("apply", time.Since(start)).Msg("view changed")
	return true
}

// fanOut runs f on every session with one worker per CPU. f only marks
// what is owed and wakes the session's writer (its stream's goroutine or
// flusher, or the go-sdk's timer of a listen session), so a client that
// does not read delays nobody else.
func (e *Edge) fanOut(targets []*session, f func(*session)) {
	workers := min(runtime.GOMAXPROCS(0), len(targets))
	if workers <= 1 {
		for _, s := range targets {
			f(s)
		}
		return
	}
	ch := make(chan *session)
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
