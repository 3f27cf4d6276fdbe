package edge

import (
	"fmt"
	"net"
	"net/http"
	"time"
)

// A standalone stream is taken over from net/http when it can be: the
// edge hijacks the connection, writes the response head and the chunked
// event stream itself, and lets the request goroutine go. An idle stream
// then costs one small goroutine blocked reading the connection (to see
// the client leave) instead of net/http's request goroutine, its
// connection's read goroutine and their buffers: about half of what an
// idle session held. Notifications are written by a flusher goroutine
// started when there is something to write; it ends when nothing is left.
// A client that stops reading blocks only its flusher, for at most
// streamWriteTimeout per write, and its notifications merge meanwhile.
//
// HTTP/2 connections and HTTP/1.0 requests (no chunked encoding) keep the
// held stream of stream.go.

// chunkFrames are listFrames in chunked transfer encoding.
var chunkFrames = func() (f [3][]byte) {
	for i, frame := range listFrames {
		f[i] = chunk(frame)
	}
	return f
}()

// chunk is data as one chunk of a chunked body.
func chunk(data []byte) []byte {
	return fmt.Appendf(nil, "%x\r\n%s\r\n", len(data), data)
}

// takeOver serves s's standalone stream on a hijacked connection. It
// reports false, having written nothing, when r's connection cannot be
// taken over.
func (e *Edge) takeOver(w http.ResponseWriter, r *http.Request, s *session) bool {
	if !r.ProtoAtLeast(1, 1) || r.ProtoMajor != 1 {
		return false
	}
	// Counted before the hijack, while http.Server.Shutdown still waits
	// for this request: the goroutines started below are Run's to wait for.
	if !e.hold() {
		return false
	}
	defer e.wg.Done()
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	st := &sessionStream{e: e, conn: conn}
	if brw.Reader.Buffered() > 0 {
		// The client sent more after its GET (pipelining): a request the
		// edge would have to answer after an endless one.
		st.refuse(http.StatusBadRequest, "no request may follow a stream's GET on its connection")
		return true
	}
	// The stream is claimed before its head is written, so that a second
	// GET arriving as soon as the client sees the head is refused (409),
	// and held (wmu, writing) so that nothing is written before the head.
	st.wmu.Lock()
	st.writing = true
	if code, msg := e.claim(s, st); code != 0 {
		st.wmu.Unlock()
		st.refuse(code, msg)
		return true
	}
	// A comment, so that proxies forward the head at once (as the go-sdk
	// does, its issue #410).
	err = st.writeLocked(append(streamHead(), chunk([]byte(": ok\n\n"))...))
	st.wmu.Unlock()
	e.startConn(s, st)
	if err != nil {
		conn.Close() // readConn detaches the stream
	}
	return true
}

// streamHead is the response head of a taken-over event stream. The
// connection is closed after the stream, hence Connection: close.
func streamHead() []byte {
	return []byte("HTTP/1.1 200 OK\r\nCache-Control: no-cache, no-transform\r\nConnection: close\r\n" +
		"Content-Type: text/event-stream\r\nDate: " + time.Now().UTC().Format(http.TimeFormat) +
		"\r\nTransfer-Encoding: chunked\r\n\r\n")
}

// startConn starts the reader of st, a claimed stream whose head is
// written, and sends what is pending.
func (e *Edge) startConn(s *session, st *sessionStream) {
	e.m.streams.Inc()
	e.wg.Go(func() { e.readConn(s, st) })
	if s.kind == kindSession {
		e.streamAttached(s)
	}
	s.mu.Lock()
	st.writing = false
	if s.pending != 0 || len(s.updated) > 0 {
		s.wakeLocked()
	}
	s.mu.Unlock()
}

// claim makes st s's stream. It returns the status to refuse the GET with
// when s ended or has a stream, or the edge is shutting down; 0 when st
// is attached.
func (e *Edge) claim(s *session, st *sessionStream) (code int, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.ended:
		return http.StatusNotFound, "session not found"
	case s.stream != nil:
		return http.StatusConflict, "stream ID conflicts with ongoing stream"
	case e.closing.Load():
		// Checked after the session was registered: shutdown either saw
		// it (and ends it) or raised closing first.
		return http.StatusServiceUnavailable, "edge shutting down"
	}
	s.stream = st
	return 0, ""
}

// refuse answers the hijacked GET with an error and closes the connection.
func (st *sessionStream) refuse(code int, msg string) {
	body := msg + "\n"
	_ = st.write(fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"+
		"X-Content-Type-Options: nosniff\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		code, http.StatusText(code), len(body), body))
	st.conn.Close()
}

// write writes b to the connection within streamWriteTimeout.
func (st *sessionStream) write(b []byte) error {
	st.wmu.Lock()
	defer st.wmu.Unlock()
	return st.writeLocked(b)
}

// writeLocked is write with wmu held. Nothing is written after finish.
func (st *sessionStream) writeLocked(b []byte) error {
	if st.finished {
		return net.ErrClosed
	}
	_ = st.conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	_, err := st.conn.Write(b)
	return err
}

// readConn reads the connection until the client closes it (or the edge
// does), then detaches the stream. What the client sends is discarded.
func (e *Edge) readConn(s *session, st *sessionStream) {
	var buf [64]byte
	for {
		if _, err := st.conn.Read(buf[:]); err != nil {
			break
		}
	}
	s.mu.Lock()
	if s.stream == st {
		s.stream = nil
	}
	s.mu.Unlock()
	st.conn.Close()
	e.m.streams.Dec()
	if s.kind == kindListen {
		e.forget(s) // a listen session is its stream
	}
}

// flushConn writes what is pending for s until nothing is;
// session.wakeLocked starts it.
func (e *Edge) flushConn(s *session, st *sessionStream) {
	for {
		s.mu.Lock()
		bits, ups := s.pending, s.updated
		if s.stream != st || s.ended || bits == 0 && len(ups) == 0 {
			st.writing = false
			s.mu.Unlock()
			return
		}
		s.pending, s.updated = 0, nil
		s.mu.Unlock()
		frames := &chunkFrames
		if st.frames != nil {
			frames = st.frames
		}
		write := func(i int) error {
			if id := s.eventLine(i, ""); id != nil {
				return st.write(chunk(withID(id, listFrames[i])))
			}
			return st.write(frames[i])
		}
		if !e.writePending(s, bits, write) ||
			!e.writeUpdates(s, ups, func(frame []byte) error { return st.write(chunk(frame)) }) {
			st.conn.Close() // readConn detaches the stream
			s.mu.Lock()
			st.writing = false
			s.mu.Unlock()
			return
		}
	}
}

// finish ends a taken-over stream: the end of the chunked body if it can
// be written at once, then the connection is closed.
func (st *sessionStream) finish() {
	if st.wmu.TryLock() { // a flusher blocked on a stuck client would hold it
		if !st.finished {
			_ = st.conn.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = st.conn.Write([]byte("0\r\n\r\n"))
		}
		st.finished = true
		st.wmu.Unlock()
	}
	st.conn.Close()
}
