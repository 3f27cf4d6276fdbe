package backend

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/backendnet"
	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/edge/internal/h1"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/mcpwire"
	"github.com/fleetgate/fleetgate/pkg/stdio"
)

// guardedTransport guards every response body (mcpwire.Guard): the go-sdk
// client decodes backend messages with a recursive decoder, so none may
// reach it nested deeper than mcpwire.MaxDepth, or larger than the limit.
type guardedTransport struct {
	rt     http.RoundTripper
	limits mcpwire.Limits
}

func (t *guardedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	sse := mediaType(resp.Header.Get("Content-Type")) == "text/event-stream"
	resp.Body = mcpwire.Guard(resp.Body, sse, t.limits)
	return resp, nil
}

// CloseIdleConnections passes on to the transport guarded.
func (t *guardedTransport) CloseIdleConnections() {
	if c, ok := t.rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// Pool holds one persistent go-sdk client session per backend, created on
// first use and replaced when the backend forgets it (a restart) or the
// connection breaks. A backend of the legacy HTTP+SSE transport gets an
// SSE session (ssebackend.go); every other one a streamable HTTP session.
type Pool struct {
	client *mcp.Client
	http   *http.Client
	// direct is http's transport when http is the edge's default client
	// (Options.BackendHTTPClient nil), which post then calls directly.
	direct  *h1.Transport
	timeout time.Duration
	// maxResponse bounds a response body, or an event of an event stream
	// (Options.MaxBackendResponse); sdk is the client of the go-sdk
	// sessions: http with every response body guarded (depth, size) and
	// no redirects followed.
	maxResponse int64
	sdk         *http.Client
	obs         Observer      // nil: none
	ids         atomic.Uint64 // ids of raw requests (forward.go)
	// sessionNames maps each pooled session to its connName (its
	// backend, and its caller for a per-caller session); updated hears
	// its resources/updated (subscribe.go).
	sessionNames sync.Map
	updated      func(backend, caller, uri string)
	// statelessOnly tells a backend that speaks only the stateless
	// revision (its catalog says so): its pooled session is one of that
	// revision (SetStatelessOnly). nil: none.
	statelessOnly func(backend string) bool

	// bg runs the notifications/cancelled sends; ctx ends them at closeAll.
	// ctx is also the parent of the SSE sessions' streams.
	bg   sync.WaitGroup
	bgMu sync.Mutex // orders bg.Go and watch.Go after closeAll's stop
	ctx  context.Context
	stop context.CancelFunc
	// watch runs one watcher per pooled session (session); closeAll
	// waits for them after closing the sessions.
	watch sync.WaitGroup

	mu    sync.Mutex
	conns map[string]*backendConn

	// credentialError, when set, is told once per outage that a
	// backend's header reference does not resolve (credential.Transport).
	credentialError func(error)
	// credLimits bound the files and variables header references may name
	// here (SetCredentialLimits); nil: any file, any variable but the
	// gateway's own.
	credLimits *credential.Limits

	// stdio runs the edge's own instances of stdio backends (stdio.go);
	// nil: none may run.
	stdio *stdioSet
	// callers are the per-caller sessions of auth backends (percaller.go).
	callers callerSet
}

// backendConn is the pooled session of one backend. mu serializes
// connecting; calls run concurrently on the session.
type backendConn struct {
	name string
	url  string
	sse  bool // the backend speaks the legacy HTTP+SSE transport
	// stdio: the backend is a process of this edge (stdio.go); its
	// session is its instance's, which the pool never closes.
	stdio bool
	// user is the caller of a per-caller session (percaller.go); nil
	// for the shared one.
	user *userAuth

	// Backend credentials and link-local allowance (backendClient).
	cfg   events.BackendConfig
	sdk   *http.Client
	creds *credential.Transport

	// ctx is the parent of the SSE session's stream (a child of the
	// pool's); close cancels it.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	cs     *mcp.ClientSession
	closed bool // by close: no session is pooled any more
	// subs are the resource URIs subscribed to on the backend for the
	// edge's clients (subscribe.go): every new session subscribes again.
	// subsMu guards them alone and is never held across I/O (the
	// per-caller set looks at them under its own lock, which must not
	// wait on a connect that holds mu).
	subsMu sync.Mutex
	subs   map[string]bool
}

// errConnClosed: the call raced with the removal or reconfiguration of
// its backend (or with closeAll).
var errConnClosed = errors.New("backend connection closed (backend removed or reconfigured)")

// Observer is told of every backend request the pool made: its backend,
// method, duration and error (nil when it succeeded). The edge's metrics
// implement it.
type Observer interface {
	BackendCall(backend, method string, d time.Duration, err error)
}

// NewPool makes a pool whose backend requests go through hc, each under
// timeout; maxResponse bounds a response body or event (0: the default);
// obs (nil: none) is told of each request.
func NewPool(hc *http.Client, timeout time.Duration, maxResponse int64, obs Observer) *Pool {
	if maxResponse <= 0 {
		maxResponse = DefaultMaxResponse
	}
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	// The raw path's client: hc, never following a redirect (a backend
	// must not send a call, its arguments and headers, elsewhere).
	raw := *hc
	raw.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	p := &Pool{
		http:        &raw,
		timeout:     timeout,
		maxResponse: maxResponse,
		obs:         obs,
		conns:       map[string]*backendConn{},
	}
	p.sdk = &http.Client{Transport: &guardedTransport{rt: rt, limits: mcpwire.Limits{MaxMessage: maxResponse}},
		Jar: hc.Jar, Timeout: hc.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	p.client = mcp.NewClient(&mcp.Implementation{Name: "fleetgate-edge", Version: "0.1.0"}, &mcp.ClientOptions{
		Capabilities:           relayCapabilities(),
		ResourceUpdatedHandler: p.resourceUpdated,
	})
	p.ctx, p.stop = context.WithCancel(context.Background())
	if ct, ok := hc.Transport.(*h1.Transport); ok && hc.Jar == nil && hc.CheckRedirect == nil && hc.Timeout == 0 {
		p.direct = ct
	}
	// Backend link-local refusal (package backendnet): the edge's own
	// transport dials through the guard; a backend allowed link-local
	// addresses marks its requests (backendClient).
	if ct, ok := rt.(*h1.Transport); ok {
		if ht, ok := ct.GuardDial(backendnet.Control).(*http.Transport); ok {
			backendnet.Guard(ht)
		}
	}
	return p
}

// backendClient is the go-sdk client of one backend: p.sdk setting the
// backend's headers on every request (package credential: resolved now,
// on every new session and every credential.DefaultRecheck) and marking
// them with its link-local allowance (package backendnet).
func (p *Pool) backendClient(name string, cfg events.BackendConfig) (*http.Client, *credential.Transport) {
	creds := credential.NewTransport(backendnet.Scope(p.sdk.Transport, cfg.AllowLinkLocal), cfg.Headers,
		&credential.TransportOptions{Backend: name, URL: cfg.URL, OnError: p.credentialError, Limits: p.credLimits})
	hc := *p.sdk
	hc.Transport = traceTransport{creds} // trace.go
	return &hc, creds
}

// SetCredentialLimits bounds the files and environment variables the
// header references of backends may name on this edge (set before the
// first call; nil: no bound but the gateway's own variables). A reference
// out of bounds fails its backend's calls as an unresolved one: an edge
// takes references from the event log, which the edge does not trust to
// name any file of its host.
func (p *Pool) SetCredentialLimits(l *credential.Limits) { p.credLimits = l }

// OnCredentialError sets what is told, once per outage of a backend, that
// its header references do not resolve (set before the first call).
func (p *Pool) OnCredentialError(f func(error)) { p.credentialError = f }

// needsClient reports whether calls to a backend configured as cfg must go
// through its backendClient: it has headers or may reach link-local
// addresses, which the raw fast path (forward.go) does not apply.
func needsClient(cfg events.BackendConfig) bool { return len(cfg.Headers) > 0 || cfg.AllowLinkLocal }

// conn returns the pooled connection of backend name with configuration
// cfg; a change of URL, transport, headers or allow_link_local replaces it.
func (p *Pool) conn(name string, cfg events.BackendConfig) *backendConn {
	p.mu.Lock()
	old := p.conns[name]
	if old != nil && old.serves(cfg) {
		p.mu.Unlock()
		return old
	}
	c := &backendConn{name: name, url: cfg.URL, sse: isSSE(cfg), stdio: isStdio(cfg), cfg: cfg}
	c.sdk, c.creds = p.backendClient(name, cfg)
	c.ctx, c.cancel = context.WithCancel(p.ctx)
	p.conns[name] = c
	p.mu.Unlock()
	if old != nil {
		p.closeLater(old)
	}
	return c
}

// closeLater closes c on a goroutine of the pool's: CloseAll waits for it.
// Once CloseAll has begun it closes c before returning. Called without
// p.mu (close takes c.mu, which session holds while it takes bgMu).
func (p *Pool) closeLater(c *backendConn) {
	p.bgMu.Lock()
	if p.ctx.Err() == nil {
		p.bg.Go(c.close)
		p.bgMu.Unlock()
		return
	}
	p.bgMu.Unlock()
	c.close()
}

// serves reports whether c is the connection of a backend configured as
// cfg.
func (c *backendConn) serves(cfg events.BackendConfig) bool {
	return c.url == cfg.URL && c.sse == isSSE(cfg) && c.cfg.Headers.Equal(cfg.Headers) && c.cfg.AllowLinkLocal == cfg.AllowLinkLocal &&
		c.cfg.Equal(cfg)
}

// Prune closes the connections of backends not in cfgs, or configured
// otherwise there.
func (p *Pool) Prune(cfgs map[string]events.BackendConfig) {
	var gone []*backendConn
	p.mu.Lock()
	for name, c := range p.conns {
		if cfg, ok := cfgs[name]; !ok || !c.serves(cfg) {
			delete(p.conns, name)
			gone = append(gone, c)
		}
	}
	p.mu.Unlock()
	for _, c := range gone {
		p.closeLater(c)
	}
	p.pruneCallers(cfgs) // percaller.go
	if p.stdio != nil {
		p.stdio.prune(p.ctx, cfgs)
	}
}

// CloseAll closes every pooled session and waits for their watchers.
// Stopping ctx first ends every SSE stream at once.
func (p *Pool) CloseAll() {
	p.bgMu.Lock()
	p.stop()
	p.bgMu.Unlock()
	p.bg.Wait()
	p.mu.Lock()
	conns := p.conns
	p.conns = map[string]*backendConn{}
	p.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	p.closeCallers() // percaller.go
	if p.stdio != nil {
		p.stdio.closeAll()
	}
	p.watch.Wait()
	if ct, ok := p.http.Transport.(*h1.Transport); ok {
		ct.Close()
	} else {
		p.http.CloseIdleConnections()
	}
}

// close closes the pooled session, and keeps c from pooling another.
// Cancelling ctx first cuts an SSE connect in progress (it holds mu).
func (c *backendConn) close() {
	c.cancel()
	c.mu.Lock()
	cs := c.cs
	c.cs = nil
	c.closed = true
	c.mu.Unlock()
	if cs != nil && !c.stdio {
		_ = cs.Close()
	}
}

// session returns the live session, connecting if there is none.
func (p *Pool) session(ctx context.Context, c *backendConn) (*mcp.ClientSession, error) {
	if c.stdio {
		if c.isClosed() {
			return nil, fmt.Errorf("connect backend %q: %w", c.name, errConnClosed)
		}
		return p.stdioSession(ctx, c)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs != nil {
		return c.cs, nil
	}
	if c.closed {
		return nil, fmt.Errorf("connect backend %q: %w", c.name, errConnClosed)
	}
	// A new session resolves the backend's header references again.
	if err := c.creds.Refresh(); err != nil {
		return nil, fmt.Errorf("connect backend %q: %w", c.name, err)
	}
	if c.user != nil { // the caller's token first: a refusal keeps its code (percaller.go)
		if _, err := c.user.authorization(ctx); err != nil {
			return nil, fmt.Errorf("connect backend %q: %w", c.name, err)
		}
	}
	var cs *mcp.ClientSession
	end := func() {}
	var err error
	if c.sse {
		cs, end, err = p.connectSSE(ctx, c)
	} else {
		// The standalone stream carries the notifications/resources/updated
		// of the resources the edge's clients subscribed to (the edge
		// learns of catalog changes from the event log, not from it).
		t := &mcp.StreamableClientTransport{Endpoint: c.url, HTTPClient: c.sdk, MaxRetries: 2}
		proto := backendProtocol
		if p.statelessOnly != nil && p.statelessOnly(c.name) {
			// The go-sdk's client of the stateless revision (server/discover;
			// each request on its own, subscriptions on a listen stream).
			proto = statelessRevision
		}
		cs, err = p.client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: proto})
	}
	if err != nil {
		// No URL in the text: it may carry credentials.
		return nil, fmt.Errorf("connect backend %q: %w", c.name, err)
	}
	logEverything(ctx, cs)
	p.sessionNames.Store(cs, c.connName())
	for _, uri := range c.subURIs() { // the backend forgot them with its old session
		_ = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	}
	// A session the go-sdk closes on its own (a broken stream, a response
	// it could not decode) is forgotten at once, so that the next call
	// reconnects instead of failing on a closing session. The watcher
	// ends with the session; closeAll closes every session and waits for
	// the watchers. None is started once closeAll began.
	p.bgMu.Lock()
	if p.ctx.Err() != nil {
		p.bgMu.Unlock()
		_ = cs.Close()
		end()
		return nil, fmt.Errorf("connect backend %q: %w", c.name, errConnClosed)
	}
	c.cs = cs
	p.watch.Go(func() {
		_ = cs.Wait()
		p.sessionNames.Delete(cs)
		c.forget(cs)
		end() // an SSE session's stream context
	})
	p.bgMu.Unlock()
	return cs, nil
}

// logEverything asks a backend that logs for every level on the pooled
// session cs: the session is shared by every client of the edge, and each
// client's own level is applied by the edge to the log messages relayed
// on its calls' streams (relay.go). A backend that refuses keeps its own
// level.
func logEverything(ctx context.Context, cs *mcp.ClientSession) {
	if ir := cs.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Logging == nil {
		return
	}
	_ = cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"})
}

// forget clears cs if it is still the pooled session.
func (c *backendConn) forget(cs *mcp.ClientSession) {
	c.mu.Lock()
	if c.cs == cs {
		c.cs = nil
	}
	c.mu.Unlock()
}

// drop forgets cs if it is still the pooled session. A stdio session is
// its instance's: the instance sees its process end.
func (c *backendConn) drop(cs *mcp.ClientSession) {
	c.mu.Lock()
	if c.cs == cs {
		c.cs = nil
	}
	c.mu.Unlock()
	if !c.stdio {
		_ = cs.Close()
	}
}

func (c *backendConn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Do runs op on the backend's pooled session under the per-call timeout.
// When the backend no longer knows the session (it restarted) or the
// request could not be delivered, it was not processed, so op is retried
// once on a fresh session; a broken
// connection drops the session so that the next call reconnects, but the
// call is not repeated (it may have reached the backend). On an SSE
// session, whose errors do not tell, markWrites finds out whether the
// request was sent.
func Do[T any](ctx context.Context, p *Pool, backend string, cfg events.BackendConfig, method string, later *Closings, op func(context.Context, *mcp.ClientSession) (T, error)) (T, error) {
	var zero T
	c, cerr := p.connOf(ctx, backend, cfg) // percaller.go: a session per caller for auth backends (before detach drops the caller)
	ctx, cancel := detach(ctx, p.timeout, later != nil)
	defer cancel()
	start := time.Now()
	if cerr == nil && c.sse {
		op = markWrites(op)
	}
	var res T
	err := cerr
	for attempt := 0; attempt < 2 && cerr == nil; attempt++ {
		var cs *mcp.ClientSession
		cs, err = p.session(ctx, c)
		if err != nil {
			break
		}
		res, err = op(ctx, cs)
		if err == nil {
			break
		}
		if errors.Is(err, mcp.ErrSessionMissing) || notSent(err) || errors.Is(err, errNotSent) {
			c.drop(cs)
			continue
		}
		if errors.Is(err, mcp.ErrConnectionClosed) {
			c.drop(cs)
		}
		break
	}
	if p.obs != nil {
		p.obs.BackendCall(backend, method, time.Since(start), err)
	}
	if err != nil {
		return zero, callError(backend, method, err)
	}
	return res, nil
}

// callError is the *Error of a failed request of method to backend.
func callError(backend, method string, err error) *Error {
	be := backendError(backend, method, err)
	// A credential that does not resolve: the error names the
	// header and its reference (never a value).
	if re := (*credential.ResolveError)(nil); errors.As(err, &re) {
		be.Kind = "credential unresolved (" + re.Detail() + ")"
	}
	// A stdio backend this edge may not run, or whose instance is
	// down (stdio.go).
	switch {
	case errors.Is(err, stdio.ErrNotAllowed):
		be.Kind = "command not in this edge's stdio allow-list"
	case errors.Is(err, stdio.ErrDown):
		be.Kind = "stdio instance down; restarting"
	}
	// A caller's token that could not be obtained (percaller.go).
	if k := exchangeKind(err); k != "" {
		be.Kind = k
	}
	return be
}

// codeRejected is the JSON-RPC code the go-sdk client gives a request
// that its HTTP transport could not deliver ("rejected by transport", e.g.
// a pooled keep-alive connection the backend closed when it restarted).
const codeRejected = -32005

// notSent reports whether err says the request never reached the backend,
// so that retrying it on a new session cannot run it twice.
func notSent(err error) bool {
	var werr *jsonrpc.Error
	return errors.As(err, &werr) && werr.Code == codeRejected
}

// detach returns a context that ends when parent ends or after timeout but
// carries none of parent's values. The go-sdk keeps the protocol version
// of the request being served in a context value that its client would
// also send to the backend (a 2026-07-28 request would make the edge
// speak 2026-07-28 to a backend that does not).
// own says parent is the edge's own (a call lane's, made without the
// go-sdk): it is used as it is.
func detach(parent context.Context, timeout time.Duration, own bool) (context.Context, context.CancelFunc) {
	if own {
		return context.WithTimeout(parent, timeout)
	}
	ctx, cancel := context.WithTimeout(spanOnly(parent), timeout) // trace.go: the call's span
	stop := context.AfterFunc(parent, cancel)
	return ctx, func() { stop(); cancel() }
}
