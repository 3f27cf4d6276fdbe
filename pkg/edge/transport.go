package edge

import (
	"crypto/rand"
	"net/http"

	"github.com/fleetgate/fleetgate/pkg/edge/callslot"

	"github.com/fleetgate/fleetgate/pkg/edge/lane"
	"github.com/fleetgate/fleetgate/pkg/edge/rebuild"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/edge/sessionserver"

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

// mcpHandler serves /mcp. Requests of protocol 2026-07-28 and later go to
// a stateless go-sdk handler, the rest to a stateful one ("split
// routing"): session-based clients get a server of their own at
// initialize, and each 2026-07-28 subscriptions/listen stream gets one for
// as long as it is open. Other 2026-07-28 requests share one server.
func (e *Edge) mcpHandler() http.Handler {
	stateful := withSlots(&e.slots, mcp.NewStreamableHTTPHandler(e.servers.Stateful, &mcp.StreamableHTTPOptions{
		SessionTimeout: e.opts.SessionTimeout, Logger: e.slog}))
	stateless := withSlots(&e.slots, mcp.NewStreamableHTTPHandler(e.servers.Stateless, &mcp.StreamableHTTPOptions{
		Stateless: true, Logger: e.slog}))
	mux := http.NewServeMux()
	if e.bearer != nil { // RFC 9728: where clients learn how to get a token
		mux.Handle("GET "+e.bearer.MetadataPath(), e.bearer.Metadata())
	}
	mux.HandleFunc("GET /oauth/start", e.signInWeb.ServeStart)       // signin.StartPath: per-user sign-in (package signins;
	mux.HandleFunc("GET /oauth/login", e.signInWeb.ServeLogin)       // signin.LoginPath: a nil Web answers as an edge
	mux.HandleFunc("GET /oauth/callback", e.signInWeb.ServeCallback) // signin.CallbackPath: without sign-ins)
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		for _, h := range reservedHeaders { // a client may not send the edge's own markers
			if _, sent := r.Header[h]; sent {
				http.Error(w, "reserved header "+h, http.StatusBadRequest)
				return
			}
		}
		r, a, ok := e.admitHTTP(w, r)
		defer a.end() // the call slots, once the response is written (a lane gives them back sooner)
		if !ok {
			return
		}
		if e.spans.On() { // the caller's traceparent header (package spans)
			r = r.WithContext(tracing.Propagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
		}
		e.serve(stateful, stateless, w, r, a)
	})
	return mux
}

// reservedHeaders are the headers the edge sets on a request for its own
// handlers (canonical form): a client's request carrying one is refused.
var reservedHeaders = []string{http.CanonicalHeaderKey(rebuild.ReplayHeader), http.CanonicalHeaderKey(callslot.Header)}

// withSlots serves h, a go-sdk handler, handing the call slots of the
// request (admitted by the gate) to the calls it carries: held until the
// last of them ends, not only until the response is written or the
// client gone (package callslot).
func withSlots(t *callslot.Table, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := admittedOf(r)
		if a == nil || a.release == nil || a.body == nil || a.body.Calls() == 0 {
			h.ServeHTTP(w, r)
			return
		}
		token, done := t.Hold(a.release)
		a.release = done
		r.Header.Set(callslot.Header, token)
		h.ServeHTTP(w, r)
	})
}

// initialize serves an initialize of the session-based protocol: the
// request's own new session server (package sessionserver), tracked once
// the go-sdk made it.
func (e *Edge) initialize(h http.Handler, w http.ResponseWriter, r *http.Request, ident string) {
	hd := &sessionserver.Holder{ID: rand.Text(), Kind: session.KindSession, Ident: ident}
	h.ServeHTTP(w, r.WithContext(sessionserver.WithHolder(r.Context(), hd)))
	if hd.Session != nil {
		e.reg.Track(hd.Session)
	}
}

// serveStatelessCall answers a 2026-07-28 tools/call itself
// (package direct), or leaves it to the go-sdk when it is of another
// form than the one answered there.
func (e *Edge) serveStatelessCall(h http.Handler, w http.ResponseWriter, r *http.Request, ident string) {
	wb := r.Body.(*wholeBody) // the gate read it whole
	lw, answered := e.postStateless(w, r, wb.data, ident)
	if lw != nil {
		e.lanes.Run(w, r, lw, admittedOf(r).done)
	}
	if answered {
		return
	}
	r.Body = wb.Again()
	h.ServeHTTP(w, r)
}

// serveListen serves a 2026-07-28 subscriptions/listen stream: the edge's
// own (edge, and the request of the edge's form) or a go-sdk session
// server of its own for as long as it is open.
func (e *Edge) serveListen(h http.Handler, w http.ResponseWriter, r *http.Request, edge bool, ident string) {
	if edge && e.answers.Listen(w, r, r.Body.(*wholeBody).data) {
		return
	}
	hd := &sessionserver.Holder{ID: "listen-" + rand.Text(), Kind: session.KindListen, Protocol: r.Header.Get("Mcp-Protocol-Version"), Ident: ident}
	h.ServeHTTP(w, r.WithContext(sessionserver.WithHolder(r.Context(), hd)))
	if hd.Session != nil {
		e.reg.Forget(hd.Session)
	}
}

// postStateless answers a 2026-07-28 tools/call with
// Answers.StatelessCall. One
// answered on a connection that may become a call lane is not written:
// postStateless returns its response, counted in e.posting, for the lane
// (lane.Server.Run), as serveHeld does.
func (e *Edge) postStateless(w http.ResponseWriter, r *http.Request, body []byte, ident string) (lw *lane.Writer, answered bool) {
	if !e.lanes.Eligible(r) {
		if answered = e.answers.StatelessCall(w, r, body, ident); answered {
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
	if e.answers.StatelessCall(held, r, body, ident) {
		return held, true
	}
	return nil, false
}
