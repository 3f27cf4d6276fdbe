package edge

import (
	"context"
	"crypto/rand"
	"net/http"

	"github.com/fleetgate/fleetgate/pkg/edge/session"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"

	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/tracing"
)

// newProtocol is the first protocol version without sessions
// (subscriptions/listen instead of the standalone GET stream).
const newProtocol = admission.FirstNewProtocol

// maxBody bounds request bodies (the go-sdk's default).
const maxBody = 4 << 20

// holderKey carries, through the go-sdk handler, the session server a
// request creates: getServer runs more than once per request.
type holderKey struct{}

type holder struct {
	id, kind, protocol string
	ident              string // the caller's identity (session limits)
	s                  *session.Session
}

// mcpHandler serves /mcp. Requests of protocol 2026-07-28 and later go to
// a stateless go-sdk handler, the rest to a stateful one ("split
// routing"): session-based clients get a server of their own at
// initialize, and each 2026-07-28 subscriptions/listen stream gets one for
// as long as it is open. Other 2026-07-28 requests share one server.
func (e *Edge) mcpHandler() http.Handler {
	stateful := mcp.NewStreamableHTTPHandler(e.getStatefulServer, &mcp.StreamableHTTPOptions{
		SessionTimeout: e.opts.SessionTimeout, Logger: e.slog})
	stateless := mcp.NewStreamableHTTPHandler(e.getStatelessServer, &mcp.StreamableHTTPOptions{
		Stateless: true, Logger: e.slog})
	mux := http.NewServeMux()
	if e.bearer != nil { // RFC 9728: where clients learn how to get a token
		mux.Handle("GET "+e.bearer.mdPath, e.bearer.meta)
	}
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(replayHeader) != "" { // a client may not send the edge's own replay marker
			http.Error(w, "reserved header "+replayHeader, http.StatusBadRequest)
			return
		}
		r, a, ok := e.admitHTTP(w, r)
		defer a.done() // the call slots, once the response is written (a lane gives them back sooner)
		if !ok {
			return
		}
		if e.traced { // the caller's traceparent header (trace.go)
			r = r.WithContext(tracing.Propagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
		}
		if v := r.Header.Get("Mcp-Protocol-Version"); admission.NewProtocol(v) {
			e.serveStateless(stateless, w, r, v)
			return
		}
		e.serveSession(stateful, w, r)
	})
	return mux
}

func (e *Edge) serveStateful(h http.Handler, w http.ResponseWriter, r *http.Request, ident string) {
	if r.Header.Get("Mcp-Session-Id") != "" || r.Method != http.MethodPost {
		// An unknown session id is answered 404 by the go-sdk, and the
		// client starts over. A later issue rehydrates it here from a
		// stored session record instead (R1: replay initialize into a
		// server made with the same fixed session id).
		h.ServeHTTP(w, r)
		return
	}
	if wb, ok := r.Body.(*wholeBody); ok && !isInitialize(wb) {
		// Only initialize starts a session (the transport spec's 400).
		http.Error(w, "Bad Request: a request without Mcp-Session-Id must be initialize", http.StatusBadRequest)
		return
	}
	hd := &holder{id: rand.Text(), kind: session.KindSession, ident: ident}
	h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), holderKey{}, hd)))
	if hd.s != nil {
		e.reg.Track(hd.s)
	}
}

func (e *Edge) serveStateless(h http.Handler, w http.ResponseWriter, r *http.Request, version string) {
	if r.Method == http.MethodPost && r.Header.Get("Mcp-Method") == "tools/call" {
		// The gate read the body whole.
		body := r.Body.(*wholeBody).data
		lw, answered := e.postStateless(w, r, body)
		if lw != nil {
			e.runLane(w, r, lw)
		}
		if answered {
			return
		}
		r.Body = r.Body.(*wholeBody).again()
		h.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodPost || !isListen(r) {
		h.ServeHTTP(w, r)
		return
	}
	body := r.Body.(*wholeBody).data
	if !e.opts.paths.goSDKListen && e.takeOverListen(w, r, body) {
		return
	}
	ident, _ := e.identity(r)
	hd := &holder{id: "listen-" + rand.Text(), kind: session.KindListen, protocol: version, ident: ident}
	h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), holderKey{}, hd)))
	if hd.s != nil {
		e.reg.Forget(hd.s)
	}
}

// postStateless answers a 2026-07-28 tools/call with statelessCall. One
// answered on a connection that may become a call lane is not written:
// postStateless returns its response, counted in e.posting, for runLane
// (as Edge.post).
func (e *Edge) postStateless(w http.ResponseWriter, r *http.Request, body []byte) (lw *laneWriter, answered bool) {
	rc := replayConnOf(r)
	if !e.laneable(r) || !rc.mayLane() || e.lanesShut.Load() {
		if answered = e.statelessCall(w, r, body); answered {
			rc.plainCall()
		}
		return nil, answered
	}
	e.posting.Add(1)
	defer func() {
		if lw == nil {
			e.posting.Add(-1)
		}
	}()
	held := &laneWriter{header: make(http.Header, 1)}
	if e.statelessCall(held, r, body) {
		return held, true
	}
	return nil, false
}

// isListen reports whether the POST body is a subscriptions/listen
// request (a batch of that one message included), as the gate parsed it.
func isListen(r *http.Request) bool {
	wb, ok := r.Body.(*wholeBody) // the gate read it whole
	if !ok || wb.parsed == nil || len(wb.parsed.Messages) != 1 {
		return false
	}
	return wb.parsed.Messages[0].Method == "subscriptions/listen"
}

// getStatefulServer is the go-sdk's getServer: a map lookup for a known
// session, the request's own new server for an initialize.
func (e *Edge) getStatefulServer(r *http.Request) *mcp.Server {
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
		if s := e.reg.Lookup(sid); s != nil {
			return s.Server()
		}
		return nil // the go-sdk answers 404 for the unknown session
	}
	return e.held(r)
}

func (e *Edge) getStatelessServer(r *http.Request) *mcp.Server {
	if srv := e.held(r); srv != nil {
		return srv
	}
	return e.shared.Server()
}

// held returns the server of the request's holder, creating it on first
// use; nil when the request carries no holder.
func (e *Edge) held(r *http.Request) *mcp.Server {
	hd, _ := r.Context().Value(holderKey{}).(*holder)
	if hd == nil {
		return nil
	}
	if hd.s == nil {
		hd.s = e.newSession(hd.id, hd.kind, hd.protocol, hd.ident)
		e.reg.Open(hd.s)
	}
	return hd.s.Server()
}

// isInitialize reports whether wb, as the gate parsed it, is one
// initialize request.
func isInitialize(wb *wholeBody) bool {
	m, ok := wb.message()
	return ok && m.Method == "initialize" && m.ID != nil
}
