package edge

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

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/mcpwire"
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

// pool holds one persistent go-sdk client session per backend, created on
// first use and replaced when the backend forgets it (a restart) or the
// connection breaks. A backend of the legacy HTTP+SSE transport gets an
// SSE session (ssebackend.go); every other one a streamable HTTP session.
type pool struct {
	client *mcp.Client
	http   *http.Client
	// direct is http's transport when http is the edge's default client
	// (Options.BackendHTTPClient nil), which post then calls directly.
	direct  *connTransport
	timeout time.Duration
	// maxResponse bounds a response body, or an event of an event stream
	// (Options.MaxBackendResponse); sdk is the client of the go-sdk
	// sessions: http with every response body guarded (depth, size) and
	// no redirects followed.
	maxResponse int64
	sdk         *http.Client
	m           *metrics
	ids         atomic.Uint64 // ids of raw requests (forward.go)

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
}

// backendConn is the pooled session of one backend. mu serializes
// connecting; calls run concurrently on the session.
type backendConn struct {
	name string
	url  string
	sse  bool // the backend speaks the legacy HTTP+SSE transport

	// ctx is the parent of the SSE session's stream (a child of the
	// pool's); close cancels it.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	cs     *mcp.ClientSession
	closed bool // by close: no session is pooled any more
}

// errConnClosed: the call raced with the removal or reconfiguration of
// its backend (or with closeAll).
var errConnClosed = errors.New("backend connection closed (backend removed or reconfigured)")

func newPool(hc *http.Client, timeout time.Duration, maxResponse int64, m *metrics) *pool {
	if maxResponse <= 0 {
		maxResponse = DefaultMaxBackendResponse
	}
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	p := &pool{
		client:      mcp.NewClient(&mcp.Implementation{Name: "fleetgate-edge", Version: "0.1.0"}, nil),
		http:        hc,
		timeout:     timeout,
		maxResponse: maxResponse,
		m:           m,
		conns:       map[string]*backendConn{},
	}
	p.sdk = &http.Client{Transport: &guardedTransport{rt: rt, limits: mcpwire.Limits{MaxMessage: maxResponse}},
		Jar: hc.Jar, Timeout: hc.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	p.ctx, p.stop = context.WithCancel(context.Background())
	if ct, ok := hc.Transport.(*connTransport); ok && hc.Jar == nil && hc.CheckRedirect == nil && hc.Timeout == 0 {
		p.direct = ct
	}
	return p
}

// conn returns the pooled connection of backend name with configuration
// cfg; a URL or transport change replaces it.
func (p *pool) conn(name string, cfg events.BackendConfig) *backendConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.conns[name]
	if c != nil && c.serves(cfg) {
		return c
	}
	if c != nil {
		go c.close()
	}
	c = &backendConn{name: name, url: cfg.URL, sse: isSSE(cfg)}
	c.ctx, c.cancel = context.WithCancel(p.ctx)
	p.conns[name] = c
	return c
}

// serves reports whether c is the connection of a backend configured as
// cfg.
func (c *backendConn) serves(cfg events.BackendConfig) bool {
	return c.url == cfg.URL && c.sse == isSSE(cfg)
}

// prune closes the connections of backends not in cfgs, or configured
// otherwise there.
func (p *pool) prune(cfgs map[string]events.BackendConfig) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, c := range p.conns {
		if cfg, ok := cfgs[name]; !ok || !c.serves(cfg) {
			delete(p.conns, name)
			go c.close()
		}
	}
}

// closeAll closes every pooled session and waits for their watchers.
// Stopping ctx first ends every SSE stream at once.
func (p *pool) closeAll() {
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
	p.watch.Wait()
	if ct, ok := p.http.Transport.(*connTransport); ok {
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
	if cs != nil {
		_ = cs.Close()
	}
}

// session returns the live session, connecting if there is none.
func (p *pool) session(ctx context.Context, c *backendConn) (*mcp.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs != nil {
		return c.cs, nil
	}
	if c.closed {
		return nil, fmt.Errorf("connect backend %q: %w", c.name, errConnClosed)
	}
	var cs *mcp.ClientSession
	end := func() {}
	var err error
	if c.sse {
		cs, end, err = p.connectSSE(ctx, c)
	} else {
		t := &mcp.StreamableClientTransport{Endpoint: c.url, HTTPClient: p.sdk, MaxRetries: 2,
			// The edge learns of catalog changes from the event log, not
			// from backends, so it needs no standalone stream.
			DisableStandaloneSSE: true}
		cs, err = p.client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: backendProtocol})
	}
	if err != nil {
		// No URL in the text: it may carry credentials.
		return nil, fmt.Errorf("connect backend %q: %w", c.name, err)
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
		c.forget(cs)
		end() // an SSE session's stream context
	})
	p.bgMu.Unlock()
	return cs, nil
}

// forget clears cs if it is still the pooled session.
func (c *backendConn) forget(cs *mcp.ClientSession) {
	c.mu.Lock()
	if c.cs == cs {
		c.cs = nil
	}
	c.mu.Unlock()
}

// drop forgets cs if it is still the pooled session.
func (c *backendConn) drop(cs *mcp.ClientSession) {
	c.mu.Lock()
	if c.cs == cs {
		c.cs = nil
	}
	c.mu.Unlock()
	_ = cs.Close()
}

// do runs op on the pooled streamable HTTP session of backend at url
// (doOn).
func do[T any](ctx context.Context, p *pool, backend, url, method string, op func(context.Context, *mcp.ClientSession) (T, error)) (T, error) {
	return doOn(ctx, p, backend, events.BackendConfig{URL: url}, method, op)
}

// doOn runs op on the backend's pooled session under the per-call timeout.
// When the backend no longer knows the session (it restarted) or the
// request could not be delivered, it was not processed, so op is retried
// once on a fresh session; a broken
// connection drops the session so that the next call reconnects, but the
// call is not repeated (it may have reached the backend). On an SSE
// session, whose errors do not tell, markWrites finds out whether the
// request was sent.
func doOn[T any](ctx context.Context, p *pool, backend string, cfg events.BackendConfig, method string, op func(context.Context, *mcp.ClientSession) (T, error)) (T, error) {
	var zero T
	ctx, cancel := detach(ctx, p.timeout)
	defer cancel()
	start := time.Now()
	c := p.conn(backend, cfg)
	if c.sse {
		op = markWrites(op)
	}
	var res T
	var err error
	for attempt := 0; attempt < 2; attempt++ {
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
	p.m.backendCall(backend, method, time.Since(start), err)
	if err != nil {
		return zero, backendError(backend, method, err)
	}
	return res, nil
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
func detach(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := parent.Value(laterKey{}).(*closings); ok {
		// A call lane's context: made by the edge, never by the go-sdk.
		return context.WithTimeout(parent, timeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	if c := parent.Value(laterKey{}); c != nil { // not the go-sdk's: the edge's own
		ctx = context.WithValue(ctx, laterKey{}, c)
	}
	stop := context.AfterFunc(parent, cancel)
	return ctx, func() { stop(); cancel() }
}
