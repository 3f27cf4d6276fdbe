package session

import (
	"context"
	"sync"

	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// Tasks are the tasks one session created (MCP tasks, made by a
// task-augmented tools/call at a backend), by the id the client knows
// each by. A backend knows only the edge's pooled session, so the edge
// keeps each session's own; the table is bounded as its session record's
// (sessionstore.MaxTasks): the oldest task goes first.
type Tasks struct {
	mu    sync.Mutex
	refs  map[string]sessionstore.TaskRef
	order []string // oldest first
}

// Add keeps ref under id (once).
func (t *Tasks) Add(id string, ref sessionstore.TaskRef) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.refs == nil {
		t.refs = map[string]sessionstore.TaskRef{}
	}
	if _, ok := t.refs[id]; ok {
		return
	}
	for len(t.order) >= sessionstore.MaxTasks {
		delete(t.refs, t.order[0])
		t.order = t.order[1:]
	}
	t.refs[id] = ref
	t.order = append(t.order, id)
}

// Get is the task kept under id.
func (t *Tasks) Get(id string) (sessionstore.TaskRef, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ref, ok := t.refs[id]
	return ref, ok
}

// Drop forgets the task kept under id.
func (t *Tasks) Drop(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.refs[id]; !ok {
		return
	}
	delete(t.refs, id)
	for i, o := range t.order {
		if o == id {
			t.order = append(t.order[:i:i], t.order[i+1:]...)
			break
		}
	}
}

// Refs is the table as the session record keeps it, oldest first.
func (t *Tasks) Refs() []sessionstore.TaskRef {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]sessionstore.TaskRef, 0, len(t.order))
	for _, id := range t.order {
		out = append(out, t.refs[id])
	}
	return out
}

// IDs are the ids of the tasks kept, oldest first.
func (t *Tasks) IDs() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.order...)
}

// Tasks is the session's task table, made on first use when make is set
// (nil otherwise, for a session that made none).
func (s *Session) Tasks(make bool) *Tasks {
	if t := s.tasks.Load(); t != nil || !make {
		return t
	}
	s.tasks.CompareAndSwap(nil, &Tasks{})
	return s.tasks.Load()
}

// StartCall notes a call of the session the edge answers itself, under
// its JSON-RPC id (as sent), with the cancel function of its context; it
// reports false when a call of that id is in flight already.
func (s *Session) StartCall(id string, cancel context.CancelFunc) bool {
	m := s.calls.Load()
	if m == nil {
		s.calls.CompareAndSwap(nil, new(sync.Map))
		m = s.calls.Load()
	}
	_, dup := m.LoadOrStore(id, cancel)
	return !dup
}

// EndCall forgets the call of id (it returned).
func (s *Session) EndCall(id string) {
	if m := s.calls.Load(); m != nil {
		m.Delete(id)
	}
}

// CancelCall cancels the call of id in flight, if any (a client's
// notifications/cancelled).
func (s *Session) CancelCall(id string) {
	if m := s.calls.Load(); m != nil {
		if c, ok := m.Load(id); ok {
			c.(context.CancelFunc)()
		}
	}
}

// CallInFlight reports whether the call of id is in flight.
func (s *Session) CallInFlight(id string) bool {
	if m := s.calls.Load(); m != nil {
		_, ok := m.Load(id)
		return ok
	}
	return false
}
