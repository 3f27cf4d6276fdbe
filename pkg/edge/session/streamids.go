package session

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
)

// Every event on a session's standalone stream (2025-11-25 and earlier)
// carries an id, "<epoch>-<n>": epoch names this edge process, n counts
// the session's events here. A client that reconnects with Last-Event-ID
// is owed again what was written after that event (written to a
// connection that died, it may never have arrived): the list_changed
// kinds and the resources/updated URIs sent since. They are idempotent
// signals, so the edge keeps, instead of an event store, the number of
// the event that last carried each of them. An id of another epoch (the
// session was rebuilt here from its record, or the edge restarted) owes
// nothing more than the record already does.

// streamEpoch names this edge process in its event ids.
var streamEpoch = func() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}()

// Epoch names this edge process in the ids of its streams' events.
func Epoch() string { return streamEpoch }

// LastEvent is the number of the last event s's stream was given.
func (s *Session) LastEvent() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent.n
}

// sentEvents is what a session's stream sent, by event number; guarded
// by the session's mu.
type sentEvents struct {
	n       uint64    // the last event number given
	lists   [3]uint64 // the event that last carried each list_changed kind
	updates []sentUpdate
}

// sentUpdate is the event that last carried resources/updated of uri.
type sentUpdate struct {
	uri string
	n   uint64
}

// nextEventLocked numbers the next event of s, which carries list kind
// list (or, when list < 0, resources/updated of uri), and returns its id
// line. s.mu is held.
func (s *Session) nextEventLocked(list int, uri string) []byte {
	ev := &s.sent
	ev.n++
	if list >= 0 {
		ev.lists[list] = ev.n
	} else {
		found := false
		for i := range ev.updates {
			if ev.updates[i].uri == uri {
				ev.updates[i].n, found = ev.n, true
			}
		}
		if !found {
			if len(ev.updates) >= MaxUpdatesOwed {
				ev.updates = ev.updates[1:]
			}
			ev.updates = append(ev.updates, sentUpdate{uri, ev.n})
		}
	}
	return []byte("id: " + streamEpoch + "-" + strconv.FormatUint(ev.n, 10) + "\n")
}

// nextEvent numbers the next event of s, which carries list kind list (a
// ListIndex), and returns its number.
func (s *Session) nextEvent(list int) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent.n++
	s.sent.lists[list] = s.sent.n
	return s.sent.n
}

// eventLine is nextEventLocked for a session-based stream, nil for any
// other (a 2026-07-28 listen stream has no resumption).
func (s *Session) eventLine(list int, uri string) []byte {
	if s.kind != KindSession {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextEventLocked(list, uri)
}

// resumeFrom owes s again what its stream sent after event lastID (the
// Last-Event-ID of a reconnecting GET).
func (s *Session) resumeFrom(lastID string) {
	epoch, num, ok := strings.Cut(lastID, "-")
	if !ok || epoch != streamEpoch {
		return
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, at := range s.sent.lists {
		if at > n {
			s.pending |= 1 << i
		}
	}
	for _, u := range s.sent.updates {
		if u.n > n && len(s.updated) < MaxUpdatesOwed && !containsString(s.updated, u.uri) {
			s.updated = append(s.updated, u.uri)
		}
	}
}

func containsString(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// withID is frame preceded by its id line (nil: none).
func withID(id, frame []byte) []byte {
	if id == nil {
		return frame
	}
	return append(append(make([]byte, 0, len(id)+len(frame)), id...), frame...)
}
