package session

import (
	"net"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/view"
)

// The standalone GET stream of a session-based client (2025-03-26 ..
// 2025-11-25) is served by the edge itself, not by the go-sdk: the only
// messages the edge ever sends on it are the three list_changed
// notifications and resources/updated, and sending them through the
// go-sdk cost every session a registry change, a timer, a goroutine, a
// middleware chain and a JSON encoding per batch. Here a resync sets bits
// on each session and writes one pre-encoded SSE frame per pending kind:
// to a taken-over stream (streamconn.go) the resync's worker writes it
// itself, without waiting (flushNow); a held stream's own request
// goroutine is woken to write it. What would wait for a client that
// stops reading is left to the stream's flusher, which blocks only its
// own goroutine, for at most StreamWriteTimeout per write; a failed write
// leaves the notification pending for the client's next stream. Events
// carry ids, and a GET with Last-Event-ID resumes (streamids.go).
//
// Which GETs the edge serves (those the go-sdk would accept the same way)
// is decided by the caller; everything else about the session stays with
// the go-sdk.

// StreamWriteTimeout bounds one write to a standalone stream.
const StreamWriteTimeout = 10 * time.Second

// listFrames are the SSE events of ListMethods, as the go-sdk writes them;
// a session's stream writes each after its id line (streamids.go), a
// listen stream's without one.
var listFrames = func() (f [3][]byte) {
	for i, m := range ListMethods {
		f[i] = []byte(`event: message` + "\n" + `data: {"jsonrpc":"2.0","method":"` + m + `","params":{}}` + "\n\n")
	}
	return f
}()

// stream is an attached standalone stream, of one of two kinds:
//   - held: the GET's own request goroutine writes it; wake (room for one
//     signal, so a resync never blocks on it) tells that goroutine to
//     write what is pending;
//   - taken over (streamconn.go): the connection was hijacked from
//     net/http, conn is written by a short-lived flusher goroutine and
//     read by one that notices the client leaving.
type stream struct {
	wake chan struct{}

	frames   *[3][]byte // the list_changed chunks; nil: chunkFrames
	conn     net.Conn
	wmu      sync.Mutex      // serializes writes to conn
	finished bool            // the body's end was written; guarded by wmu
	raw      syscall.RawConn // conn's socket, for tryWrite (nil: none)
	rest     []byte          // what a fan-out's write left for the flusher (tryWrite); guarded by wmu
	writing  bool            // a flusher runs (or the head is being written); guarded by the session's mu
}

// wakeLocked has s's stream, if one is attached, write what is pending.
// s.mu is held.
func (s *Session) wakeLocked() {
	st := s.stream
	switch {
	case st == nil:
	case st.conn != nil:
		if !st.writing {
			st.writing = true
			s.reg.o.Hijacks.Go(func() { s.flushConn(st) })
		}
	default:
		select {
		case st.wake <- struct{}{}:
		default: // already signalled
		}
	}
}

// End ends s's standalone stream, now and for good.
func (s *Session) End() {
	s.mu.Lock()
	s.ended = true
	st := s.stream
	if st != nil && st.conn != nil {
		s.stream = nil
		s.reg.o.Hijacks.Go(st.finish)
	}
	s.wakeLocked()
	s.mu.Unlock()
}

// ServeStream serves s's standalone GET stream until the client goes, the
// session ends, or a write fails. The connection is taken over from
// net/http when it can be (streamconn.go).
func (s *Session) ServeStream(w http.ResponseWriter, r *http.Request) {
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
	if s.takeOver(w, r) {
		return
	}
	st := &stream{wake: make(chan struct{}, 1)}
	if code, msg := s.claim(st); code != 0 { // raced with another GET or the end
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
	g := s.reg
	g.streams(1)
	defer g.streams(-1)

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
	g.obs.StreamAttached(s)
	write := func(i int) error { return writeFrame(w, rc, withID(s.eventLine(i, ""), listFrames[i])) }
	raw := func(frame []byte) error { return writeFrame(w, rc, frame) }
	for {
		if !s.sendPending(write, raw) {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-st.wake:
		}
	}
}

// streams counts a stream opened (1) or closed (-1).
func (g *Registry) streams(d float64) {
	if g.m.Streams != nil {
		g.m.Streams.Add(d)
	}
}

// writeFrame writes one SSE frame and flushes it, within
// StreamWriteTimeout.
func writeFrame(w http.ResponseWriter, rc *http.ResponseController, frame []byte) error {
	_ = rc.SetWriteDeadline(time.Now().Add(StreamWriteTimeout)) // unsupported by some writers: best effort
	_, err := w.Write(frame)
	if err == nil {
		err = rc.Flush()
	}
	_ = rc.SetWriteDeadline(time.Time{})
	return err
}

// sendPending writes, with write (given a ListIndex), the list_changed
// notifications pending for s, then with raw (given an SSE frame) the
// resources/updated it is owed. It reports false when the stream is over
// (the session ended or a write failed); what could not be written stays
// pending.
func (s *Session) sendPending(write func(int) error, raw func([]byte) error) bool {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return false
	}
	bits, ups := s.pending, s.updated
	s.pending, s.updated = 0, nil
	s.mu.Unlock()
	return s.writePending(bits, write) && s.writeUpdates(ups, raw)
}

// writeUpdates writes the resources/updated of uris; on a failed write
// the ones not written are owed again and it reports false.
func (s *Session) writeUpdates(uris []string, raw func([]byte) error) bool {
	for i, u := range uris {
		if err := raw(withID(s.eventLine(-1, u), UpdateFrame(u))); err != nil {
			s.mu.Lock()
			for _, v := range uris[i:] {
				if !slices.Contains(s.updated, v) && len(s.updated) < MaxUpdatesOwed {
					s.updated = append(s.updated, v)
				}
			}
			s.wakeLocked()
			s.mu.Unlock()
			return false
		}
		s.reg.notified(updateMethod(u))
	}
	return true
}

// writePending writes the notifications of bits; on a failed write the
// ones not written are pending again and it reports false.
func (s *Session) writePending(bits uint8, write func(int) error) bool {
	if bits == 0 {
		return true
	}
	g := s.reg
	for i := range ListMethods {
		bit := uint8(1) << i
		if bits&bit == 0 {
			continue
		}
		var undo func()
		evidence := bit == PendingTools && s.kind == KindSession // a listen stream keeps none
		if evidence {
			undo = s.signalling()
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
		g.notifiedList(i)
		if evidence {
			g.obs.Signalled(s)
		}
	}
	g.observeLatency(s)
	return true
}

// confirmed is the state at which a served value was last found current:
// its generation and, on merged regional logs, its vector.
type confirmed struct {
	view    *view.Served
	gen     uint64
	regions map[string]uint64 // nil on one log
}

// Confirm records that the current view was found current at generation
// gen (regions: the state's regional vector, nil on one log): the edge
// applied a state, whether or not it changed the view.
func (g *Registry) Confirm(gen uint64, regions map[string]uint64) {
	g.mu.Lock()
	c := &confirmed{view: g.cur.Load(), gen: gen, regions: regions}
	g.mu.Unlock()
	g.conf.Store(c)
}

// Confirmed is the generation and regional vector (nil on one log) of
// the state last confirmed (0 and nil before the first).
func (g *Registry) Confirmed() (gen uint64, regions map[string]uint64) {
	if c := g.conf.Load(); c != nil {
		return c.gen, c.regions
	}
	return 0, nil
}

// Evidence is the generation and regional vector the evidence of a
// session served sv names: while sv is the current view and the one last
// confirmed, those of the state confirmed (its generation at least sv's
// own); sv's own otherwise (not yet confirmed, or no longer served).
func (g *Registry) Evidence(sv *view.Served) (gen uint64, regions map[string]uint64) {
	if c := g.conf.Load(); c != nil && c.view == sv && sv == g.Current() {
		regions = c.regions
		if regions == nil {
			regions = sv.Regions
		}
		return max(sv.Gen, c.gen), regions
	}
	return sv.Gen, sv.Regions
}

// signalling records, in s's evidence, the tools list_changed about to be
// written to its stream, for the view s serves (recorded before the
// write: a client may list again before the write returns). The
// returned func takes it back when the write fails. It reads only s and
// the registry.
func (s *Session) signalling() (undo func()) {
	g := s.reg
	sv := s.Served()
	var digest string
	if !g.o.NoDigest {
		era := sv
		if s.Kind() != KindSession { // a client of the stateless generation: its era's list
			era = sv.Era(view.FirstStateless)
		}
		digest, _ = era.ToolDefs()
	}
	gen, regions := g.Evidence(sv)
	return s.rec.Signalling(digest, gen, regions, time.Now())
}
