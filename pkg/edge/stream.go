package edge

import (
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/fastpath"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/events"
)

// The standalone GET stream of a session-based client (2025-03-26 ..
// 2025-11-25) is served by the edge itself, not by the go-sdk: the only
// messages the edge ever sends on it are the three list_changed
// notifications, and sending them through the go-sdk cost every session a
// registry change, a timer, a goroutine, a middleware chain and a JSON
// encoding per batch. Here a resync only sets bits on each session and
// wakes its stream; the stream's own request goroutine writes one
// pre-encoded SSE frame per pending kind. A client that stops reading
// blocks only its own goroutine, for at most streamWriteTimeout, and the
// notification stays pending for its next stream.
//
// Everything else about the session (initialize, POSTs, DELETE, the idle
// timeout) stays with the go-sdk. GET requests the go-sdk would refuse (a
// bad Accept, Host or protocol version header, more than one
// Last-Event-ID) are still handed to it, so the answers are its. Events
// carry ids, and a GET with Last-Event-ID resumes (streamids.go).

// maxEventID bounds a Last-Event-ID the edge reads (its own are about 30
// bytes); a longer one goes to the go-sdk, which refuses it.
const maxEventID = 64

// streamWriteTimeout bounds one write to a standalone stream.
const streamWriteTimeout = 10 * time.Second

// List kinds, as bits of session.pending, in listIndex order.
const (
	pendingTools     = fastpath.ListTools
	pendingPrompts   = fastpath.ListPrompts
	pendingResources = fastpath.ListResources
)

// listMethods are the list_changed methods by listIndex.
var listMethods = [3]string{toolsChanged, "notifications/prompts/list_changed", "notifications/resources/list_changed"}

// listFrames are the SSE events of listMethods, as the go-sdk writes them;
// a session's stream writes each after its id line (streamids.go), a
// listen stream's without one.
var listFrames = func() (f [3][]byte) {
	for i, m := range listMethods {
		f[i] = []byte(`event: message` + "\n" + `data: {"jsonrpc":"2.0","method":"` + m + `","params":{}}` + "\n\n")
	}
	return f
}()

// sessionStream is an attached standalone stream, of one of two kinds:
//   - held: the GET's own request goroutine writes it; wake (room for one
//     signal, so a resync never blocks on it) tells that goroutine to
//     write what is pending;
//   - taken over (streamconn.go): the connection was hijacked from
//     net/http, conn is written by a short-lived flusher goroutine and
//     read by one that notices the client leaving.
type sessionStream struct {
	wake chan struct{}

	e        *Edge
	frames   *[3][]byte // the list_changed chunks; nil: chunkFrames
	conn     net.Conn
	wmu      sync.Mutex // serializes writes to conn
	finished bool       // the body's end was written; guarded by wmu
	writing  bool       // a flusher runs (or the head is being written); guarded by the session's mu
}

// pendingOf is the pending bits of a change.
func pendingOf(c view.Change) uint8 {
	var b uint8
	if c.Tools {
		b |= pendingTools
	}
	if c.Prompts {
		b |= pendingPrompts
	}
	if c.Resources {
		b |= pendingResources
	}
	return b
}

// wakeLocked has s's stream, if one is attached, write what is pending.
// s.mu is held.
func (s *session) wakeLocked() {
	st := s.stream
	switch {
	case st == nil:
	case st.conn != nil:
		if !st.writing {
			st.writing = true
			st.e.wg.Go(func() { st.e.flushConn(s, st) })
		}
	default:
		select {
		case st.wake <- struct{}{}:
		default: // already signalled
		}
	}
}

// end ends s's standalone stream, now and for good.
func (s *session) end() {
	s.mu.Lock()
	s.ended = true
	st := s.stream
	if st != nil && st.conn != nil {
		s.stream = nil
		st.e.wg.Go(st.finish)
	}
	s.wakeLocked()
	s.mu.Unlock()
}

// ownsStream reports whether the edge serves this GET itself: the go-sdk
// would accept it too (see the comment at the top of the file).
func ownsStream(r *http.Request, s *session) bool {
	if s.kind != kindSession || len(r.Header.Values("Last-Event-ID")) > 1 || len(r.Header.Get("Last-Event-ID")) > maxEventID ||
		!fastpath.AcceptsEventStream(r) {
		return false
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && (v >= newProtocol || !slices.Contains(mcp.SupportedProtocolVersions(), v)) {
		return false
	}
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(interface{ String() string }); ok && la != nil && fastpath.Loopback(la.String()) {
		return fastpath.Loopback(r.Host) // the go-sdk's DNS rebinding protection
	}
	return true
}

// serveStream serves s's standalone GET stream until the client goes, the
// session ends, or a write fails.
func (e *Edge) serveStream(w http.ResponseWriter, r *http.Request, s *session) {
	s.mu.Lock()
	switch {
	case s.ended:
		s.mu.Unlock()
		http.Error(w, "session not found", http.StatusNotFound)
		return
	case s.stream != nil:
		s.mu.Unlock()
		http.Error(w, "stream ID conflicts with ongoing stream", http.StatusConflict)
		return
	}
	s.mu.Unlock()
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		s.resumeFrom(last)
	}
	if e.takeOver(w, r, s) {
		return
	}
	st := &sessionStream{wake: make(chan struct{}, 1)}
	if code, msg := e.claim(s, st); code != 0 { // raced with another GET or the end
		http.Error(w, msg, code)
		return
	}
	defer func() {
		s.mu.Lock()
		if s.stream == st {
			s.stream = nil
		}
		s.mu.Unlock()
	}()
	e.m.streams.Inc()
	defer e.m.streams.Dec()

	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "text/event-stream")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// A comment, so that proxies forward the headers at once (as the
	// go-sdk does, its issue #410).
	if writeFrame(w, rc, []byte(": ok\n\n")) != nil {
		return
	}
	e.streamAttached(s)
	write := func(i int) error { return writeFrame(w, rc, withID(s.eventLine(i, ""), listFrames[i])) }
	raw := func(frame []byte) error { return writeFrame(w, rc, frame) }
	for {
		if !e.sendPending(s, write, raw) {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-st.wake:
		}
	}
}

// writeFrame writes one SSE frame and flushes it, within
// streamWriteTimeout.
func writeFrame(w http.ResponseWriter, rc *http.ResponseController, frame []byte) error {
	_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout)) // unsupported by some writers: best effort
	_, err := w.Write(frame)
	if err == nil {
		err = rc.Flush()
	}
	_ = rc.SetWriteDeadline(time.Time{})
	return err
}

// sendPending writes, with write (given a listIndex), the list_changed
// notifications pending for s, then with raw (given an SSE frame) the
// resources/updated it is owed. It reports false when the stream is over
// (the session ended or a write failed); what could not be written stays
// pending.
func (e *Edge) sendPending(s *session, write func(int) error, raw func([]byte) error) bool {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return false
	}
	bits, ups := s.pending, s.updated
	s.pending, s.updated = 0, nil
	s.mu.Unlock()
	return e.writePending(s, bits, write) && e.writeUpdates(s, ups, raw)
}

// writeUpdates writes the resources/updated of uris; on a failed write
// the ones not written are owed again and it reports false.
func (e *Edge) writeUpdates(s *session, uris []string, raw func([]byte) error) bool {
	for i, u := range uris {
		if err := raw(withID(s.eventLine(-1, u), updateFrame(u))); err != nil {
			s.mu.Lock()
			for _, v := range uris[i:] {
				if !slices.Contains(s.updated, v) && len(s.updated) < maxUpdatesOwed {
					s.updated = append(s.updated, v)
				}
			}
			s.wakeLocked()
			s.mu.Unlock()
			return false
		}
		e.m.notifications.WithLabelValues("notifications/resources/updated").Inc()
	}
	return true
}

// writePending writes the notifications of bits; on a failed write the
// ones not written are pending again and it reports false.
func (e *Edge) writePending(s *session, bits uint8, write func(int) error) bool {
	if bits == 0 {
		return true
	}
	for i := range listMethods {
		bit := uint8(1) << i
		if bits&bit == 0 {
			continue
		}
		var undo func()
		evidence := bit == pendingTools && s.kind == kindSession // a listen stream keeps none
		if evidence {
			undo = e.signalling(s)
		}
		if err := write(i); err != nil {
			if undo != nil {
				undo()
			}
			s.mu.Lock()
			s.pending |= bits
			s.wakeLocked() // a stream attached meanwhile sends them
			s.mu.Unlock()
			return false
		}
		bits &^= bit
		e.m.notifications.WithLabelValues(listMethods[i]).Inc()
		if evidence {
			e.recs.enqueue(s)
		}
	}
	if since := s.since.Swap(0); since != 0 {
		age := time.Since(time.Unix(0, since))
		e.m.latency.Observe(age.Seconds())
		e.m.events.ChangeAge(events.HopNotified, age)
	}
	return true
}
