package sessionserver

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/callslot"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/edge/calls"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/edge/spans"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
)

// Evidence is what the session servers tell a session's evidence and
// record (the edge's ledger).
type Evidence interface {
	// Initialized: the go-sdk accepted the initialize r of s (a session
	// of the session-based protocol) with ir.
	Initialized(s *session.Session, r mcp.Request, ir *mcp.InitializeResult)
	// Listed: a tools/list page (at cursor) was served to s.
	Listed(s *session.Session, cursor string, lr *view.ListToolsResult, now time.Time)
	// LevelSet: the client of s set its log level.
	LevelSet(s *session.Session, level string)
}

// Options configure Servers; all but Open are required.
type Options struct {
	Sessions *session.Registry
	Calls    *calls.Plane
	// Impl and Caps are shared by every session server.
	Impl     *mcp.Implementation
	Caps     *mcp.ServerCapabilities
	Logger   *slog.Logger
	Evidence Evidence
	Spans    *spans.Tracer
	// Passthrough: the edge serves every tool (tasks are advertised).
	Passthrough bool
	// Open registers s, the session request r made (nil:
	// Sessions.Open).
	Open func(r *http.Request, s *session.Session)
	// Slots are the concurrency slots of the requests the go-sdk
	// serves: a tools/call holds its request's for as long as it runs
	// (nil: calls run as they are).
	Slots *callslot.Table
}

// Servers makes the session servers of one edge.
type Servers struct {
	o      Options
	shared *session.Session
}

// New returns the Servers of o, with the shared session that answers
// 2026-07-28 requests other than listen (not registered yet: see
// Registry.Open).
func New(o Options) *Servers {
	if o.Open == nil {
		o.Open = func(_ *http.Request, s *session.Session) { o.Sessions.Open(s) }
	}
	sv := &Servers{o: o}
	sv.shared = sv.NewSession("", session.KindStateless, admission.FirstNewProtocol, "")
	return sv
}

// Shared is the session of the shared 2026-07-28 server.
func (sv *Servers) Shared() *session.Session { return sv.shared }

// NewSession makes a session of kind and the go-sdk server that serves
// only it (see package session), with the edge's middleware. It is not
// yet registered: see Registry.Open.
func (sv *Servers) NewSession(id, kind, protocol, ident string) *session.Session {
	s := sv.o.Sessions.New(id, kind, protocol, ident)
	so := &mcp.ServerOptions{
		// R1: the session server's ID is fixed, so that a later
		// rehydration from a stored session record can rebuild the very
		// same session on another edge.
		GetSessionID: func() string { return id },
		Capabilities: sv.o.Caps, // shared: the go-sdk clones it
		Logger:       sv.o.Logger,
	}
	if kind == session.KindSession || kind == session.KindListen { // resource subscriptions (package calls)
		so.SubscribeHandler = func(ctx context.Context, r *mcp.SubscribeRequest) error { return sv.o.Calls.Subscribe(ctx, s, r) }
		so.UnsubscribeHandler = func(ctx context.Context, r *mcp.UnsubscribeRequest) error { return sv.o.Calls.Unsubscribe(ctx, s, r) }
	}
	srv := mcp.NewServer(sv.o.Impl, so) // Impl shared: the go-sdk only reads it
	srv.AddReceivingMiddleware(sv.receiving(s))
	srv.AddReceivingMiddleware(sv.evidence(s)) // outside receiving: sees its results
	srv.AddReceivingMiddleware(sv.checkingParamHeaders)
	srv.AddReceivingMiddleware(sv.results(s)) // outermost: adds what the go-sdk's types cannot carry
	s.Bind(srv)
	return s
}

// holderKey carries, through the go-sdk handler, the session server a
// request creates: getServer runs more than once per request.
type holderKey struct{}

// Holder is the session a request makes, made on the go-sdk's first ask.
type Holder struct {
	ID, Kind, Protocol string
	Ident              string           // the caller's identity (session limits)
	Session            *session.Session // nil until made
}

// WithHolder returns ctx carrying hd.
func WithHolder(ctx context.Context, hd *Holder) context.Context {
	return context.WithValue(ctx, holderKey{}, hd)
}

// Stateful is the go-sdk's getServer of the session-based protocol: a map
// lookup for a known session, the request's own new server for an
// initialize.
func (sv *Servers) Stateful(r *http.Request) *mcp.Server {
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
		if s := sv.o.Sessions.Lookup(sid); s != nil {
			return s.Server()
		}
		return nil // the go-sdk answers 404 for the unknown session
	}
	return sv.held(r)
}

// Stateless is the go-sdk's getServer of 2026-07-28 requests: the
// request's own server (a listen stream), else the shared one.
func (sv *Servers) Stateless(r *http.Request) *mcp.Server {
	if srv := sv.held(r); srv != nil {
		return srv
	}
	return sv.shared.Server()
}

// held returns the server of the request's holder, creating it on first
// use; nil when the request carries no holder.
func (sv *Servers) held(r *http.Request) *mcp.Server {
	hd, _ := r.Context().Value(holderKey{}).(*Holder)
	if hd == nil {
		return nil
	}
	if hd.Session == nil {
		hd.Session = sv.NewSession(hd.ID, hd.Kind, hd.Protocol, hd.Ident)
		sv.o.Open(r, hd.Session)
	}
	return hd.Session.Server()
}
