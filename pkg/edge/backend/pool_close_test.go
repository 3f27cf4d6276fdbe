package backend

import (
	"net/http"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/events"
)

// The close of a connection replaced or pruned is the pool's: CloseAll does
// not return while one is still running (before, `go c.close()` outlived
// it).
func TestCloseAllWaitsForReplacedConnections(t *testing.T) {
	p := NewPool(http.DefaultClient, time.Minute, 0, nil)
	replaced := p.conn("alpha", events.BackendConfig{URL: "http://127.0.0.1:1/a"})
	pruned := p.conn("beta", events.BackendConfig{URL: "http://127.0.0.1:1/b"})
	// Hold both connections' locks: their closes block on them.
	replaced.mu.Lock()
	pruned.mu.Lock()
	p.conn("alpha", events.BackendConfig{URL: "http://127.0.0.1:1/a2"})
	p.Prune(map[string]events.BackendConfig{"alpha": {URL: "http://127.0.0.1:1/a2"}})
	done := make(chan struct{})
	go func() { p.CloseAll(); close(done) }()
	select {
	case <-done:
		t.Fatal("CloseAll returned while the replaced and pruned connections were still closing")
	case <-time.After(300 * time.Millisecond): // proving a negative needs a bound
	}
	replaced.mu.Unlock()
	pruned.mu.Unlock()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("CloseAll did not return once the closes could finish")
	}
	for name, c := range map[string]*backendConn{"replaced": replaced, "pruned": pruned} {
		c.mu.Lock()
		closed := c.closed
		c.mu.Unlock()
		if !closed {
			t.Errorf("the %s connection is not closed after CloseAll", name)
		}
	}
	// After CloseAll a replaced connection is closed at once.
	late := p.conn("gamma", events.BackendConfig{URL: "http://127.0.0.1:1/g"})
	p.conn("gamma", events.BackendConfig{URL: "http://127.0.0.1:1/g2"})
	late.mu.Lock()
	defer late.mu.Unlock()
	if !late.closed {
		t.Error("a connection replaced after CloseAll is not closed")
	}
}
