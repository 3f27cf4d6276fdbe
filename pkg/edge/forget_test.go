package edge

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/session"
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
	synctest.Test(t, func(t *testing.T) {
		const timeout = 500 * time.Millisecond
		e := serveMemoryEdge(t, &Options{SessionTimeout: timeout})
		e.up("alpha", "echo")
		e.settle()
		sid := rawInitialize(t, e.MCPURL(), "")
		time.Sleep(timeout - 100*time.Millisecond)
		synctest.Wait()
		if _, ok := sessionInfo(t, e.Edge, sid); !ok {
			t.Fatal("session forgotten before its idle timeout")
		}
		// The go-sdk ends it at the timeout; the next sweep forgets it.
		time.Sleep(100*time.Millisecond + session.SweepEvery + time.Millisecond)
		synctest.Wait()
		if _, ok := sessionInfo(t, e.Edge, sid); ok {
			t.Fatalf("session still listed %v after its idle timeout", timeout+session.SweepEvery)
		}
		if code := rawRequest(t, http.MethodPost, e.MCPURL(), sid, "", pingBody()); code != http.StatusNotFound {
			t.Fatalf("ping on the expired session: %d", code)
		}
	})
}
