package h1

import "sync"

// Hijacks owns the goroutines that handle hijacked connections and what
// they start. http.Server.Shutdown does not wait for a handler's
// connection once it is hijacked, so the server's owner waits here: Hold
// counts a handler before it hijacks (while Shutdown still waits for its
// request), and Wait, after Shutdown, releases and waits for every count.
// A handler that comes to hijack after the release gets false and leaves
// the connection to net/http.
type Hijacks struct {
	mu       sync.Mutex
	released bool
	wg       sync.WaitGroup
}

// Hold counts one handling; false once Wait released (do not hijack).
// Done ends it.
func (h *Hijacks) Hold() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return false
	}
	h.wg.Add(1)
	return true
}

// Done ends a handling Hold counted.
func (h *Hijacks) Done() { h.wg.Done() }

// Go runs f as a goroutine Wait waits for. It is called from a held
// handling or one of its goroutines, so Wait is not yet past it.
func (h *Hijacks) Go(f func()) { h.wg.Go(f) }

// Wait releases (no more Hold) and waits for every handling and goroutine.
func (h *Hijacks) Wait() {
	h.mu.Lock()
	h.released = true
	h.mu.Unlock()
	h.wg.Wait()
}
