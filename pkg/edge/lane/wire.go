package lane

import (
	"bufio"
	"context"
	"errors"
	"maps"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/internal/h1"
)

// errLaneLimit ends a read past what a lane keeps of one request.
var errLaneLimit = errors.New("call lane: request too large to keep")

// laneSource is what a lane's bufio.Reader reads: the connection, after
// the bytes the hijack left buffered. It keeps every byte read since the
// current request began (up to a bound), so that the request can be given
// back to the server as it came.
type laneSource struct {
	conn    net.Conn
	pending []byte // read by the server before the hijack, not yet by the lane
	rec     []byte // read since the current request began
	limit   int    // bound of len(rec) for the current request
}

// record starts a request: what br holds unread is its beginning, and at
// most limit more bytes are read for its head.
func (s *laneSource) record(br *bufio.Reader, limit int) {
	if cap(s.rec) > 64<<10 { // a large request's buffer is not kept
		s.rec = nil
	}
	buffered, _ := br.Peek(br.Buffered())
	s.rec = append(s.rec[:0], buffered...)
	s.limit = len(s.rec) + limit
}

// extend allows n more bytes (a body) for the current request.
func (s *laneSource) extend(n int) { s.limit = len(s.rec) + n }

func (s *laneSource) Read(p []byte) (int, error) {
	room := s.limit - len(s.rec)
	if room <= 0 {
		return 0, errLaneLimit
	}
	if len(p) > room {
		p = p[:room]
	}
	var n int
	var err error
	if len(s.pending) > 0 {
		n = copy(p, s.pending)
		s.pending = s.pending[n:]
	} else {
		n, err = s.conn.Read(p)
	}
	s.rec = append(s.rec, p[:n]...)
	return n, err
}

// replay is every byte of the connection from the current request's
// beginning that the lane took from it.
func (s *laneSource) replay() []byte { return append(s.rec, s.pending...) }

// replayConn is a connection given back to the server: reads return the
// bytes a lane had taken first. It also keeps what decides whether the
// connection may become a lane again (see mayLane); the server's requests
// on one connection run one at a time, so these need no lock.
type replayConn struct {
	net.Conn
	replay []byte

	lanedCalls int // calls the lane answered before it gave the connection back
	streak     int // plain calls the server answered on it in a row since
}

// replayConnKey is the context key of a request's *replayConn (set by the
// server's ConnContext).
type replayConnKey struct{}

// replayConnOf is the replayConn r came on, or nil.
func replayConnOf(r *http.Request) *replayConn {
	rc, _ := r.Context().Value(replayConnKey{}).(*replayConn)
	return rc
}

// laneConnContext is the MCP server's ConnContext: it makes a given-back
// connection known to its requests.
func laneConnContext(ctx context.Context, c net.Conn) context.Context {
	if rc, ok := c.(*replayConn); ok {
		return context.WithValue(ctx, replayConnKey{}, rc)
	}
	return ctx
}

// mayLane reports whether a plain call on c may make it a lane: not while
// calls and other requests alternate on it one by one (each would move the
// connection between the server and a lane, which costs more than the
// lane saves); again after two plain calls in a row.
func (c *replayConn) mayLane() bool {
	return c == nil || c.lanedCalls >= 2 || c.streak >= 2
}

// plainCall notes a plain call the server answered on c.
func (c *replayConn) plainCall() {
	if c != nil {
		c.streak++
	}
}

// countStreaks wraps the MCP handler: any request on a given-back
// connection other than a plain call the server answered ends the streak.
func countStreaks(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := replayConnOf(r)
		if rc == nil {
			h.ServeHTTP(w, r)
			return
		}
		before := rc.streak
		h.ServeHTTP(w, r)
		if rc.streak == before {
			rc.streak = 0
		}
	})
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.replay) > 0 {
		n := copy(p, c.replay)
		if c.replay = c.replay[n:]; len(c.replay) == 0 {
			c.replay = nil // the lane's buffer is not kept
		}
		return n, nil
	}
	return c.Conn.Read(p)
}

// CloseWrite closes the connection's writing side, as the server does
// after some errors, when the connection can.
func (c *replayConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// laneHandback is a listener the edge's MCP server serves besides its
// own: its connections are the ones lanes give back.
type laneHandback struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newLaneHandback(addr net.Addr) *laneHandback {
	return &laneHandback{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

// hand gives c to the server; false when the listener is closed.
func (h *laneHandback) hand(c net.Conn) bool {
	select {
	case h.conns <- c:
		return true
	case <-h.done:
		return false
	}
}

// Accept implements net.Listener.
func (h *laneHandback) Accept() (net.Conn, error) {
	select {
	case c := <-h.conns:
		return c, nil
	case <-h.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener.
func (h *laneHandback) Close() error {
	h.once.Do(func() { close(h.done) })
	return nil
}

// Addr implements net.Listener: the MCP listener's address.
func (h *laneHandback) Addr() net.Addr { return h.addr }

// Writer is the http.ResponseWriter of a call answered on a lane (or
// about to make its connection one): the response is kept whole, then
// written by writeTo.
type Writer struct {
	header http.Header
	status int
	body   []byte
	close  bool               // the connection ends after it: Connection: close
	later  *backend.Closings  // of a call lane: closed after the response is written
	cancel context.CancelFunc // of a call lane: ends the call's context (CallCancel)
}

func (w *Writer) Header() http.Header { return w.header }

func (w *Writer) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *Writer) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.body = append(w.body, p...)
	return len(p), nil
}

// writeTo writes the response as an HTTP/1.1 response of a kept-alive
// connection, with the Date and Content-Length the server would add.
func (w *Writer) writeTo(bw *bufio.Writer, now time.Time) error {
	w.WriteHeader(http.StatusOK)
	for _, k := range []string{"Content-Length", "Transfer-Encoding", "Connection"} {
		delete(w.header, k)
	}
	b := bw.AvailableBuffer()
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(w.status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(w.status)...)
	if w.close {
		b = append(b, "\r\nConnection: close"...)
	}
	b = append(b, "\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(w.body)), 10)
	if _, ok := w.header["Date"]; !ok {
		b = append(b, "\r\nDate: "...)
		b = append(b, httpDate(now)...)
	}
	b = append(b, "\r\n"...)
	if ct := w.header["Content-Type"]; len(w.header) == 1 && len(ct) == 1 && h1.HeaderValue([]byte(ct[0])) {
		// A call's response: its one header written as is.
		b = append(b, "Content-Type: "...)
		b = append(b, ct[0]...)
		b = append(b, "\r\n"...)
		_, _ = bw.Write(b)
	} else {
		_, _ = bw.Write(b)
		if err := w.header.Write(bw); err != nil {
			return err
		}
	}
	_, _ = bw.WriteString("\r\n")
	_, _ = bw.Write(w.body)
	return bw.Flush()
}

// copyTo writes the response through a server's ResponseWriter.
func (w *Writer) copyTo(rw http.ResponseWriter) {
	maps.Copy(rw.Header(), w.header)
	rw.WriteHeader(max(w.status, http.StatusOK))
	_, _ = rw.Write(w.body)
}

// addLane registers l; false when shutdown began (l must close).
func (e *Server) addLane(l *callLane) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.shut.Load() {
		return false
	}
	e.lanes[l] = struct{}{}
	return true
}

func (e *Server) removeLane(l *callLane) {
	e.mu.Lock()
	delete(e.lanes, l)
	e.mu.Unlock()
}

// closeLanes closes the idle lanes (with all, every lane: its call is
// cancelled and its connection cut) and keeps new ones from starting.
func (e *Server) Close(all bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.shut.Store(true)
	for l := range e.lanes {
		switch {
		case l.state.CompareAndSwap(laneIdle, laneClosed):
			_ = l.conn.SetReadDeadline(h1.CutDeadline)
		case all:
			l.state.Store(laneClosed)
			_ = l.conn.SetDeadline(h1.CutDeadline)
			l.w.cancelCall()
		}
	}
}

// dateCache is the Date value of the current second.
var dateCache atomic.Pointer[cachedDate]

type cachedDate struct {
	sec   int64
	value string
}

// httpDate is now as a Date header value, formatted once a second.
func httpDate(now time.Time) string {
	sec := now.Unix()
	if d := dateCache.Load(); d != nil && d.sec == sec {
		return d.value
	}
	d := &cachedDate{sec: sec, value: now.UTC().Format(http.TimeFormat)}
	dateCache.Store(d)
	return d.value
}
