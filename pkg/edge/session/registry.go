package session

import (
	"context"
	"time"

	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/edge/internal/h1"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// Observer is told what a session's evidence and record must know: it
// plugs the records and evidence of the edge into its sessions without
// this package knowing them. Every method is called without a session's
// lock held.
type Observer interface {
	// Signalled: a tools list_changed was written to s's stream (s
	// recorded it in its evidence: its record is to be written).
	Signalled(s *Session)
	// StreamAttached: s's client opened its standalone stream.
	StreamAttached(s *Session)
	// Forgotten: s is no longer served here (its resource subscriptions
	// end with it).
	Forgotten(s *Session)
	// IdleEnded: s ended for idleness, on every edge (its record goes).
	IdleEnded(s *Session)
}

// Metrics are the collectors a Registry updates; nil fields are not
// updated.
type Metrics struct {
	Sessions      *prometheus.GaugeVec   // live sessions by kind
	Notifications *prometheus.CounterVec // notifications written, by method
	Latency       prometheus.Histogram   // event to list_changed written, seconds
	Events        *events.Metrics        // the change path's hops
	Dropped       prometheus.Counter     // notifications merged into a pending one
	Streams       prometheus.Gauge       // standalone streams open
	IdleEnded     prometheus.Counter     // sessions ended for idleness
}

// Options configure a Registry. A nil *Options means defaults.
type Options struct {
	// IdleTimeout ends a session without a request for this long; <= 0
	// never.
	IdleTimeout time.Duration
	// Observer is told of evidence and record events; nil: none.
	Observer Observer
	// Metrics are updated; nil: none.
	Metrics *Metrics
	// Hijacks owns the goroutines of taken-over streams; nil: a new one
	// (Wait it after the server's Shutdown).
	Hijacks *h1.Hijacks
	// Log receives the registry's logs; default none.
	Log *zerolog.Logger
	// Initial is the view sessions get before any is swapped in; default
	// view.Empty().
	Initial *view.Served
	// NoDigest: the evidence of a list_changed names no current digest
	// (an optimizer edge serves another list than its view).
	NoDigest bool
}

// Registry holds the sessions of an edge and the view they are given: a
// session opened is given the current view under the lock that Swap takes
// to change it, so it either gets the new view at Open or is among the
// sessions Swap returns.
type Registry struct {
	o         Options
	obs       Observer
	m         Metrics
	listNotes [3]prometheus.Counter // m.Notifications of ListMethods (nil: none)

	closing atomic.Bool // no stream attaches any more
	conf    atomic.Pointer[confirmed]

	// cur is the current view: stored under mu (Swap, read by Open under
	// it too), loaded without it.
	cur atomic.Pointer[view.Served]

	mu         sync.Mutex
	sessions   map[string]*Session
	byIdentity map[string]int // sessions per identity ("" anonymous), reserved ones included
	reserved   int            // reservations not yet opened nor released
}

// NewRegistry returns an empty registry.
func NewRegistry(o *Options) *Registry {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Hijacks == nil {
		opts.Hijacks = &h1.Hijacks{}
	}
	if opts.Log == nil {
		nop := zerolog.Nop()
		opts.Log = &nop
	}
	if opts.Initial == nil {
		opts.Initial = view.Empty()
	}
	g := &Registry{o: opts, obs: opts.Observer, sessions: map[string]*Session{}, byIdentity: map[string]int{}}
	g.cur.Store(opts.Initial)
	if g.obs == nil {
		g.obs = noObserver{}
	}
	if opts.Metrics != nil {
		g.m = *opts.Metrics
		if g.m.Notifications != nil {
			for i, m := range ListMethods {
				g.listNotes[i] = g.m.Notifications.WithLabelValues(m)
			}
		}
	}
	return g
}

// New makes a session of kind, not yet registered: Bind a server to it (or
// Listen), then Open it.
func (g *Registry) New(id, kind, protocol, ident string) *Session {
	s := &Session{reg: g, id: id, kind: kind, ident: ident, created: time.Now().UnixNano()}
	if protocol != "" {
		s.protocol.Store(&protocol)
	}
	return s
}

// Current is the view sessions are given. It takes no lock: every
// session's writer reads it during a fan-out (its evidence).
func (g *Registry) Current() *view.Served { return g.cur.Load() }

// Swap makes next the current view and returns the registered sessions,
// to be given it (Session.Apply).
func (g *Registry) Swap(next *view.Served) []*Session {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cur.Store(next)
	return g.allLocked()
}

// All are the registered sessions.
func (g *Registry) All() []*Session {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.allLocked()
}

// Snapshot are the registered sessions and the current view, read
// together.
func (g *Registry) Snapshot() ([]*Session, *view.Served) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.allLocked(), g.cur.Load()
}

func (g *Registry) allLocked() []*Session {
	all := make([]*Session, 0, len(g.sessions))
	for _, s := range g.sessions {
		all = append(all, s)
	}
	return all
}

// Counts are the sessions registered or reserved, all and those of
// identity ident.
func (g *Registry) Counts(ident string) (all, mine int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.sessions) + g.reserved, g.byIdentity[ident]
}

// Reservation is room for one session, taken before the session is made
// (Reserve) and turned into it by OpenReserved, or given back by Release:
// a cap is checked and the room taken under one lock, so concurrent
// requests that each see room cannot together pass the cap.
type Reservation struct {
	g     *Registry
	ident string
	done  bool // opened or released; under g.mu
}

// Reserve takes room for a session of ident when fits, called under the
// registry's lock with the sessions registered or reserved (all, and
// ident's), reports true; nil when it does not.
func (g *Registry) Reserve(ident string, fits func(all, mine int) bool) *Reservation {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !fits(len(g.sessions)+g.reserved, g.byIdentity[ident]) {
		return nil
	}
	g.reserved++
	g.byIdentity[ident]++
	return &Reservation{g: g, ident: ident}
}

// Release gives the room back unless a session took it (nil: nothing).
func (r *Reservation) Release() {
	if r == nil {
		return
	}
	r.g.mu.Lock()
	defer r.g.mu.Unlock()
	r.releaseLocked()
}

func (r *Reservation) releaseLocked() {
	if r.done {
		return
	}
	r.done = true
	r.g.reserved--
	if r.g.byIdentity[r.ident]--; r.g.byIdentity[r.ident] <= 0 {
		delete(r.g.byIdentity, r.ident)
	}
}

// Open registers s and gives it the current view. The stateless kind is
// given the view and not registered (it is no client's session).
func (g *Registry) Open(s *Session) { g.OpenReserved(s, nil) }

// OpenReserved is Open of a session made in the room res reserved (nil,
// or a reservation already used or released: none); the room becomes s's.
func (g *Registry) OpenReserved(s *Session, res *Reservation) {
	g.mu.Lock()
	s.mu.Lock()
	s.applied = g.cur.Load()
	s.mu.Unlock()
	if res != nil && res.g == g {
		res.releaseLocked()
	}
	if s.kind != KindStateless {
		g.sessions[s.id] = s
		g.byIdentity[s.ident]++
		if g.m.Sessions != nil {
			g.m.Sessions.WithLabelValues(s.kind).Inc()
		}
	}
	g.mu.Unlock()
}

// Forget unregisters s and ends its stream.
func (g *Registry) Forget(s *Session) {
	s.End()
	g.obs.Forgotten(s)
	g.mu.Lock()
	if g.sessions[s.id] == s {
		delete(g.sessions, s.id)
		if g.byIdentity[s.ident]--; g.byIdentity[s.ident] <= 0 {
			delete(g.byIdentity, s.ident)
		}
		if g.m.Sessions != nil {
			g.m.Sessions.WithLabelValues(s.kind).Dec()
		}
	}
	g.mu.Unlock()
}

// Lookup returns the registered session with id, or nil.
func (g *Registry) Lookup(id string) *Session {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sessions[id]
}

// Close stops streams from attaching: a GET after it is refused 503.
// Sessions registered before it are the caller's to close (All).
func (g *Registry) Close() { g.closing.Store(true) }

// Track marks s as bound to the go-sdk session its initialize made, or
// forgets it at once if none was made. A bound session is forgotten when
// its client deletes it or, for the other ends (the go-sdk's idle
// timeout, a failed initialize closed late), by Sweep: a waiting
// goroutine per session would cost every idle session its stack.
func (g *Registry) Track(s *Session) {
	if s.Live() {
		s.flags.Or(FlagBound)
		return
	}
	g.Forget(s)
}

// SweepEvery is how often Run sweeps.
const SweepEvery = time.Second

// Run sweeps every interval (SweepEvery when 0) until ctx ends.
func (g *Registry) Run(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		interval = SweepEvery
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			g.Sweep(time.Now())
		}
	}
}

// Sweep forgets the bound sessions whose go-sdk session has ended, and
// ends those idle at now.
func (g *Registry) Sweep(now time.Time) {
	g.mu.Lock()
	bound := make([]*Session, 0, len(g.sessions))
	for _, s := range g.sessions {
		if s.flags.Load()&FlagBound != 0 {
			bound = append(bound, s)
		}
	}
	g.mu.Unlock()
	for _, s := range bound {
		switch {
		case !s.Live():
			g.Forget(s)
		case g.idle(s, now):
			g.endIdle(s)
		}
	}
}

// idle reports whether session s has had no request for longer than
// Options.IdleTimeout and has no standalone stream open (a client
// listening on one is not idle).
func (g *Registry) idle(s *Session, now time.Time) bool {
	if g.o.IdleTimeout <= 0 || s.kind != KindSession {
		return false
	}
	seen := s.rec.SeenAt()
	if seen.IsZero() || now.Sub(seen) <= g.o.IdleTimeout {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stream == nil
}

// endIdle ends an idle session here and its record everywhere: it is over
// on every edge, not left for another to rebuild.
func (g *Registry) endIdle(s *Session) {
	g.o.Log.Debug().Str("session_hash", sessionstore.IDHash(s.id)).Msg("idle session ended")
	if g.m.IdleEnded != nil {
		g.m.IdleEnded.Inc()
	}
	s.Close()
	g.Forget(s)
	s.rec.End()
	g.obs.IdleEnded(s)
}

type noObserver struct{}

func (noObserver) Signalled(*Session)      {}
func (noObserver) StreamAttached(*Session) {}
func (noObserver) Forgotten(*Session)      {}
func (noObserver) IdleEnded(*Session)      {}
