package h1

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"syscall"
	"time"
)

// Transport is the http.RoundTripper of the edge's backend client by
// default. For a plain-HTTP/1.1 backend it makes each exchange on the
// caller's goroutine over a pooled keep-alive connection: the request is
// written with http.Request.Write and the response read with
// http.ReadResponse (the standard library's own wire code). net/http's
// Transport hands every exchange to a write goroutine and back from a read
// goroutine per connection; on a busy 2-core machine those hand-offs were
// a quarter of the edge's added latency on a tools/call.
//
// Anything else (https, a proxy from the environment, upgrades) goes to
// the fallback transport. A context that ends cuts the connection (a read
// or write in progress returns at once); the connection is then not
// reused. An idle connection is reused only if the backend has not closed
// it meanwhile (ConnAlive), so a backend restart costs no failed call.
type Transport struct {
	fallback    http.RoundTripper
	dialer      net.Dialer
	maxIdle     int           // per host
	idleTimeout time.Duration // an idle connection older than this is closed

	mu     sync.Mutex
	idle   map[string][]*wireConn // by host:port, most recent last
	closed bool

	targetCache
}

// wireConn is one connection of a Transport.
type wireConn struct {
	conn   net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	idleAt time.Time
}

func NewTransport(fallback http.RoundTripper) *Transport {
	return &Transport{fallback: fallback, maxIdle: 64, idleTimeout: 90 * time.Second,
		dialer: net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second},
		idle:   map[string][]*wireConn{}}
}

// maxInterim bounds the 1xx responses read before a response.
const maxInterim = 5

// CutDeadline is a deadline in the past: it makes every pending and later
// read and write of a connection fail at once.
var CutDeadline = time.Unix(1, 0)

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" || req.Header.Get("Upgrade") != "" || t.proxied(req) {
		return t.fallback.RoundTrip(req)
	}
	read := func(br *bufio.Reader) (*http.Response, error) { return http.ReadResponse(br, req) }
	return t.exchange(req.Context(), HostPort(req.URL), req, read, func(bw *bufio.Writer) error {
		return req.Write(bw)
	})
}

// exchange makes one exchange on a connection to addr: write writes the
// request and read reads a response (req: the request, its body closed
// when no connection is had).
func (t *Transport) exchange(ctx context.Context, addr string, req *http.Request,
	read func(*bufio.Reader) (*http.Response, error), write func(*bufio.Writer) error) (*http.Response, error) {
	bc, err := t.conn(ctx, addr)
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("%w: %w", ErrUndelivered, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = bc.conn.SetDeadline(CutDeadline) })
	fail := func(err error) (*http.Response, error) {
		stop()
		bc.conn.Close()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	// A request not written whole cannot have been taken by the backend.
	if err := write(bc.bw); err != nil {
		return fail(fmt.Errorf("%w: write request: %w", ErrUndelivered, err))
	}
	if err := bc.bw.Flush(); err != nil {
		return fail(fmt.Errorf("%w: write request: %w", ErrUndelivered, err))
	}
	var resp *http.Response
	for interim := 0; ; interim++ {
		if resp, err = read(bc.br); err != nil {
			return fail(fmt.Errorf("read response: %w", err))
		}
		// Interim 1xx responses precede the real one (a few at most; 101
		// switches protocols: not asked for here, so an error).
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		if interim == maxInterim {
			return fail(fmt.Errorf("read response: more than %d interim responses", maxInterim))
		}
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return fail(errors.New("read response: unexpected 101 Switching Protocols"))
	}
	resp.Body = &connBody{t: t, bc: bc, addr: addr, body: resp.Body, stop: stop,
		reusable: !resp.Close && !req.Close}
	return resp, nil
}

// proxied reports whether the environment routes req through a proxy.
func (t *Transport) proxied(req *http.Request) bool {
	u, err := http.ProxyFromEnvironment(req)
	return err != nil || u != nil
}

// HostPort is u's host and port, the default HTTP port when it names none.
func HostPort(u *url.URL) string {
	return net.JoinHostPort(u.Hostname(), cmp.Or(u.Port(), "80"))
}

// ErrUndelivered marks the errors of exchanges whose request the backend
// cannot have received (no connection, or the request not written whole):
// they may be sent again. An exchange that fails later (no response, or a
// cut one) may have run on the backend, so it is not marked.
var ErrUndelivered = errors.New("request not delivered")

// conn returns an idle connection to addr that is still open, or a new one.
func (t *Transport) conn(ctx context.Context, addr string) (*wireConn, error) {
	now := time.Now()
	t.mu.Lock()
	for list := t.idle[addr]; len(list) > 0; list = t.idle[addr] {
		bc := list[len(list)-1]
		t.idle[addr] = list[:len(list)-1]
		t.mu.Unlock()
		if now.Sub(bc.idleAt) < t.idleTimeout && bc.br.Buffered() == 0 && ConnAlive(bc.conn) {
			return bc, nil
		}
		bc.conn.Close()
		t.mu.Lock()
	}
	t.mu.Unlock()
	c, err := t.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return &wireConn{conn: c, br: bufio.NewReaderSize(c, 4<<10), bw: bufio.NewWriterSize(c, 4<<10)}, nil
}

// put makes bc idle, or closes it when the pool for addr is full or the
// transport closed. Idle connections past idleTimeout (the oldest, at the
// front: conn takes the newest) are closed on the way.
func (t *Transport) put(addr string, bc *wireConn) {
	bc.idleAt = time.Now()
	var stale []*wireConn
	t.mu.Lock()
	list := t.idle[addr]
	n := 0
	for n < len(list) && bc.idleAt.Sub(list[n].idleAt) >= t.idleTimeout {
		n++
	}
	stale, list = list[:n:n], list[n:]
	if t.closed || len(list) >= t.maxIdle {
		t.idle[addr] = list
		t.mu.Unlock()
		bc.conn.Close()
	} else {
		t.idle[addr] = append(list, bc)
		t.mu.Unlock()
	}
	for _, c := range stale {
		c.conn.Close()
	}
}

// Close closes the idle connections and makes every connection close when
// its exchange ends.
func (t *Transport) Close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.CloseIdleConnections()
}

// CloseIdleConnections closes the idle connections (http.Client calls it).
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = map[string][]*wireConn{}
	t.mu.Unlock()
	for _, list := range idle {
		for _, bc := range list {
			bc.conn.Close()
		}
	}
	if c, ok := t.fallback.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// connBody is a response body; at its end the connection goes back to the
// pool, if the exchange left it reusable.
type connBody struct {
	t        *Transport
	bc       *wireConn
	addr     string
	body     io.ReadCloser
	stop     func() bool
	reusable bool

	rmu      sync.Mutex // held while body is read
	mu       sync.Mutex
	done     bool
	detached bool // the context no longer cuts the connection
	cut      bool // it did, before detach
}

// Detacher is a response body whose rest can be read after the context of
// its exchange ended: Detach makes the end of that context no longer cut
// the connection (a caller that answers its own client first, and only
// then reads the end of the backend's body, detaches it).
type Detacher interface{ Detach() }

// Detach implements Detacher.
func (b *connBody) Detach() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.done && !b.detached {
		b.detached = true
		b.cut = !b.stop()
	}
}

func (b *connBody) Read(p []byte) (int, error) {
	b.rmu.Lock()
	defer b.rmu.Unlock()
	n, err := b.body.Read(p)
	if err != nil {
		b.finish(err == io.EOF)
	}
	return n, err
}

// drainLimit and drainWait bound what Close reads of a body not read to
// its end, to find that end and keep the connection: a backend ends a
// POST's event stream right after the response, so the end is usually
// already on its way.
const (
	drainLimit = 64 << 10
	drainWait  = 100 * time.Millisecond
)

// Close ends the exchange. A body not read to its end is drained a little
// (drainLimit, drainWait); if its end is not found the connection is
// closed.
func (b *connBody) Close() error {
	if !b.rmu.TryLock() {
		// A Read is in progress (Close aborts it): cut the connection.
		b.finish(false)
		return nil
	}
	defer b.rmu.Unlock()
	b.mu.Lock()
	done := b.done
	b.mu.Unlock()
	if done {
		return nil
	}
	_ = b.bc.conn.SetReadDeadline(time.Now().Add(drainWait))
	n, err := io.CopyN(io.Discard, b.body, drainLimit)
	atEOF := err == io.EOF && n < drainLimit
	if atEOF {
		atEOF = b.bc.conn.SetReadDeadline(time.Time{}) == nil
	}
	b.finish(atEOF)
	return nil
}

func (b *connBody) finish(atEOF bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.done = true
	// stop reports false when the context already ended: the connection
	// was cut.
	intact := !b.cut
	if !b.detached {
		intact = b.stop()
	}
	if intact && atEOF && b.reusable {
		b.t.put(b.addr, b.bc)
		return
	}
	b.bc.conn.Close()
}

// GuardDial makes control check every address t dials itself (before the
// connection is made: see net.Dialer.ControlContext), and returns t's
// fallback transport, which the caller guards its own way.
func (t *Transport) GuardDial(control func(ctx context.Context, network, address string, c syscall.RawConn) error) http.RoundTripper {
	t.dialer.ControlContext = control
	return t.fallback
}
