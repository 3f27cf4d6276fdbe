package edge

import (
	"context"
	"crypto/rand"
	"net/http"

	"github.com/fleetgate/fleetgate/pkg/edge/lane"
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
		e.serve(stateful, stateless, w, r, a)
	})
	return mux
}

// initialize serves an initialize of the session-based protocol: the
// request's own new session server (getStatefulServer), tracked once the
// go-sdk made it.
func (e *Edge) initialize(h http.Handler, w http.ResponseWriter, r *http.Request, ident string) {
	hd := &holder{id: rand.Text(), kind: session.KindSession, ident: ident}
	h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), holderKey{}, hd)))
	if hd.s != nil {
		e.reg.Track(hd.s)
	}
}

// serveStatelessCall answers a 2026-07-28 tools/call itself
// (statelesscall.go), or leaves it to the go-sdk when it is of another
// form than the one answered there.
func (e *Edge) serveStatelessCall(h http.Handler, w http.ResponseWriter, r *http.Request) {
	wb := r.Body.(*wholeBody) // the gate read it whole
	lw, answered := e.postStateless(w, r, wb.data)
	if lw != nil {
		e.lanes.Run(w, r, lw, admittedOf(r).done)
	}
	if answered {
		return
	}
	r.Body = wb.again()
	h.ServeHTTP(w, r)
}

// serveListen serves a 2026-07-28 subscriptions/listen stream: the edge's
// own (edge, and the request of the edge's form) or a go-sdk session
// server of its own for as long as it is open.
func (e *Edge) serveListen(h http.Handler, w http.ResponseWriter, r *http.Request, edge bool, ident string) {
	if edge && e.takeOverListen(w, r, r.Body.(*wholeBody).data) {
		return
	}
	hd := &holder{id: "listen-" + rand.Text(), kind: session.KindListen, protocol: r.Header.Get("Mcp-Protocol-Version"), ident: ident}
	h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), holderKey{}, hd)))
	if hd.s != nil {
		e.reg.Forget(hd.s)
	}
}

// postStateless answers a 2026-07-28 tools/call with statelessCall. One
// answered on a connection that may become a call lane is not written:
// postStateless returns its response, counted in e.posting, for runLane
// (as Edge.post).
func (e *Edge) postStateless(w http.ResponseWriter, r *http.Request, body []byte) (lw *lane.Writer, answered bool) {
	if !e.lanes.Eligible(r) {
		if answered = e.statelessCall(w, r, body); answered {
			e.lanes.PlainCall(r)
		}
		return nil, answered
	}
	e.posting.Add(1)
	defer func() {
		if lw == nil {
			e.posting.Add(-1)
		}
	}()
	held := lane.NewWriter()
	if e.statelessCall(held, r, body) {
		return held, true
	}
	return nil, false
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
		e.reg.OpenReserved(hd.s, admittedOf(r).reservation())
	}
	return hd.s.Server()
}
