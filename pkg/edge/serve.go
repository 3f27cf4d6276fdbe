package edge

import (
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/edge/bearer"
	"github.com/fleetgate/fleetgate/pkg/edge/dispatch"
	"github.com/fleetgate/fleetgate/pkg/edge/evidence"
	"github.com/fleetgate/fleetgate/pkg/edge/fastpath"
	"github.com/fleetgate/fleetgate/pkg/edge/lane"
	"github.com/fleetgate/fleetgate/pkg/edge/rebuild"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// One dispatch: a request admitted by the gate (admit.go) has its facts
// gathered once (facts), gets one route (dispatch.Route), and is served
// by one switch (serve). A call lane asks the same facts and route and
// keeps only the routes it serves (package lane).

// facts gathers what the route of r (admitted as a) is decided on, and
// the session held here that r names (nil for none).
func (e *Edge) facts(r *http.Request, a *admitted) (dispatch.Facts, *session.Session) {
	f := dispatch.Facts{Method: r.Method, Body: a.body}
	if admission.NewProtocol(r.Header.Get("Mcp-Protocol-Version")) {
		f.Stateless = true
		f.MCPMethod = r.Header.Get("Mcp-Method")
		f.FastStateless = f.MCPMethod == "tools/call" && e.opts.Mode == ModePassthrough && !e.opts.paths.goSDKStateless &&
			fastpath.StatelessCallHeaders(r)
		f.EdgeListen = f.MCPMethod == "subscriptions/listen" && !e.opts.paths.goSDKListen && fastpath.ListenHeaders(r)
		return f, nil
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if f.SessionID = sid != ""; !f.SessionID {
		return f, nil
	}
	if f.SessionIDValid = sessionstore.ValidateID(sid) == nil; !f.SessionIDValid {
		return f, nil // no registry or store lookup for a malformed id
	}
	f.Store = e.recs != nil
	s := e.reg.Lookup(sid)
	switch {
	case s == nil:
		return f, nil
	case s.Record().Phase() == evidence.PhaseNone: // being initialized or rebuilt
		f.Held = dispatch.Pending
		return f, nil
	}
	e.heldFacts(&f, r, a, s)
	return f, s
}

// heldFacts adds to f the facts of s, the live session held here that r
// names.
func (e *Edge) heldFacts(f *dispatch.Facts, r *http.Request, a *admitted, s *session.Session) {
	f.Held = dispatch.Live
	f.Owner = s.Record().Owner() == bearer.OwnerOf(r, a.ident, e.opts.OwnerKey)
	f.OwnedStream = r.Method == http.MethodGet && ownsStream(r, s)
	passthrough := e.opts.Mode == ModePassthrough && s.Kind() == session.KindSession
	f.TaskSession = passthrough && s.Flags()&session.FlagInitialized != 0
	f.FastSession = passthrough && e.opts.SessionTimeout == 0 && s.Flags() == session.FlagBound|session.FlagInitialized &&
		fastpath.SessionPostHeaders(r, s.ProtocolVersion())
}

// serve serves r, admitted as a, by its route. stateful and stateless are
// the go-sdk's handlers of the two protocol generations.
func (e *Edge) serve(stateful, stateless http.Handler, w http.ResponseWriter, r *http.Request, a *admitted) {
	f, s := e.facts(r, a)
	k := dispatch.Route(f)
	e.routes.seen(k, false)
	if k == dispatch.Rebuild {
		if s = e.rebuild(stateful, w, r, a); s == nil {
			return // answered
		}
		e.heldFacts(&f, r, a, s)
		if k = dispatch.Route(f); k == dispatch.Rebuild { // cannot be: the session is live now
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		e.routes.seen(k, false)
	}
	switch k {
	case dispatch.StatelessCall:
		e.serveStatelessCall(stateless, w, r, a.ident)
	case dispatch.Listen, dispatch.ListenSDK:
		e.serveListen(stateless, w, r, k == dispatch.Listen, a.ident)
	case dispatch.StatelessSDK, dispatch.SessionLess:
		h := stateless
		if k == dispatch.SessionLess {
			h = stateful
		}
		h.ServeHTTP(w, r)
	case dispatch.Initialize:
		e.initialize(stateful, w, r, a.ident)
	case dispatch.NoSession:
		// Only initialize starts a session (the transport spec's 400).
		http.Error(w, "Bad Request: a request without Mcp-Session-Id must be initialize", http.StatusBadRequest)
	case dispatch.NotFound:
		// Unknown, malformed, not initialized yet (not addressable), or
		// given up here (deleted or moved elsewhere): not found, even while
		// the go-sdk is still closing its copy of a session given up.
		http.Error(w, "session not found", http.StatusNotFound)
	case dispatch.DeleteStored:
		e.rebuilder.DeleteStored(w, r, r.Header.Get("Mcp-Session-Id"), bearer.OwnerOf(r, a.ident, e.opts.OwnerKey))
	case dispatch.Foreign:
		e.m.refusals.WithLabelValues("owner_mismatch").Inc()
		http.Error(w, "session belongs to another identity", http.StatusForbidden)
	default: // the routes of a live session of the caller's
		e.recs.Touched(s, time.Now())
		e.serveHeld(stateful, w, r, a, s, k)
	}
}

// serveHeld serves route k of s, a live session of the caller's.
func (e *Edge) serveHeld(stateful http.Handler, w http.ResponseWriter, r *http.Request, a *admitted, s *session.Session, k dispatch.Kind) {
	switch k {
	case dispatch.Stream:
		s.ServeStream(w, r)
		return
	case dispatch.Delete:
		stateful.ServeHTTP(w, r)
		e.reg.Forget(s) // the go-sdk closed its session (or never had it)
		e.recs.Deleted(r.Context(), s.ID(), s)
		return
	}
	if r.Method != http.MethodPost {
		stateful.ServeHTTP(w, r)
		return
	}
	// A POST's response is written after its call returned: shutdown
	// waits for the whole POST before it closes the session.
	e.posting.Add(1)
	var lw *lane.Writer
	defer func() {
		if lw == nil {
			e.posting.Add(-1)
		}
	}()
	switch k {
	case dispatch.Task:
		if e.answers.Task(w, r, s) { // methods the go-sdk does not know
			return
		}
	case dispatch.Call:
		if e.lanes.Eligible(r) {
			held := lane.NewWriter()
			if e.answers.SessionCall(held, r, s, a.ident) {
				lw = held // set only now: a panic in SessionCall releases the count
				e.lanes.Run(w, r, lw, a.done)
				return
			}
		} else if e.answers.SessionCall(w, r, s, a.ident) {
			e.lanes.PlainCall(r)
			return
		}
	case dispatch.Cancel:
		e.answers.SessionCall(w, r, s, a.ident) // cancels the call; the go-sdk has the notification next
	}
	m, ok := a.body.Single()
	if !ok || m.Method != "notifications/initialized" {
		stateful.ServeHTTP(w, r)
		return
	}
	sw := &statusWriter{ResponseWriter: w}
	stateful.ServeHTTP(sw, r)
	if sw.code == http.StatusAccepted && s.ProtocolVersion() != "" {
		// The go-sdk accepted it and runs its handler later, on the
		// session's own goroutine: the session's next request may come
		// first, and must find it initialized.
		s.SetFlags(session.FlagInitialized)
	}
}

// statusWriter notes the status a response was written with.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// rebuild rebuilds the session r names, held by another edge, from its
// stored record; nil when it answered r instead.
func (e *Edge) rebuild(stateful http.Handler, w http.ResponseWriter, r *http.Request, a *admitted) *session.Session {
	if f := e.admitRebuild(r); f != nil {
		e.refuse(w, r, f)
		return nil
	}
	sid := r.Header.Get("Mcp-Session-Id")
	s, err := e.rebuilder.Rebuild(stateful, r, sid, bearer.OwnerOf(r, a.ident, e.opts.OwnerKey))
	switch {
	case errors.Is(err, rebuild.ErrForeign):
		e.m.refusals.WithLabelValues("owner_mismatch").Inc()
		http.Error(w, "session belongs to another identity", http.StatusForbidden)
		return nil
	case err != nil && !errors.Is(err, sessionstore.ErrNotFound):
		e.log.Warn().Err(err).Str("session_hash", sessionstore.IDHash(sid)).Msg("session not rehydrated")
		http.Error(w, "session store unavailable", http.StatusServiceUnavailable)
		return nil
	case s == nil:
		http.Error(w, "session not found", http.StatusNotFound)
		return nil
	}
	return s
}

// routeCounts counts the routes requests took, by route and by path (the
// server or a call lane): fleetgate_edge_routes_total.
type routeCounts struct {
	vec *prometheus.CounterVec
	c   [2][32]prometheus.Counter
}

func newRouteCounts(reg prometheus.Registerer) *routeCounts {
	rc := &routeCounts{vec: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_edge_routes_total",
		Help: "Requests to /mcp by the route they took (package dispatch) and the path that served them (server or lane)."},
		[]string{"route", "path"})}
	reg.MustRegister(rc.vec)
	for k := dispatch.Kind(1); k.String() != "invalid"; k++ {
		rc.c[0][k] = rc.vec.WithLabelValues(k.String(), "server")
		if dispatch.Lane(k) {
			rc.c[1][k] = rc.vec.WithLabelValues(k.String(), "lane")
		}
	}
	return rc
}

// seen counts route k, taken on a lane or not.
func (rc *routeCounts) seen(k dispatch.Kind, lane bool) {
	i := 0
	if lane {
		i = 1
	}
	if c := rc.c[i][k]; c != nil {
		c.Inc()
	}
}

// ownsStream reports whether the edge serves this GET of s itself: the
// go-sdk would accept it the same way (a bad Accept, Host or protocol
// version header, more than one Last-Event-ID, or an id longer than the
// edge's own are left to it, so the answers are its).
func ownsStream(r *http.Request, s *session.Session) bool {
	if s.Kind() != session.KindSession || len(r.Header.Values("Last-Event-ID")) > 1 || len(r.Header.Get("Last-Event-ID")) > maxEventID ||
		!fastpath.AcceptsEventStream(r) {
		return false
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && (v >= newProtocol || !slices.Contains(mcp.SupportedProtocolVersions(), v)) {
		return false
	}
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(interface{ String() string }); ok && la != nil && fastpath.Loopback(la.String()) {
		return fastpath.Loopback(r.Host) // the go-sdk's DNS rebinding protection
	}
	return true
}

// maxEventID bounds a Last-Event-ID the edge reads (its own are about 30
// bytes); a longer one goes to the go-sdk, which refuses it.
const maxEventID = 64
