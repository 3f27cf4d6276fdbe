package dashboard

import (
	"errors"
	"sync"
)

// Errors of joining the hub.
var (
	// ErrTooManyStreams: MaxStreams streams are open already.
	ErrTooManyStreams = errors.New("dashboard: too many event streams")
	// ErrClosed: the dashboard stopped.
	ErrClosed = errors.New("dashboard: stopped")
)

// hub fans frames out to the open streams. A broadcast never blocks: a
// stream whose queue is full is dropped.
type hub struct {
	max, buf int
	m        *metrics

	mu      sync.Mutex
	clients map[*client]struct{}
	closed  bool
}

// client is one open stream: its queue of frames, and done, closed when
// the hub drops it or stops.
type client struct {
	ch   chan []byte
	done chan struct{}
	once sync.Once
}

func (c *client) end() { c.once.Do(func() { close(c.done) }) }

func newHub(max, buf int, m *metrics) *hub {
	return &hub{max: max, buf: buf, m: m, clients: map[*client]struct{}{}}
}

// join opens a stream; the caller must leave it.
func (h *hub) join() (*client, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
		return nil, ErrClosed
	case len(h.clients) >= h.max:
		h.m.refused()
		return nil, ErrTooManyStreams
	}
	c := &client{ch: make(chan []byte, h.buf), done: make(chan struct{})}
	h.clients[c] = struct{}{}
	h.m.streams(len(h.clients))
	return c, nil
}

// leave closes c's stream (again is fine).
func (h *hub) leave(c *client) {
	h.mu.Lock()
	delete(h.clients, c)
	h.m.streams(len(h.clients))
	h.mu.Unlock()
	c.end()
}

// broadcast queues frame on every stream, dropping those that are full.
func (h *hub) broadcast(frame []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		select {
		case c.ch <- frame:
		default:
			delete(h.clients, c)
			c.end()
			h.m.dropped()
		}
	}
	h.m.streams(len(h.clients))
}

// count is the number of open streams.
func (h *hub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients)
}

// close ends every stream and refuses new ones.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for c := range h.clients {
		delete(h.clients, c)
		c.end()
	}
	h.m.streams(0)
}
