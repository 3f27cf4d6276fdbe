package edge

import (
	"context"
	"sync"

	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/policy"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Session kinds.
const (
	kindSession   = "session"   // Mcp-Session-Id session (2025-03-26 .. 2025-11-25)
	kindListen    = "listen"    // 2026-07-28 subscriptions/listen stream
	kindStateless = "stateless" // the shared server answering 2026-07-28 requests
)

// session is one client session and the go-sdk Server that serves only
// it. One Server per session keeps a client that stops reading from
// delaying the notifications of the others (the go-sdk notifies the
// sessions of one Server one after the other), and lets each session hold
// the registry it was last given.
type session struct {
	id      string
	kind    string
	srv     *mcp.Server
	created int64  // unix nanos (a time.Time would take the struct past a size class)
	ident   string // the creator's identity, set before open (session limits)
	// subject is the caller's policy subject as of its last list request
	// (nil until then, or without a policy): a policy change is compared
	// for it.
	subject atomic.Pointer[policy.Subject]

	protocol atomic.Pointer[string]
	// since is the stream timestamp (unix nanos) of the oldest event whose
	// change this session has not yet been notified of; 0 when none.
	since atomic.Int64

	mu      sync.Mutex // guards the fields below and srv's registry
	applied *view.Served
	// pending holds the list_changed notifications (pendingTools, ...)
	// owed to a session-based client; stream is its standalone GET stream,
	// nil when none is attached; ended is set when the session is over
	// (stream.go).
	pending uint8
	updated []string   // resources/updated owed, by URI (subscribe.go)
	sent    sentEvents // what the standalone stream sent, by event id (streamids.go)
	ended   bool
	stream  *sessionStream
	subs    uint8 // a listen stream the edge serves (srv nil): the kinds it subscribed to
	// A 2026-07-28 listen session is notified through the go-sdk instead:
	// notified records, per list_changed method, the served value the
	// last notification of that method was sent for; sending, the methods
	// whose notification is being written. Both are indexed by listIndex
	// (arrays: an idle session holds no maps).
	notified [3]*view.Served
	sending  [3]bool
	marker   bool          // markerTool is registered on srv
	flags    atomic.Uint32 // flagBound, flagInitialized, flagAsks, flagLogs

	rec sessionRecord // record and convergence evidence (records.go)
}

// newSession builds the session server. It is not yet registered or
// populated; see Edge.open.
func (e *Edge) newSession(id, kind, protocol string) *session {
	s := &session{id: id, kind: kind, created: time.Now().UnixNano()}
	if protocol != "" {
		s.protocol.Store(&protocol)
	}
	so := &mcp.ServerOptions{
		// R1: the session server's ID is fixed, so that a later
		// rehydration from a stored session record can rebuild the very
		// same session on another edge.
		GetSessionID: func() string { return id },
		Capabilities: e.caps, // shared: the go-sdk clones it
		Logger:       e.slog,
	}
	if kind == kindSession || kind == kindListen { // resource subscriptions (subscribe.go)
		so.SubscribeHandler = func(ctx context.Context, r *mcp.SubscribeRequest) error { return e.subscribe(ctx, s, r) }
		so.UnsubscribeHandler = func(ctx context.Context, r *mcp.UnsubscribeRequest) error { return e.unsubscribe(ctx, s, r) }
	}
	s.srv = mcp.NewServer(e.impl, so) // e.impl shared: the go-sdk only reads it
	if kind == kindListen {
		s.srv.AddTool(markerTool, nil) // no session yet: no notification
		s.marker = true
	}
	s.srv.AddReceivingMiddleware(e.receiving(s))
	s.srv.AddReceivingMiddleware(e.evidence(s)) // outside receiving: sees its results
	s.srv.AddReceivingMiddleware(e.checkingParamHeaders)
	if kind == kindListen {
		s.srv.AddSendingMiddleware(e.sending(s))
	}
	return s
}

// protocolVersion is the negotiated (or, for 2026-07-28 requests, the
// requested) protocol version; empty before initialization.
func (s *session) protocolVersion() string {
	if p := s.protocol.Load(); p != nil {
		return *p
	}
	return ""
}

// apply gives the session next. The registry a session serves is the
// served value it points to, so the swap is atomic: a concurrent list sees
// the old lists or the new ones, never a mix. Then each changed list kind
// is owed to the client as one list_changed:
//   - a session-based client's, and those a listen stream the edge serves
//     subscribed to, are set pending and the stream woken (stream.go): a
//     few instructions per session;
//   - a 2026-07-28 listen stream left to the go-sdk is served by it, so one go-sdk
//     registry change per changed kind makes it send one list_changed of
//     that kind, from this session's own timer. For tools that change is
//     removing the hidden marker tool when it is registered (cheap) and
//     adding it otherwise (the go-sdk re-marshals and decodes the schema
//     of every added tool); refill re-adds removed markers after the
//     batch, off the fan-out path.
//
// eventTime is the oldest event timestamp the change carries. merged
// reports a notification merged into one still pending on the stream.
func (s *session) apply(next *view.Served, c view.Change, eventTime time.Time) (merged bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.applied == next {
		return false
	}
	s.applied = next
	return s.notifyLocked(c, eventTime)
}

// notify tells s's client that the lists of change c changed (a policy
// change that altered what the client may see), as apply does.
func (s *session) notify(c view.Change, eventTime time.Time) (merged bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notifyLocked(c, eventTime)
}

// notifyLocked is notify with s.mu held.
func (s *session) notifyLocked(c view.Change, eventTime time.Time) (merged bool) {
	if c.None() || s.kind == kindStateless {
		return false // the shared stateless server has no one to notify
	}
	if s.kind == kindSession || s.srv == nil {
		bits := pendingOf(c)
		if s.srv == nil {
			bits &= s.subs // a listen stream: only what it subscribed to
		}
		if bits == 0 {
			return false
		}
		if !eventTime.IsZero() {
			s.since.CompareAndSwap(0, eventTime.UnixNano())
		}
		merged = s.stream != nil && s.pending&bits != 0 // the previous one is still being written
		s.pending |= bits
		s.wakeLocked()
		return merged
	}
	if !eventTime.IsZero() {
		s.since.CompareAndSwap(0, eventTime.UnixNano())
	}
	if c.Tools {
		if s.marker {
			s.srv.RemoveTools(markerTool.Name)
		} else {
			s.srv.AddTool(markerTool, nil)
		}
		s.marker = !s.marker
	}
	if c.Prompts {
		s.srv.AddPrompt(markerPrompt, nil)
	}
	if c.Resources {
		s.srv.AddResource(markerResource, nil)
	}
	return false
}

// refill registers the marker tool again if a batch removed it. The
// notification this raises is dropped by Edge.sending when the session was
// already told of its served value.
func (s *session) refill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.marker && s.kind == kindListen && s.srv != nil {
		s.srv.AddTool(markerTool, nil)
		s.marker = true
	}
}

// The markers are registered only to make the go-sdk notify: the lists and
// calls of a session are answered from its served value (see
// Edge.receiving), so clients never see them.
var (
	markerTool     = &mcp.Tool{Name: "fleetgate.marker", InputSchema: &jsonschema.Schema{Type: "object"}}
	markerPrompt   = &mcp.Prompt{Name: "fleetgate.marker"}
	markerResource = &mcp.Resource{Name: "fleetgate.marker", URI: "fleetgate:marker"}
)

// close ends the session's go-sdk sessions and its standalone stream.
func (s *session) close() {
	s.end()
	if s.srv == nil {
		return // a listen stream the edge serves: the stream was all
	}
	for ss := range s.srv.Sessions() {
		_ = ss.Close()
	}
}

// open registers a new session and gives it the current view. It is
// registered under the edge lock that a resync takes to swap the view, so
// it either gets the new view here or is among the sessions the resync
// updates.
func (e *Edge) open(s *session) {
	e.mu.Lock()
	s.mu.Lock()
	s.applied = e.cur
	s.mu.Unlock()
	if s.kind != kindStateless {
		e.sessions[s.id] = s
		e.byIdentity[s.ident]++
		e.m.sessions.WithLabelValues(s.kind).Inc()
	}
	e.mu.Unlock()
}

// served returns the session's applied served value.
func (s *session) served() *view.Served {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied
}

// forget unregisters a session.
func (e *Edge) forget(s *session) {
	s.end()
	e.subs.drop(e, s)
	e.mu.Lock()
	if e.sessions[s.id] == s {
		delete(e.sessions, s.id)
		if e.byIdentity[s.ident]--; e.byIdentity[s.ident] <= 0 {
			delete(e.byIdentity, s.ident)
		}
		e.m.sessions.WithLabelValues(s.kind).Dec()
	}
	e.mu.Unlock()
}

// lookup returns the registered session with id, or nil.
func (e *Edge) lookup(id string) *session {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sessions[id]
}

// Session flags.
const (
	flagBound       = 1 << iota // the go-sdk session of s was made (see Edge.track)
	flagInitialized             // the go-sdk accepted notifications/initialized
	flagAsks                    // the client declared sampling or elicitation (relay.go)
	flagLogs                    // the client set a log level (relay.go)
)

// sweepEvery is how often Edge.sweep looks for ended sessions.
const sweepEvery = time.Second

// track marks s as bound to the go-sdk session its initialize made, or
// forgets it at once if none was made. A bound session is forgotten when
// its client deletes it (serveSession) or, for the other ends (the go-sdk's
// idle timeout, a failed initialize closed late), by Edge.sweep: a waiting
// goroutine per session would cost every idle session its stack.
func (e *Edge) track(s *session) {
	if s.live() {
		s.flags.Or(flagBound)
		return
	}
	e.forget(s)
}

// live reports whether s's server still has a go-sdk session.
func (s *session) live() bool {
	if s.srv == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.stream != nil
	}
	for range s.srv.Sessions() {
		return true
	}
	return false
}

// sweep forgets, every interval until ctx ends, the bound sessions whose
// go-sdk session has ended.
func (e *Edge) sweep(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			e.sweepOnce()
		}
	}
}

func (e *Edge) sweepOnce() {
	e.mu.Lock()
	bound := make([]*session, 0, len(e.sessions))
	for _, s := range e.sessions {
		if s.flags.Load()&flagBound != 0 {
			bound = append(bound, s)
		}
	}
	e.mu.Unlock()
	now := time.Now()
	for _, s := range bound {
		switch {
		case !s.live():
			e.forget(s)
		case e.idle(s, now):
			e.endIdle(s)
		}
	}
}

// idle reports whether session s has had no request for longer than
// Options.SessionIdleTimeout and has no standalone stream open (a client
// listening on one is not idle).
func (e *Edge) idle(s *session, now time.Time) bool {
	if e.opts.SessionIdleTimeout < 0 || s.kind != kindSession {
		return false
	}
	seen := s.rec.seenAt()
	if seen.IsZero() || now.Sub(seen) <= e.opts.SessionIdleTimeout {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stream == nil
}

// endIdle ends an idle session here and its record everywhere: it is over
// on every edge, not left for another to rebuild.
func (e *Edge) endIdle(s *session) {
	e.log.Debug().Str("session", s.id).Msg("idle session ended")
	e.m.idleEnded.Inc()
	s.close()
	e.forget(s)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e.recs.deleted(ctx, s.id, s)
}

// listIndex is the index of a list_changed method in session.notified and
// session.sending; -1 for other methods.
func listIndex(method string) int {
	switch method {
	case toolsChanged:
		return 0
	case "notifications/prompts/list_changed":
		return 1
	case "notifications/resources/list_changed":
		return 2
	}
	return -1
}

// sending makes list_changed notifications exactly one per applied batch,
// counts them and observes their latency from the event that caused them.
//
// The go-sdk sends a list_changed 10ms after the last change to a Server's
// list. A notification for a served value this session was already
// notified of is dropped, so that a client hears of each applied batch
// once whatever the timing of the markers; so is one raised while the
// previous one of its kind is still being written.
func (e *Edge) sending(s *session) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			i := listIndex(method)
			if i < 0 || s.kind == kindStateless { // the stateless server: many request sessions share it
				return next(ctx, method, req)
			}
			s.mu.Lock()
			dup := s.notified[i] == s.applied
			busy := s.sending[i]
			if !dup && !busy {
				s.notified[i] = s.applied
				s.sending[i] = true
			}
			s.mu.Unlock()
			if dup {
				return nil, nil
			}
			if busy {
				// The previous one is still being written: the client is not
				// reading. It tells the client to list again, which covers
				// this change too; queuing more would only pile up blocked
				// goroutines.
				e.m.notifyDropped.Inc()
				return nil, nil
			}
			res, err := next(ctx, method, req)
			s.mu.Lock()
			s.sending[i] = false
			s.mu.Unlock()
			if err == nil {
				e.m.notifications.WithLabelValues(method).Inc()
				if since := s.since.Swap(0); since != 0 {
					age := time.Since(time.Unix(0, since))
					e.m.latency.Observe(age.Seconds())
					e.m.events.ChangeAge(events.HopNotified, age)
				}
			}
			return res, err
		}
	}
}
