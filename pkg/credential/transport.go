package credential

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultRecheck is how long a Transport uses its resolved values before it
// resolves the references again (a rotated file is picked up this late).
const DefaultRecheck = 10 * time.Second

// ErrOtherOrigin refuses a request to another origin than the backend's:
// its credentials are for the backend only (an SSE endpoint event naming
// another host, a redirect).
var ErrOtherOrigin = errors.New("request to another origin than the backend's refused")

// TransportOptions configure a Transport; nil or zero fields take the
// defaults.
type TransportOptions struct {
	// Backend names the backend in errors.
	Backend string
	// URL is the backend's URL: requests to any other origin (scheme,
	// host and port) are refused with ErrOtherOrigin. Empty: not checked.
	URL string
	// Recheck is how long resolved values are used before the references
	// are resolved again; default DefaultRecheck, negative never (Refresh
	// still does).
	Recheck time.Duration
	// Now is the clock of Recheck; default time.Now.
	Now func() time.Time
	// Limits, when set, bound the references the Transport resolves: one
	// out of bounds (Limits.Check) fails every request as an unresolved
	// one does, before it is read. A process that receives references
	// from elsewhere (an edge, from the event log) sets the bounds its
	// operator allows, so that a forged event cannot make it read and
	// send any file or variable.
	Limits *Limits
	// OnError is called when resolving starts failing, once, and not again
	// until a resolution succeeded (a log line per outage, not per call).
	// The error is a *ResolveError, safe to log.
	OnError func(error)
}

// Transport is an http.RoundTripper that sets a backend's headers on every
// request, resolved from their references when it is made and again every
// Recheck. While a reference does not resolve, every request fails with the
// *ResolveError (matching ErrUnresolved), before anything is sent.
type Transport struct {
	next    http.RoundTripper
	backend string
	headers Headers
	// scheme and host of the backend's URL; check false when unchecked.
	check        bool
	scheme, host string
	recheck      time.Duration
	now          func() time.Time
	onError      func(error)
	limits       *Limits

	mu      sync.Mutex // serializes resolving
	cur     atomic.Pointer[resolved]
	failing bool // under mu: OnError was called for the current outage
}

// resolved is one resolution of every header.
type resolved struct {
	at     time.Time
	names  []string
	values []Secret
	err    error
}

// NewTransport returns a Transport over next (nil: http.DefaultTransport)
// setting headers h. Invalid headers (h.Validate) fail every request, as
// unresolved ones do.
func NewTransport(next http.RoundTripper, h Headers, o *TransportOptions) *Transport {
	if o == nil {
		o = &TransportOptions{}
	}
	if next == nil {
		next = http.DefaultTransport
	}
	t := &Transport{next: next, backend: o.Backend, headers: h.Clone(), recheck: o.Recheck, now: o.Now, onError: o.OnError, limits: o.Limits}
	if t.recheck == 0 {
		t.recheck = DefaultRecheck
	}
	if t.now == nil {
		t.now = time.Now
	}
	if o.URL != "" {
		t.check = true
		if u, err := url.Parse(o.URL); err == nil {
			t.scheme, t.host = u.Scheme, u.Host
		} else {
			t.scheme = "invalid" // matches no request
		}
	}
	if err := t.headers.Validate(); err != nil {
		err = &ResolveError{Backend: t.backend, Reason: "invalid headers: " + err.Error(), Err: err}
		t.cur.Store(&resolved{err: err})
		t.headers = nil // never resolved
		if t.onError != nil {
			t.onError(err)
		}
		return t
	}
	_ = t.refresh()
	return t
}

// Refresh resolves every reference again now and returns the resolution
// error, if any (a pool calls it when it opens a session).
func (t *Transport) Refresh() error {
	if t.headers == nil {
		return t.cur.Load().err
	}
	return t.refresh()
}

// Err returns the error of the last resolution (nil when every header
// resolved).
func (t *Transport) Err() error { return t.current().err }

func (t *Transport) refresh() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := &resolved{at: t.now()}
	for _, name := range t.headers.Names() {
		var s Secret
		var err error
		if t.limits != nil {
			if lerr := t.limits.Check(t.headers[name]); lerr != nil {
				err = &ResolveError{Ref: t.headers[name], Reason: "out of the allowed bounds", Err: lerr}
			}
		}
		if err == nil {
			s, err = Resolve(t.headers[name])
		}
		if err != nil {
			var re *ResolveError
			if errors.As(err, &re) {
				re.Backend, re.Header = t.backend, name
			}
			r = &resolved{at: r.at, err: err}
			break
		}
		r.names, r.values = append(r.names, name), append(r.values, s)
	}
	t.cur.Store(r)
	switch {
	case r.err != nil && !t.failing:
		t.failing = true
		if t.onError != nil {
			t.onError(r.err)
		}
	case r.err == nil:
		t.failing = false
	}
	return r.err
}

// current is the resolution in use, resolved again when it is older than
// recheck (by one caller; the others use the previous one meanwhile).
func (t *Transport) current() *resolved {
	r := t.cur.Load()
	if t.recheck < 0 || t.headers == nil || t.now().Sub(r.at) < t.recheck || !t.mu.TryLock() {
		return r
	}
	t.mu.Unlock()
	_ = t.refresh()
	return t.cur.Load()
}

// RoundTrip implements http.RoundTripper: it sends a clone of req with the
// headers set (replacing any of the same name).
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := t.current()
	fail := func(err error) (*http.Response, error) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	if r.err != nil {
		return fail(r.err)
	}
	if t.check && (req.URL.Scheme != t.scheme || req.URL.Host != t.host) {
		return fail(fmt.Errorf("backend %q: %w", t.backend, ErrOtherOrigin))
	}
	if len(r.names) == 0 {
		return t.next.RoundTrip(req)
	}
	// A shallow copy with its own header map: the caller's request is
	// not changed (the RoundTripper contract), at a fraction of Clone's
	// cost.
	out := new(http.Request)
	*out = *req
	out.Header = make(http.Header, len(req.Header)+len(r.names))
	for k, v := range req.Header {
		out.Header[k] = v
	}
	for i, name := range r.names {
		out.Header[name] = []string{r.values[i].Reveal()}
	}
	return t.next.RoundTrip(out)
}

// Apply sets the resolved headers on h, for a request built without
// RoundTrip; it returns the resolution error instead when there is one.
func (t *Transport) Apply(h http.Header) error {
	r := t.current()
	if r.err != nil {
		return r.err
	}
	for i, name := range r.names {
		h[name] = []string{r.values[i].Reveal()}
	}
	return nil
}

// CloseIdleConnections passes on to the next transport.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
