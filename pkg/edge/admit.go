package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/edge/direct"
	"github.com/fleetgate/fleetgate/pkg/edge/internal/h1"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// The edge's side of the admission gate (package admission): it gathers a
// request's facts, reads a POST's body within the gate's limit and under
// the body deadline, asks the gate, and writes a refusal. Every request to
// /mcp passes here first: the net/http handler (admitHTTP) and call lanes
// (admitLane) alike.

// admitter is the gate with what the edge adds to it: counts, rate-limited
// logs and the refusal metric.
type admitter struct {
	gate     *admission.Gate
	refused  *prometheus.CounterVec
	logMu    sync.Mutex
	logLimit *admission.LogLimiter
}

func newAdmitter(o *admission.Options, reg prometheus.Registerer) *admitter {
	var c admission.Options
	if o != nil {
		c = *o
	}
	if c.SupportedVersions == nil {
		c.SupportedVersions = mcp.SupportedProtocolVersions()
	}
	a := &admitter{gate: admission.New(&c), logLimit: admission.NewLogLimiter(time.Minute, 4096),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_edge_admission_refusals_total",
			Help: "Requests the admission gate refused, by reason."}, []string{"reason"})}
	reg.MustRegister(a.refused)
	return a
}

// tokenUserID is the user id an auth middleware in front of the edge set.
func tokenUserID(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		return ti.UserID
	}
	return ""
}

// gateRequest is the gate's view of r with its body (already read). A
// request that creates a session reserves room for it in the registry
// (the caps decided and the room taken at once); *res receives the
// reservation, given back when the request ends unless a session took it.
func (e *Edge) gateRequest(r *http.Request, body []byte, truncated bool, res **session.Reservation) *admission.Request {
	return &admission.Request{Method: r.Method, Header: r.Header, TokenUserID: tokenUserID(r), Body: body, Truncated: truncated,
		Reserve: func(ident string, fits func(all, mine int) bool) bool {
			*res = e.reg.Reserve(ident, fits)
			return *res != nil
		}}
}

// admitHTTP runs the gate for a request of the net/http server. A POST's
// body is read whole (within the gate's limit, under the body deadline)
// and left in r.Body as a wholeBody, so that no one reads it twice. It
// reports false after writing the refusal.
// The request's admitted value (on its context) holds the concurrent call
// slots the request holds (tools/call under a concurrency limit) until
// its response is written.
func (e *Edge) admitHTTP(w http.ResponseWriter, r *http.Request) (_ *http.Request, a *admitted, ok bool) {
	// The bearer token first: an unauthenticated body is not read.
	r, f := e.bearer.Authenticate(r)
	if f != nil {
		e.refuse(w, r, f)
		return r, nil, false
	}
	var body []byte
	var rest io.Reader // the unread part of a body over the limit
	truncated := false
	if r.Method == http.MethodPost {
		if wb, ok := r.Body.(*wholeBody); ok {
			body = wb.data
		} else {
			rc := http.NewResponseController(w)
			_ = rc.SetReadDeadline(time.Now().Add(e.opts.BodyTimeout))
			var err error
			body, err = mcpwire.ReadBody(r.Body, e.adm.gate.BodyLimit(r.Header))
			_ = rc.SetReadDeadline(time.Time{})
			if err != nil && !errors.Is(err, mcpwire.ErrTooLarge) {
				e.refuse(w, r, &admission.Refusal{Status: http.StatusBadRequest, Reason: "body_unread",
					Err: errBodyUnread})
				return r, nil, false
			}
			if truncated = err != nil; truncated {
				rest = r.Body
			}
			r.Body = newWholeBody(body)
		}
	}
	var res *session.Reservation
	d := e.adm.gate.Admit(e.gateRequest(r, body, truncated, &res))
	if d.Refusal != nil {
		if rest != nil {
			e.refuseTooLarge(w, r, d.Refusal)
			return r, nil, false
		}
		e.refuse(w, r, d.Refusal)
		return r, nil, false
	}
	a = &admitted{body: d.Body, ident: d.Identity, res: res}
	if wb, ok := r.Body.(*wholeBody); ok {
		wb.parsed = d.Body
	}
	if a.release, f = e.limitRequest(r, d.Identity, d.Body); f != nil {
		res.Release()
		e.refuse(w, r, f)
		return r, nil, false
	}
	return r.WithContext(context.WithValue(r.Context(), admittedKey{}, a)), a, true
}

// admitted is what was decided about one request: its body as parsed, the
// caller's identity, and the concurrent call slots it holds until its
// response is written.
type admitted struct {
	body    *admission.Body // of a POST; nil otherwise
	ident   string
	release func() // nil once given back
	// res is the room reserved for the session the request creates (nil
	// for none): the session takes it (reservation), or done gives it back.
	res *session.Reservation
}

type admittedKey struct{}

// admittedOf is r's admitted value; nil for a request the gate has not seen.
func admittedOf(r *http.Request) *admitted {
	a, _ := r.Context().Value(admittedKey{}).(*admitted)
	return a
}

// done gives back the request's call slots (once its response is written)
// and the room reserved for a session it did not create.
func (a *admitted) done() {
	if a != nil && a.release != nil {
		a.release()
		a.release = nil
	}
	if a != nil {
		a.res.Release()
	}
}

// end is done, and then drops the parsed body: the go-sdk keeps the
// context of a session's initialize request (and so this value) for as
// long as the session lives, and an idle session should not hold the
// bytes of its first request.
func (a *admitted) end() {
	if a != nil {
		a.done()
		a.body = nil
	}
}

// reservation is the room reserved for the session the request creates;
// nil for none.
func (a *admitted) reservation() *session.Reservation {
	if a == nil {
		return nil
	}
	return a.res
}

// lingerTimeout bounds how long the rest of a body refused as too large is
// read and dropped after the answer (refuseTooLarge).
const lingerTimeout = 5 * time.Second

// refuseTooLarge answers f, the refusal of a body over its limit, before
// the rest of the body is read, so that the client can read it: the
// answer, then the connection's writing side closed, then what the client
// still sends dropped for at most lingerTimeout (h1.Linger), by a goroutine
// the edge owns, while this handler returns.
func (e *Edge) refuseTooLarge(w http.ResponseWriter, r *http.Request, f *admission.Refusal) {
	if !e.hj.Hold() { // shutting down: net/http closes the connection
		e.refuse(w, r, f)
		return
	}
	defer e.hj.Done()
	e.refuse(w, r, f)
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return
	}
	conn, _, err := rc.Hijack()
	if err != nil {
		return
	}
	e.hj.Go(func() { h1.Linger(conn, lingerTimeout) })
}

// admitLane runs the gate for a request read on a call lane (its body
// read whole already). A refused request goes back to the server, whose
// handler asks the gate again and writes the refusal.
// Its token was verified already (bearer.Authenticator, on the head).
func (e *Edge) admitLane(r *http.Request) (admission.Decision, bool) {
	wb, _ := r.Body.(*wholeBody)
	if wb == nil {
		return admission.Decision{}, false
	}
	var res *session.Reservation
	d := e.adm.gate.Admit(e.gateRequest(r, wb.data, false, &res))
	res.Release() // a lane creates no session: the server, which would, reserves again
	wb.parsed = d.Body
	return d, d.Refusal == nil
}

// admitRebuild asks the gate whether a stored session may be rebuilt here
// for identity ident (the session limits); nil when it may.
// The room is reserved for the request (admitted.res), as for an
// initialize.
func (e *Edge) admitRebuild(r *http.Request) *admission.Refusal {
	var res *session.Reservation
	req := e.gateRequest(r, nil, false, &res)
	req.Rebuild = true
	if wb, ok := r.Body.(*wholeBody); ok {
		req.Body = wb.data
	}
	f := e.adm.gate.Admit(req).Refusal
	if a := admittedOf(r); a != nil && a.res == nil {
		a.res = res
	} else {
		res.Release()
	}
	return f
}

// refuse writes f, counts it and logs it at most once a minute per client
// address.
func (e *Edge) refuse(w http.ResponseWriter, r *http.Request, f *admission.Refusal) {
	e.adm.refused.WithLabelValues(f.Reason).Inc()
	if f.Reason == admission.ReasonMissingIdentity {
		e.m.refusals.WithLabelValues("missing_identity").Inc()
	}
	host := e.opts.TrustedProxies.Addr(r)
	e.adm.logMu.Lock()
	logIt := e.adm.logLimit.Allow(host+"\x00"+f.Reason, time.Now())
	e.adm.logMu.Unlock()
	if logIt {
		e.log.Warn().Str("client", host).Str("reason", f.Reason).Int("status", f.Status).Err(f.Err).AnErr("cause", f.Cause).
			Msg("request refused (logged once a minute per client and reason)")
	}
	for k, v := range f.Header {
		w.Header()[k] = v
	}
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
	}
	if f.Status == http.StatusRequestEntityTooLarge || f.Reason == "body_unread" {
		w.Header().Set("Connection", "close") // the rest of the body is not read
	}
	if !f.RPC {
		http.Error(w, f.Err.Error(), f.Status)
		return
	}
	msg, _ := json.Marshal(f.Err.Error())
	code := f.Code
	if code == 0 {
		code = -32700 // parse error
	}
	id := f.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	data := ""
	if len(f.Data) > 0 {
		data = `,"data":` + string(f.Data)
	}
	body := []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":` + strconv.Itoa(code) + `,"message":` + string(msg) + data + `}}`)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body))) // complete before a hijack (refuseTooLarge)
	w.WriteHeader(f.Status)
	_, _ = w.Write(body)
}

// errBodyUnread: a POST whose body could not be read (cut short, or
// slower than the body deadline).
var errBodyUnread = errors.New("request body not read (cut short or too slow)")

// wholeBody is a request body read whole (by the gate, or by a call lane),
// with the gate's parse of it once admitted (a direct.Body).
type wholeBody struct {
	bytes.Reader // (a value: one allocation per body, not two)
	data         []byte
	parsed       *admission.Body
}

func newWholeBody(b []byte) *wholeBody {
	wb := &wholeBody{data: b}
	wb.Reset(b)
	return wb
}

// Again is the same body, unread.
func (wb *wholeBody) Again() io.ReadCloser {
	again := newWholeBody(wb.data)
	again.parsed = wb.parsed
	return again
}

// Bytes is the body.
func (wb *wholeBody) Bytes() []byte { return wb.data }

// Message is the body's one message as the gate parsed it; false for a
// batch or a body the gate did not parse.
func (wb *wholeBody) Message() (*admission.Message, bool) {
	return wb.parsed.Single()
}

func (*wholeBody) Close() error { return nil }

// wholeBody is what the edge's own answers read (package direct).
var _ direct.Body = (*wholeBody)(nil)
