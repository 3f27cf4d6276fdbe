package session

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/evidence"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/policy"
)

// Session kinds.
const (
	KindSession   = "session"   // Mcp-Session-Id session (2025-03-26 .. 2025-11-25)
	KindListen    = "listen"    // 2026-07-28 subscriptions/listen stream
	KindStateless = "stateless" // the shared server answering 2026-07-28 requests
)

// Session flags (Flags, SetFlags).
const (
	FlagBound       = 1 << iota // the go-sdk session of s was made (see Registry.Track)
	FlagInitialized             // the go-sdk accepted notifications/initialized
	FlagAsks                    // the client declared sampling or elicitation
	FlagLogs                    // the client set a log level
)

// Session is one client session and the go-sdk Server that serves only
// it. One Server per session keeps a client that stops reading from
// delaying the notifications of the others (the go-sdk notifies the
// sessions of one Server one after the other), and lets each session hold
// the registry it was last given.
type Session struct {
	reg     *Registry
	id      string
	kind    string
	srv     *mcp.Server
	created int64  // unix nanos (a time.Time would take the struct past a size class)
	ident   string // the creator's identity (session limits)
	// subject is the caller's policy subject as of its last list request
	// (nil until then, or without a policy): a policy change is compared
	// for it.
	subject atomic.Pointer[policy.Subject]

	protocol atomic.Pointer[string]
	// tasks are the tasks the session made (tasks.go); calls the calls of
	// it the edge answers itself, by request id, with their cancel functions.
	tasks atomic.Pointer[Tasks]
	calls atomic.Pointer[sync.Map]
	// since is the stream timestamp (unix nanos) of the oldest event whose
	// change this session has not yet been notified of; 0 when none.
	since atomic.Int64

	mu      sync.Mutex // guards the fields below and srv's registry
	applied *view.Served
	// pending holds the list_changed notifications (PendingTools, ...)
	// owed to a session-based client; stream is its standalone GET stream,
	// nil when none is attached; ended is set when the session is over
	// (stream.go).
	pending uint8
	updated []string   // resources/updated owed, by URI
	sent    sentEvents // what the standalone stream sent, by event id (streamids.go)
	ended   bool
	stream  *stream
	subs    uint8 // a listen stream the edge serves (srv nil): the kinds it subscribed to
	// A 2026-07-28 listen session is notified through the go-sdk instead:
	// notified records, per list_changed method, the served value the
	// last notification of that method was sent for; sending, the methods
	// whose notification is being written. Both are indexed by ListIndex
	// (arrays: an idle session holds no maps).
	notified [3]*view.Served
	sending  [3]bool
	marker   bool          // markerTool is registered on srv
	flags    atomic.Uint32 // FlagBound, ...

	rec evidence.Record // record and convergence evidence
}

// ID is the session id (the Mcp-Session-Id; "" for the stateless server).
func (s *Session) ID() string { return s.id }

// Kind is KindSession, KindListen or KindStateless.
func (s *Session) Kind() string { return s.kind }

// Server is the session's go-sdk server; nil for a listen stream the edge
// serves itself.
func (s *Session) Server() *mcp.Server { return s.srv }

// Created is when the session was made.
func (s *Session) Created() time.Time { return time.Unix(0, s.created) }

// Identity is the identity of the caller that created the session.
func (s *Session) Identity() string { return s.ident }

// Record is the session's record and convergence evidence.
func (s *Session) Record() *evidence.Record { return &s.rec }

// Subject is the caller's policy subject as of its last list request; nil
// before one.
func (s *Session) Subject() *policy.Subject { return s.subject.Load() }

// SetSubject notes the caller's policy subject.
func (s *Session) SetSubject(p *policy.Subject) { s.subject.Store(p) }

// Flags are the session's flags.
func (s *Session) Flags() uint32 { return s.flags.Load() }

// SetFlags sets flags f.
func (s *Session) SetFlags(f uint32) { s.flags.Or(f) }

// ProtocolVersion is the negotiated (or, for 2026-07-28 requests, the
// requested) protocol version; empty before initialization.
func (s *Session) ProtocolVersion() string {
	if p := s.protocol.Load(); p != nil {
		return *p
	}
	return ""
}

// SetProtocolVersion notes the negotiated protocol version.
func (s *Session) SetProtocolVersion(v string) { s.protocol.Store(&v) }

// Bind gives s the go-sdk server that serves it, before Registry.Open. A
// listen session's server gets the hidden marker tool and the sending
// middleware that make its notifications one per batch (Apply).
func (s *Session) Bind(srv *mcp.Server) {
	s.srv = srv
	if s.kind == KindListen {
		srv.AddTool(markerTool, nil) // no session yet: no notification
		s.marker = true
		srv.AddSendingMiddleware(s.sendingMiddleware)
	}
}

// Listen makes s, a listen session the edge serves without a go-sdk
// server, notified of the list kinds subs (Pending* bits).
func (s *Session) Listen(subs uint8) { s.subs = subs }

// Apply gives the session next. The registry a session serves is the
// served value it points to, so the swap is atomic: a concurrent list sees
// the old lists or the new ones, never a mix. Then each changed list kind
// is owed to the client as one list_changed:
//   - a session-based client's, and those a listen stream the edge serves
//     subscribed to, are set pending and written: to a taken-over stream
//     by the caller itself, as far as the socket takes them at once (one
//     system call, no goroutine: flushNow), the rest by the stream's
//     flusher; a held stream's goroutine is woken (stream.go);
//   - a 2026-07-28 listen stream left to the go-sdk is served by it, so one go-sdk
//     registry change per changed kind makes it send one list_changed of
//     that kind, from this session's own timer. For tools that change is
//     removing the hidden marker tool when it is registered (cheap) and
//     adding it otherwise (the go-sdk re-marshals and decodes the schema
//     of every added tool); Refill re-adds removed markers after the
//     batch, off the fan-out path.
//
// eventTime is the oldest event timestamp the change carries. merged
// reports a notification merged into one still pending on the stream.
func (s *Session) Apply(next *view.Served, c view.Change, eventTime time.Time) (merged bool) {
	s.mu.Lock()
	if s.applied == next {
		s.mu.Unlock()
		return false
	}
	s.applied = next
	merged, st := s.notifyLocked(c, eventTime)
	s.mu.Unlock()
	s.flushNow(st)
	return merged
}

// Give is Apply and Notify in one: it gives s next (nil: the view is
// unchanged) and owes its client c for the view when next is new to it,
// and p, with event time pAt, for a policy change that altered what the
// client may see. A batch that changes both passes over each session
// once.
func (s *Session) Give(next *view.Served, c view.Change, eventTime time.Time, p view.Change, pAt time.Time) (merged bool) {
	s.mu.Lock()
	if next == nil || s.applied == next {
		c = view.Change{}
	} else {
		s.applied = next
	}
	if !p.None() {
		eventTime = pAt // the policy's change is noted first, as a Notify before Apply
	}
	merged, st := s.notifyLocked(view.Change{Tools: c.Tools || p.Tools, Prompts: c.Prompts || p.Prompts,
		Resources: c.Resources || p.Resources}, eventTime)
	s.mu.Unlock()
	s.flushNow(st)
	return merged
}

// Notify tells s's client that the lists of change c changed (a policy
// change that altered what the client may see), as Apply does.
func (s *Session) Notify(c view.Change, eventTime time.Time) (merged bool) {
	s.mu.Lock()
	merged, st := s.notifyLocked(c, eventTime)
	s.mu.Unlock()
	s.flushNow(st)
	return merged
}

// notifyLocked is Notify with s.mu held. now is the taken-over stream
// the caller is to write at once, having unlocked s.mu (flushNow); nil
// when nothing is to be written by it.
func (s *Session) notifyLocked(c view.Change, eventTime time.Time) (merged bool, now *stream) {
	if c.None() || s.kind == KindStateless {
		return false, nil // the shared stateless server has no one to notify
	}
	if s.kind == KindSession || s.srv == nil {
		bits := PendingOf(c)
		if s.srv == nil {
			bits &= s.subs // a listen stream: only what it subscribed to
		}
		if bits == 0 {
			return false, nil
		}
		if !eventTime.IsZero() {
			s.since.CompareAndSwap(0, eventTime.UnixNano())
		}
		merged = s.stream != nil && s.pending&bits != 0 // the previous one is still being written
		s.pending |= bits
		return merged, s.tellLocked()
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
	return false, nil
}

// Refill registers the marker tool again if a batch removed it. The
// notification this raises is dropped by the sending middleware when the
// session was already told of its served value.
func (s *Session) Refill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.marker && s.kind == KindListen && s.srv != nil {
		s.srv.AddTool(markerTool, nil)
		s.marker = true
	}
}

// The markers are registered only to make the go-sdk notify: the lists and
// calls of a session are answered from its served value, so clients never
// see them.
var (
	markerTool     = &mcp.Tool{Name: "fleetgate.marker", InputSchema: &jsonschema.Schema{Type: "object"}}
	markerPrompt   = &mcp.Prompt{Name: "fleetgate.marker"}
	markerResource = &mcp.Resource{Name: "fleetgate.marker", URI: "fleetgate:marker"}
)

// Close ends the session's go-sdk sessions and its standalone stream.
func (s *Session) Close() {
	s.End()
	if s.srv == nil {
		return // a listen stream the edge serves: the stream was all
	}
	for ss := range s.srv.Sessions() {
		_ = ss.Close()
	}
}

// Served returns the session's applied served value.
func (s *Session) Served() *view.Served {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied
}

// Live reports whether s's server still has a go-sdk session (a listen
// stream the edge serves: whether its stream is attached).
func (s *Session) Live() bool {
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

// Streaming reports whether a standalone stream is attached.
func (s *Session) Streaming() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stream != nil
}

// Pending are the list_changed kinds owed to the client (Pending* bits).
func (s *Session) Pending() uint8 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending
}

// DropPendingTools takes back a tools list_changed owed for sv: the
// client holds sv's list already (it listed it).
func (s *Session) DropPendingTools(sv *view.Served) {
	s.mu.Lock()
	if s.applied == sv {
		s.pending &^= PendingTools
	}
	s.mu.Unlock()
}

// OweTools owes the client a tools list_changed (a rebuilt session whose
// view changed since its client last heard).
func (s *Session) OweTools() {
	s.mu.Lock()
	s.pending |= PendingTools
	s.wakeLocked()
	s.mu.Unlock()
}

// OweUpdate owes the client notifications/resources/updated of uri, on
// its standalone stream; merged with one already owed for uri.
func (s *Session) OweUpdate(uri string) {
	s.mu.Lock()
	if !s.ended && !containsString(s.updated, uri) && len(s.updated) < MaxUpdatesOwed {
		s.updated = append(s.updated, uri)
		s.wakeLocked()
	}
	s.mu.Unlock()
}
