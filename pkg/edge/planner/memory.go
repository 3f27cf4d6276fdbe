package planner

import (
	"context"
	"sync"

	"github.com/fleetgate/fleetgate/pkg/events"
)

// Memory is a Source held in memory, for tests and simulations: Set
// publishes a state and signals the watchers, as an events.Reader does
// after folding an event. Safe for concurrent use.
type Memory struct {
	mu       sync.Mutex
	state    *events.State
	caught   bool
	caughtCh chan struct{}
	watchers map[chan struct{}]struct{}
}

// NewMemory returns a source holding st (nil: none yet), not caught up.
func NewMemory(st *events.State) *Memory {
	return &Memory{state: st, caughtCh: make(chan struct{}), watchers: map[chan struct{}]struct{}{}}
}

// Set publishes st and signals every watcher.
func (m *Memory) Set(st *events.State) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state = st
	m.signalLocked()
}

// MarkCaughtUp marks the source caught up (once; later calls do nothing).
func (m *Memory) MarkCaughtUp() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.caught {
		m.caught = true
		close(m.caughtCh)
		m.signalLocked()
	}
}

func (m *Memory) signalLocked() {
	for ch := range m.watchers {
		select {
		case ch <- struct{}{}:
		default: // a signal is pending already: it covers this one
		}
	}
}

// Watch returns a channel signalled whenever the state moves on.
func (m *Memory) Watch() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	m.mu.Lock()
	m.watchers[ch] = struct{}{}
	m.mu.Unlock()
	return ch, func() {
		m.mu.Lock()
		delete(m.watchers, ch)
		m.mu.Unlock()
	}
}

// State is the state last set.
func (m *Memory) State() *events.State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state
}

// CaughtUp reports whether MarkCaughtUp was called.
func (m *Memory) CaughtUp() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.caught
}

// WaitCaughtUp returns nil once MarkCaughtUp was called, or ctx's error.
func (m *Memory) WaitCaughtUp(ctx context.Context) error {
	select {
	case <-m.caughtCh:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
