package lane

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/internal/callstages"
	"github.com/fleetgate/fleetgate/pkg/edge/internal/h1"
)

// laneWatchAfter is how long a call runs on a lane before the lane starts
// watching for the client leaving.
const laneWatchAfter = 20 * time.Millisecond

// maxLaneHeader bounds a request's head on a lane (net/http's default
// MaxHeaderBytes, plus its slack).
const maxLaneHeader = 1<<20 + 4096

// lane states.
const (
	laneActive int32 = iota // reading or answering a request
	laneIdle                // waiting for the next request
	laneClosed              // shutdown closed it
)

// callLane is one connection served as a lane.
type callLane struct {
	e      *Server
	conn   net.Conn
	src    *laneSource
	br     *bufio.Reader
	bw     *bufio.Writer
	base   context.Context // of the calls: the hijacked request's values
	state  atomic.Int32
	later  backend.Closings // of the current call
	lw     *Writer          // the current call's response (writer): one per lane
	w      laneWatch
	remote string // the client's address
	// handedBack: the server has the connection now.
	handedBack bool
	calls      int // answered, the first included
}

// laneable reports whether the connection of r may become a lane after
// its response: HTTP/1.1, kept alive, no 100-continue.
func (s *Server) laneable(r *http.Request) bool {
	return !s.o.Disabled && r.ProtoMajor == 1 && r.ProtoMinor == 1 && !r.Close &&
		r.Header.Get("Expect") == "" && r.Header.Get("Upgrade") == ""
}

// Run hijacks the connection of r, writes the response the edge left in
// lw, and serves the connection as a lane. It takes over one count of the
// edge's posting (Edge.Posting: released once lw is written); release
// gives back the call slots of r (before the response is written).
func (s *Server) Run(w http.ResponseWriter, r *http.Request, lw *Writer, release func()) {
	e := s
	if e.shut.Load() || !e.o.Hijacks.Hold() { // shutting down: no new lane
		lw.copyTo(w)
		e.o.Edge.Posting(-1)
		return
	}
	defer e.o.Hijacks.Done()
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		lw.copyTo(w)
		e.o.Edge.Posting(-1)
		return
	}
	// The hijacked reader may hold bytes the client sent after r; it must
	// not read further (the server's reader is done with the connection).
	pending := make([]byte, brw.Reader.Buffered())
	_, _ = brw.Reader.Read(pending)
	if rc, ok := conn.(*replayConn); ok {
		// A connection a lane gave back before: the lane reads the
		// connection itself, after what the server left of the replay,
		// so that wrappers do not pile up as requests alternate.
		conn, pending = rc.Conn, append(pending, rc.replay...)
	}
	// The server may have left deadlines on the connection.
	_ = conn.SetDeadline(time.Time{})
	l := &callLane{e: e, conn: conn, bw: brw.Writer, remote: r.RemoteAddr}
	defer func() { // also when a call panics (the server recovers, but does not close a hijacked connection)
		if !l.handedBack {
			l.conn.Close()
		}
	}()
	// The calls' contexts have the server's values (its address), not the
	// first request's; the lane, not the server's connection, ends them.
	base := context.Background()
	for _, k := range []any{http.ServerContextKey, http.LocalAddrContextKey} {
		if v := r.Context().Value(k); v != nil {
			base = context.WithValue(base, k, v)
		}
	}
	l.base = base
	l.src = &laneSource{conn: conn, pending: pending}
	l.br = bufio.NewReaderSize(l.src, 4<<10)
	// Registered before the first write, so that shutdown can cut a write
	// to a client that does not read.
	registered := e.addLane(l)
	if registered {
		e.lanesGauge.Inc()
		defer e.lanesGauge.Dec()
		defer e.removeLane(l)
		defer l.w.stop()
	} else {
		// Shutdown began since the check above; closeLanes cannot cut
		// this write: it gets the drain's time at most.
		_ = conn.SetWriteDeadline(time.Now().Add(e.o.ShutdownTimeout))
	}
	release() // the call returned: its slots go back before the response is written
	keep := func() bool {
		defer e.o.Edge.Posting(-1)
		return l.respond(lw, !registered)
	}()
	l.calls++
	if keep {
		l.serve()
	}
}

// serve answers requests until one goes back to the server or the
// connection ends.
func (l *callLane) serve() {
	for l.next() && l.request() {
	}
}

// request serves one request, counted in e.posting from its first byte
// (shutdown's drain waits for it as the server waits for an active
// connection). It reports whether the lane goes on.
func (l *callLane) request() bool {
	l.e.o.Edge.Posting(1)
	defer l.e.o.Edge.Posting(-1)
	if l.state.Load() == laneClosed { // cut after the drain: too late
		return false
	}
	callstages.Begin()
	req := l.readHead()
	callstages.Mark(callstages.HeadRead)
	// The token is checked on the head; the body is read before the gate
	// sees the request (it checks the body too); a request of another kind
	// goes back to the server with its bytes, and the server's handler
	// asks the gate again. Refusals of the token and of the rate limits
	// are answered here, so that nothing is counted twice.
	var answer func(http.ResponseWriter, *http.Request) bool
	release := func() {}
	refuse := func(f *admission.Refusal, closing bool) func(http.ResponseWriter, *http.Request) bool {
		return func(w http.ResponseWriter, r *http.Request) bool {
			if lw, ok := w.(*Writer); ok && closing {
				lw.close = true // the body was not read: the connection ends after the refusal
			}
			l.e.o.Edge.Refuse(w, r, f)
			return true
		}
	}
	// The call's own context, made before the token is checked so that
	// the request authenticated is the one the call runs with (one copy
	// of the request, not two): the server's values, ended by the lane
	// (its watch, shutdown) and once the request is done.
	ctx, cancel := context.WithCancel(l.base)
	defer cancel()
	if req != nil && laneCandidate(req) {
		req = req.WithContext(ctx)
		// The client's address, as on the server: failed authentications
		// are charged to it.
		req.RemoteAddr = l.remote
		areq, f := l.e.o.Edge.Authenticate(req)
		callstages.Mark(callstages.Authenticated)
		switch {
		case f != nil:
			// A small body is read past, so that the connection goes on;
			// a larger one is not read at all: the connection ends.
			small := req.ContentLength >= 0 && req.ContentLength <= unauthenticatedBody
			answer = refuse(f, !(small && l.readBody(req)))
		case l.readBody(areq):
			a, rel, f := l.e.o.Edge.Admit(areq)
			callstages.Mark(callstages.Admitted)
			if a != nil || f != nil {
				req, answer, release = areq, a, rel
				if f != nil { // limited only when answered here
					answer = refuse(f, false)
				}
			}
		}
	}
	given := false
	giveBack := func() { // once: after the call returned, or when the lane ends here
		if !given {
			given = true
			release()
		}
	}
	defer giveBack()
	if answer == nil {
		giveBack()
		l.handBack()
		return false
	}
	answered, keep := l.call(req, cancel, answer, giveBack)
	if !answered {
		l.handBack()
		return false
	}
	return keep
}

// call answers a request with answer (fastCall or statelessCall); req's
// context is the call's own, which cancel ends. It reports whether answer
// took it and whether the connection goes on after the response.
// release gives back the call's slots once it returned (before its
// response is written: a slot is held while the call runs).
func (l *callLane) call(req *http.Request, cancel context.CancelFunc, answer func(http.ResponseWriter, *http.Request) bool, release func()) (answered, keep bool) {
	defer l.later.Close() // the backend bodies' ends (and what else waits for the response), after the response
	lw := l.writer(cancel)
	l.watch(cancel)
	if l.state.Load() == laneClosed {
		cancel() // closeLanes cut the lane before the watch had the call
	}
	answered = answer(lw, req)
	callstages.Mark(callstages.Built)
	release()
	l.unwatch()
	if !answered {
		return false, false
	}
	l.calls++
	return true, l.respond(lw, false)
}

// maxKeptBody is the largest response body whose buffer a lane keeps for
// its next call: an idle lane holds at most this much (16,384 idle lanes
// of large answers would otherwise pin a GiB).
const maxKeptBody = 4 << 10

// writer is the Writer of a call that cancel ends: the lane's, emptied
// (a call's response is written before the next call begins, and nothing
// keeps a Writer past its call), so that a call allocates none.
func (l *callLane) writer(cancel context.CancelFunc) *Writer {
	w := l.lw
	if w == nil {
		w = &Writer{header: make(http.Header, 1)}
		l.lw = w
	}
	clear(w.header)
	body := w.body[:0]
	if cap(body) > maxKeptBody {
		body = nil
	}
	*w = Writer{header: w.header, body: body, later: &l.later, cancel: cancel}
	return w
}

// respond writes lw. During shutdown (or with closing) the response says
// Connection: close, as the server's then do, and respond reports false:
// the connection ends after it.
func (l *callLane) respond(lw *Writer, closing bool) bool {
	lw.close = lw.close || closing || l.e.shut.Load()
	ok := lw.writeTo(l.bw, time.Now()) == nil && !lw.close
	callstages.End()
	return ok
}

// maxLeadingCRLF is how many CR or LF bytes before a request the lane
// skips, as the server does after a POST.
const maxLeadingCRLF = 4

// next waits for the next request and starts recording it. It reports
// false when the connection ended or shutdown closed the lane.
func (l *callLane) next() bool {
	for skipped := 0; ; {
		l.src.record(l.br, maxLaneHeader)
		if !l.waitRequest() {
			return false
		}
		for skipped < maxLeadingCRLF && l.br.Buffered() > 0 {
			if b, _ := l.br.Peek(1); b[0] != '\r' && b[0] != '\n' {
				break
			}
			_, _ = l.br.Discard(1)
			skipped++
		}
		if l.br.Buffered() > 0 {
			l.src.record(l.br, maxLaneHeader) // the request begins here
			return true
		}
	}
}

// readHead reads the head of the next request when it has the plain form
// of a call (h1.ParseLaneHead); nil for any other, which goes back to the
// server.
func (l *callLane) readHead() *http.Request {
	deadline := time.Now().Add(l.e.o.HeaderTimeout)
	for {
		buf, _ := l.br.Peek(l.br.Buffered())
		if req, n, ok := h1.ParseLaneHead(buf); ok {
			_, _ = l.br.Discard(n)
			return req
		}
		if headEnded(buf) || len(buf) >= l.br.Size() {
			return nil // whole and of another form, or longer than a call's
		}
		_ = l.conn.SetReadDeadline(deadline)
		_, err := l.br.Peek(len(buf) + 1)
		_ = l.conn.SetReadDeadline(time.Time{})
		if err != nil || l.state.Load() == laneClosed { // (the reset may have undone a cut)
			return nil
		}
	}
}

// headEnded reports whether buf holds a request head's end, with the
// bare-LF line ends the server also takes.
func headEnded(buf []byte) bool {
	return bytes.Contains(buf, []byte("\r\n\r\n")) || bytes.Contains(buf, []byte("\n\n")) ||
		bytes.Contains(buf, []byte("\n\r\n"))
}

// readBody reads req's body (of req.ContentLength bytes) whole, before
// the call, so that only the watch reads the connection meanwhile. It
// reports false for a body larger than Options.MaxBody or one cut short. The
// buffer grows as the body comes.
func (l *callLane) readBody(req *http.Request) bool {
	n := req.ContentLength
	if n > l.e.o.MaxBody {
		return false
	}
	l.src.extend(int(n))
	var body []byte
	var err error
	if int64(l.br.Buffered()) < n { // the rest must come within the body deadline
		_ = l.conn.SetReadDeadline(time.Now().Add(l.e.o.BodyTimeout))
		defer l.conn.SetReadDeadline(time.Time{})
	}
	if n <= 64<<10 {
		body = make([]byte, n)
		_, err = io.ReadFull(l.br, body)
	} else if body, err = io.ReadAll(io.LimitReader(l.br, n)); err == nil && int64(len(body)) < n {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return false
	}
	l.src.extend(maxLaneHeader) // room for the watch's read of what follows
	req.Body = l.e.o.Edge.Body(body)
	return true
}

// waitRequest waits for the first byte of the next request. It reports
// false when the connection ended or shutdown closed the lane.
func (l *callLane) waitRequest() bool {
	if l.br.Buffered() == 0 {
		// Idle before closeLanes looks (it then cuts the read) or after it
		// raised lanesShut (seen here).
		if !l.state.CompareAndSwap(laneActive, laneIdle) || l.e.shut.Load() {
			return false
		}
		// An idle connection is closed after IdleTimeout, as the server
		// closes its idle keep-alive connections.
		_ = l.conn.SetReadDeadline(time.Now().Add(l.e.o.IdleTimeout))
		if _, err := l.br.Peek(1); err != nil {
			return false
		}
		if !l.state.CompareAndSwap(laneIdle, laneActive) {
			return false // closed by shutdown meanwhile, as the server closes idle connections
		}
		_ = l.conn.SetReadDeadline(time.Time{})
	}
	return !l.e.shut.Load()
}

// laneWatch notices a client leaving during a long call: after
// laneWatchAfter its timer starts a read of the connection, which cancels
// the call if the connection ends.
type laneWatch struct {
	timer  *time.Timer
	mu     sync.Mutex
	cancel context.CancelFunc // the current call's; nil between calls
	done   chan struct{}      // closed when the read ends; nil if none began
}

// watch arms the watch for a call that cancel cancels.
func (l *callLane) watch(cancel context.CancelFunc) {
	w := &l.w
	w.mu.Lock()
	w.cancel, w.done = cancel, nil
	w.mu.Unlock()
	if w.timer == nil {
		w.timer = time.AfterFunc(laneWatchAfter, l.startWatch)
	} else {
		w.timer.Reset(laneWatchAfter)
	}
}

// startWatch is the timer's: it starts the read.
func (l *callLane) startWatch() {
	w := &l.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel == nil || w.done != nil { // the call ended, or a stale firing
		return
	}
	done, cancel := make(chan struct{}), w.cancel
	w.done = done
	go func() {
		defer close(done)
		if _, err := l.br.Peek(1); err != nil && !isTimeout(err) {
			cancel()
		}
	}()
}

// cancelCall cancels the call in progress, if any (shutdown, past its
// drain).
func (w *laneWatch) cancelCall() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel != nil {
		w.cancel()
	}
}

// stop stops the timer for good (the lane ended).
func (w *laneWatch) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

// unwatch disarms the watch and waits for its read, if one began, to
// end; bytes it read (a next request) stay buffered.
func (l *callLane) unwatch() {
	w := &l.w
	w.timer.Stop()
	w.mu.Lock()
	done := w.done
	w.cancel, w.done = nil, nil
	w.mu.Unlock()
	if done != nil {
		_ = l.conn.SetReadDeadline(h1.CutDeadline)
		<-done
		_ = l.conn.SetReadDeadline(time.Time{})
	}
}

// isTimeout reports whether err is a deadline's.
func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// handBack gives the connection, with the bytes read of the current
// request, to the http.Server. When the server no longer takes
// connections (shutdown), the client gets 503.
func (l *callLane) handBack() {
	e := l.e
	e.handbacks.Inc()
	c := &replayConn{Conn: l.conn, replay: l.src.replay(), lanedCalls: l.calls}
	if l.handedBack = e.handback.hand(c); !l.handedBack {
		_, _ = l.bw.WriteString("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
		_ = l.bw.Flush()
		l.conn.Close()
	}
}

// unauthenticatedBody is the largest body a lane reads of a request whose
// token was refused (to keep the connection).
const unauthenticatedBody = 64 << 10

// laneCandidate reports whether r could be answered on a lane at all: a
// POST to /mcp (its body is then worth reading there).
func laneCandidate(r *http.Request) bool {
	return r.Method == http.MethodPost && r.URL.Path == "/mcp" && r.URL.RawPath == ""
}

// The wire parts of call lanes: what a lane reads, what it
// writes, and the way back to the http.Server.
