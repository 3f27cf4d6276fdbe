package edge

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
	"github.com/fleetgate/fleetgate/pkg/demobackend"
)

// memNet is an in-memory network for the tests run in a synctest bubble:
// listeners by address, connections net.Pipe pairs (a goroutine blocked
// on one is durably blocked, so the bubble's clock moves past it).
type memNet struct {
	mu    sync.Mutex
	lns   map[string]*memListener
	stops map[string]func() // of the backends served (serveBackend)
}

// listen replaces ln by an in-memory listener at its address, closing it.
func (n *memNet) listen(ln net.Listener) *memListener {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.lns == nil {
		n.lns = map[string]*memListener{}
	}
	l := &memListener{addr: ln.Addr(), conns: make(chan net.Conn), done: make(chan struct{})}
	n.lns[l.addr.String()] = l
	_ = ln.Close()
	return l
}

// dial connects to the in-memory listener at addr; an address that is
// not on this network is dialed for real.
func (n *memNet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	n.mu.Lock()
	l := n.lns[addr]
	n.mu.Unlock()
	if l == nil {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	server, client := net.Pipe()
	// The client's address: a loopback port of its own.
	remote := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000 + int(l.accepted.Add(1)%20000)}
	select {
	case l.conns <- memConn{Conn: server, local: l.addr, remote: remote}:
		return memConn{Conn: client, local: remote, remote: l.addr}, nil
	case <-l.done:
		return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// transport is an HTTP transport over n.
func (n *memNet) transport() *http.Transport {
	return &http.Transport{DialContext: n.dial, ForceAttemptHTTP2: false, MaxIdleConnsPerHost: 64,
		ResponseHeaderTimeout: time.Minute}
}

// memListener is a listener of a memNet.
type memListener struct {
	addr     net.Addr
	conns    chan net.Conn
	done     chan struct{}
	once     sync.Once
	accepted atomic.Uint64
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *memListener) Addr() net.Addr { return l.addr }

// memConn is a pipe end with the addresses of a TCP connection.
type memConn struct {
	net.Conn
	local, remote net.Addr
}

func (c memConn) LocalAddr() net.Addr  { return c.local }
func (c memConn) RemoteAddr() net.Addr { return c.remote }

// serveMemoryEdge is startMemoryEdge with the whole edge run (Run): its
// MCP and admin listeners on an in-memory network that http.DefaultClient
// dials until the test ends (the package's tests do not run in
// parallel), so the helpers that speak HTTP to MCPURL and AdminURL reach
// it from inside the bubble. Call it inside a synctest bubble.
func serveMemoryEdge(t *testing.T, o *Options) *memoryEdge {
	t.Helper()
	n := &memNet{}
	tr := n.transport()
	prev := http.DefaultClient.Transport
	http.DefaultClient.Transport = tr
	t.Cleanup(func() { // after the edges' cleanups
		tr.CloseIdleConnections()
		http.DefaultClient.Transport = prev
	})
	return n.serveEdge(t, o)
}

// serveEdge is serveMemoryEdge on n: another edge of the same network
// (with a source of its own).
func (n *memNet) serveEdge(t *testing.T, o *Options) *memoryEdge {
	t.Helper()
	opts := Options{}
	if o != nil {
		opts = *o
	}
	if opts.BackendHTTPClient == nil { // backends served on n (serveBackend)
		opts.BackendHTTPClient = &http.Client{Transport: n.transport()}
	}
	m := newMemoryEdge(t, &opts)
	m.net = n
	e := m.Edge
	e.mcpLn, e.adminLn = n.listen(e.mcpLn), n.listen(e.adminLn)
	t.Cleanup(opts.BackendHTTPClient.CloseIdleConnections) // after Run ended (cleanups run last first)
	runUntilCleanup(t, t.Context(), e)
	m.catchUp(t)
	return m
}

// serveBackend serves the demo backend b at the URL the in-memory fleet
// gives backend b.Name() (http://NAME.test/mcp) until the test ends, and
// makes it advertisable with its catalog (listed by the edge's own
// client over the in-memory network).
func (m *memoryEdge) serveBackend(t *testing.T, b *demobackend.Backend) uint64 {
	t.Helper()
	return m.serveServer(t, b.Name(), b.Server())
}

// serveServer is serveBackend of the MCP server srv of backend name.
func (m *memoryEdge) serveServer(t *testing.T, name string, srv *mcp.Server) uint64 {
	t.Helper()
	ln := &memListener{addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 80} /* not loopback: the go-sdk refuses a foreign Host on loopback */, conns: make(chan net.Conn), done: make(chan struct{})}
	m.net.mu.Lock()
	if m.net.lns == nil {
		m.net.lns = map[string]*memListener{}
	}
	m.net.lns[name+".test:80"] = ln
	m.net.mu.Unlock()
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	hs := &http.Server{Handler: mux}
	done := make(chan struct{})
	go func() {
		_ = hs.Serve(ln)
		close(done)
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = hs.Close()
			<-done
			for ss := range srv.Sessions() { // the go-sdk keeps them past their connections
				_ = ss.Close()
			}
		})
	}
	t.Cleanup(stop)
	m.net.mu.Lock()
	if m.net.stops == nil {
		m.net.stops = map[string]func(){}
	}
	m.net.stops[name] = stop
	m.net.mu.Unlock()
	url := "http://" + name + ".test/mcp"
	return m.upCatalog(name, listCatalogVia(t, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: m.net.transport()}}))
}

// stopBackend stops serving backend name, as a process that died: its
// connections are cut and new ones refused.
func (m *memoryEdge) stopBackend(name string) {
	m.net.mu.Lock()
	stop := m.net.stops[name]
	m.net.mu.Unlock()
	stop()
}

// memoryAuth is bearer authentication by iss, an issuer outside the bubble
// reached over loopback: no connection is kept (a connection kept idle
// would wait on real I/O, which the bubble's clock does not pass).
func memoryAuth(iss *issuertest.Issuer) *AuthOptions {
	return &AuthOptions{Issuer: iss.URL(), HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
}
