package timeline

import (
	"sync"
)

// DefaultCapacity is the number of changes a Recorder keeps by default.
const DefaultCapacity = 4096

// Recorder keeps the last changes of the status the controller reports
// (the live source of a timeline), numbered from 1, and wakes watchers
// when one is added. It is safe for concurrent use; the zero value is
// not: use NewRecorder.
type Recorder struct {
	mu       sync.Mutex
	capacity int
	ring     []Change
	next     uint64 // sequence number of the next change
	watchers map[chan struct{}]struct{}
}

// NewRecorder returns a recorder of the last capacity changes
// (DefaultCapacity when capacity <= 0).
func NewRecorder(capacity int) *Recorder {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	return &Recorder{capacity: capacity, next: 1, watchers: map[chan struct{}]struct{}{}}
}

// Record adds a change (marked Live).
func (r *Recorder) Record(c Change) {
	c.Live = true
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ring) == r.capacity {
		copy(r.ring, r.ring[1:])
		r.ring = r.ring[:len(r.ring)-1]
	}
	r.ring = append(r.ring, c)
	r.next++
	for w := range r.watchers {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

// Since returns the changes after sequence number seq that are still
// kept, oldest first, and the sequence number of the last one (seq
// itself when there is none). Since(0) is every kept change.
func (r *Recorder) Since(seq uint64) ([]Change, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	last := r.next - 1
	if seq >= last {
		return nil, last
	}
	first := r.next - uint64(len(r.ring)) // sequence number of ring[0]
	skip := uint64(0)
	if seq >= first {
		skip = seq - first + 1
	}
	return append([]Change(nil), r.ring[skip:]...), last
}

// Watch signals (coalesced) after each Record; stop ends it.
func (r *Recorder) Watch() (changed <-chan struct{}, stop func()) {
	ch := make(chan struct{}, 1)
	r.mu.Lock()
	r.watchers[ch] = struct{}{}
	r.mu.Unlock()
	return ch, func() {
		r.mu.Lock()
		delete(r.watchers, ch)
		r.mu.Unlock()
	}
}
