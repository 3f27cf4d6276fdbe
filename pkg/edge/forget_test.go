package edge

import (
	"net/http"
	"testing"
	"time"
)

// A session its client deletes is forgotten at once.
func TestDeletedSessionIsForgotten(t *testing.T) {
	f := newFleet(t)
	b := startBackend(t, "alpha", nil)
	f.healthyBackend("default", b)
	e := startEdge(t, f, nil)
	sid := rawInitialize(t, e.MCPURL(), "")
	if _, ok := sessionInfo(t, e, sid); !ok {
		t.Fatal("new session not listed")
	}
	if code := rawRequest(t, http.MethodDelete, e.MCPURL(), sid, "", ""); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", code)
	}
	if _, ok := sessionInfo(t, e, sid); ok {
		t.Fatal("deleted session still listed")
	}
}

// A session the go-sdk ends on its own (the idle timeout) is forgotten by
// the sweep, with no goroutine waiting on each session.
func TestExpiredSessionIsForgotten(t *testing.T) {
	f := newFleet(t)
	b := startBackend(t, "alpha", nil)
	f.healthyBackend("default", b)
	e := startEdge(t, f, &Options{SessionTimeout: 500 * time.Millisecond})
	sid := rawInitialize(t, e.MCPURL(), "")
	eventually(t, 20*time.Second, "expired session forgotten", func() bool { _, ok := sessionInfo(t, e, sid); return !ok })
	if code := rawRequest(t, http.MethodPost, e.MCPURL(), sid, "", pingBody()); code != http.StatusNotFound {
		t.Fatalf("ping on the expired session: %d", code)
	}
}
