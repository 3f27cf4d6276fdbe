package session

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/internal/h1"
)

// A standalone stream is taken over from net/http when it can be: the
// edge hijacks the connection, writes the response head and the chunked
// event stream itself, and lets the request goroutine go. An idle stream
// then costs one small goroutine blocked reading the connection (to see
// the client leave) instead of net/http's request goroutine, its
// connection's read goroutine and their buffers: about half of what an
// idle session held. A change told to the session is written at once by
// the teller, as far as the socket takes it without waiting (tellLocked,
// flushNow: one system call, no goroutine woken, no deadline set); what
// the socket does not take, and anything owed otherwise, is written by a
// flusher goroutine started when there is something to write; it ends
// when nothing is left. A client that stops reading blocks only its
// flusher, for at most StreamWriteTimeout per write, and its
// notifications merge meanwhile.
//
// HTTP/2 connections and HTTP/1.0 requests (no chunked encoding) keep the
// held stream of stream.go.

// chunkFrames are listFrames in chunked transfer encoding.
var chunkFrames = func() (f [3][]byte) {
	for i, frame := range listFrames {
		f[i] = Chunk(frame)
	}
	return f
}()

// Chunk is data as one chunk of a chunked body.
func Chunk(data []byte) []byte {
	return fmt.Appendf(nil, "%x\r\n%s\r\n", len(data), data)
}

// takeOver serves s's standalone stream on a hijacked connection. It
// reports false, having written nothing, when r's connection cannot be
// taken over.
func (s *Session) takeOver(w http.ResponseWriter, r *http.Request) bool {
	if !r.ProtoAtLeast(1, 1) || r.ProtoMajor != 1 {
		return false
	}
	hj := s.reg.o.Hijacks
	// Counted before the hijack, while http.Server.Shutdown still waits
	// for this request: the goroutines started below are the owner's to
	// wait for.
	if !hj.Hold() {
		return false
	}
	defer hj.Done()
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	if brw.Reader.Buffered() > 0 {
		// The client sent more after its GET (pipelining): a request the
		// edge would have to answer after an endless one.
		(&stream{conn: conn}).refuse(http.StatusBadRequest, "no request may follow a stream's GET on its connection")
		return true
	}
	// A comment, so that proxies forward the head at once (as the go-sdk
	// does, its issue #410).
	s.Attach(conn, append(streamHead(), Chunk([]byte(": ok\n\n"))...), nil)
	return true
}

// Attach makes conn, a hijacked connection, s's stream: it writes head
// (the response head and the first chunks), then the list_changed frames
// (chunks, by ListIndex; nil: a session stream's own, with event ids) as
// they are owed, until the client or the session goes. It reports false,
// having answered conn with an error and closed it, when s ended or has a
// stream, or the registry is closed. The caller holds a Hijacks count.
func (s *Session) Attach(conn net.Conn, head []byte, frames *[3][]byte) bool {
	st := &stream{conn: conn, frames: frames, raw: h1.RawConn(conn)}
	// The stream is claimed before its head is written, so that a second
	// GET arriving as soon as the client sees the head is refused (409),
	// and held (wmu, writing) so that nothing is written before the head.
	st.wmu.Lock()
	st.writing = true
	if code, msg := s.claim(st); code != 0 {
		st.wmu.Unlock()
		st.refuse(code, msg)
		return false
	}
	err := st.writeLocked(head)
	st.wmu.Unlock()
	s.startConn(st)
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

// StreamHead is the response head of a taken-over event stream (see
// Attach).
func StreamHead() []byte { return streamHead() }

// startConn starts the reader of st, a claimed stream whose head is
// written, and sends what is pending.
func (s *Session) startConn(st *stream) {
	g := s.reg
	g.streams(1)
	g.o.Hijacks.Go(func() { s.readConn(st) })
	if s.kind == KindSession {
		g.obs.StreamAttached(s)
	}
	s.mu.Lock()
	st.writing = false
	if s.pending != 0 || len(s.updated) > 0 {
		s.wakeLocked()
	}
	s.mu.Unlock()
}

// claim makes st s's stream. It returns the status to refuse the GET with
// when s ended or has a stream, or the registry is closed; 0 when st is
// attached.
func (s *Session) claim(st *stream) (code int, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.ended:
		return http.StatusNotFound, "session not found"
	case s.stream != nil:
		return http.StatusConflict, "stream ID conflicts with ongoing stream"
	case s.reg.closing.Load():
		// Checked after the session was registered: shutdown either saw
		// it (and ends it) or closed the registry first.
		return http.StatusServiceUnavailable, "edge shutting down"
	}
	s.stream = st
	return 0, ""
}

// Refuse answers a hijacked request on conn with an error and closes it.
func Refuse(conn net.Conn, code int, msg string) { (&stream{conn: conn}).refuse(code, msg) }

// refuse answers the hijacked GET with an error and closes the connection.
func (st *stream) refuse(code int, msg string) {
	body := msg + "\n"
	_ = st.write(fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"+
		"X-Content-Type-Options: nosniff\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		code, http.StatusText(code), len(body), body))
	st.conn.Close()
}

// write writes b to the connection within StreamWriteTimeout, after
// what a fan-out left (rest).
func (st *stream) write(b []byte) error {
	st.wmu.Lock()
	defer st.wmu.Unlock()
	return st.writeLocked(b)
}

// writeLocked is write with wmu held. Nothing is written after finish.
// The deadline is cleared after the write: a fan-out's write (tryWrite)
// does not set one, and would find an old one passed.
func (st *stream) writeLocked(b []byte) error {
	if st.finished {
		return net.ErrClosed
	}
	if len(st.rest) > 0 {
		b, st.rest = append(st.rest, b...), nil
	}
	if len(b) == 0 {
		return nil
	}
	_ = st.conn.SetWriteDeadline(time.Now().Add(StreamWriteTimeout))
	_, err := st.conn.Write(b)
	_ = st.conn.SetWriteDeadline(time.Time{})
	return err
}

// tryWrite writes b to the connection as far as its socket takes it at
// once, without waiting; what it does not take is queued in rest for the
// flusher (flushConn), as is all of b behind a rest already queued. An
// error is the connection's.
func (st *stream) tryWrite(b []byte) error {
	st.wmu.Lock()
	defer st.wmu.Unlock()
	if st.finished {
		return net.ErrClosed
	}
	if len(st.rest) == 0 {
		n, err := h1.TryWrite(st.raw, b)
		if err != nil {
			return err
		}
		b = b[n:]
	}
	st.rest = append(st.rest, b...) // a copy: b may be a shared frame
	return nil
}

// readConn reads the connection until the client closes it (or the edge
// does), then detaches the stream. What the client sends is discarded.
func (s *Session) readConn(st *stream) {
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
	s.reg.streams(-1)
	if s.kind == KindListen {
		s.reg.Forget(s) // a listen session is its stream
	}
}

// flushConn writes what a fan-out left in st.rest, then what is pending
// for s until nothing is; Session.wakeLocked and flushNow start it.
func (s *Session) flushConn(st *stream) {
	if st.write(nil) != nil {
		st.conn.Close() // readConn detaches the stream
		s.mu.Lock()
		st.writing = false
		s.mu.Unlock()
		return
	}
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
		if !s.writePending(bits, func(i int) error { return st.write(s.listChunk(st, i)) }) ||
			!s.writeUpdates(ups, func(frame []byte) error { return st.write(Chunk(frame)) }) {
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
func (st *stream) finish() {
	if st.wmu.TryLock() { // a flusher blocked on a stuck client would hold it
		if !st.finished && len(st.rest) == 0 { // not after a chunk's head
			_ = st.conn.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = st.conn.Write([]byte("0\r\n\r\n"))
		}
		st.finished = true
		st.wmu.Unlock()
	}
	st.conn.Close()
}

// tellLocked wakes s's stream for a change being told (Apply, Give,
// Notify). A taken-over stream without a flusher is returned claimed
// (writing), for the caller to write at once with flushNow once s.mu is
// unlocked; any other stream is woken as wakeLocked does. s.mu is held.
func (s *Session) tellLocked() *stream {
	if st := s.stream; st != nil && st.conn != nil && !st.writing {
		st.writing = true
		return st
	}
	s.wakeLocked()
	return nil
}

// flushNow writes to st, a stream tellLocked claimed (nil: nothing), the
// list_changed notifications pending for s, on the caller's goroutine and
// without waiting: to a client that reads, a fan-out writes each session
// one frame in one system call, with no goroutine started or woken and
// no deadline set. What the socket does not take at once, what is owed
// meanwhile and resources/updated are left to a flusher goroutine
// (flushConn), which waits for the client within StreamWriteTimeout as
// before: a client that does not read delays nobody else.
func (s *Session) flushNow(st *stream) {
	if st == nil {
		return
	}
	s.mu.Lock()
	bits := s.pending
	if s.stream != st || s.ended || bits == 0 || len(s.updated) > 0 {
		s.mu.Unlock()
		s.reg.o.Hijacks.Go(func() { s.flushConn(st) }) // it ends, or writes these
		return
	}
	s.pending = 0
	s.mu.Unlock()
	if !s.writePending(bits, func(i int) error { return st.tryWrite(s.listChunk(st, i)) }) {
		st.conn.Close() // readConn detaches the stream
		s.mu.Lock()
		st.writing = false
		s.mu.Unlock()
		return
	}
	st.wmu.Lock()
	queued := len(st.rest) > 0
	st.wmu.Unlock()
	s.mu.Lock()
	if !queued && (s.stream != st || s.ended || s.pending == 0 && len(s.updated) == 0) {
		st.writing = false
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.reg.o.Hijacks.Go(func() { s.flushConn(st) })
}

// listChunk is the chunk of list kind i (a ListIndex) on st: on a
// session's stream its frame with the id of a new event, else the
// stream's shared frame.
func (s *Session) listChunk(st *stream, i int) []byte {
	if s.kind != KindSession {
		if st.frames != nil {
			return st.frames[i]
		}
		return chunkFrames[i]
	}
	// "id: <epoch>-<n>\n" then the frame, as one chunk, in one allocation.
	var num [20]byte
	n := strconv.AppendUint(num[:0], s.nextEvent(i), 10)
	frame := listFrames[i]
	size := len("id: -\n") + len(streamEpoch) + len(n) + len(frame)
	b := make([]byte, 0, size+8)
	b = strconv.AppendUint(b, uint64(size), 16)
	b = append(append(append(append(b, "\r\nid: "...), streamEpoch...), '-'), n...)
	return append(append(append(b, '\n'), frame...), "\r\n"...)
}
