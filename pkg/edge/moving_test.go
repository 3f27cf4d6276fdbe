package edge

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// metricValue reads a counter, gauge or histogram count of e's registry
// (the sum over its label values).
func metricValue(t testing.TB, e *Edge, name string) float64 {
	t.Helper()
	mfs, err := e.opts.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// A session created on edge A continues on edge B after A died: B rebuilds
// it from its record, the change made while it was idle reaches the same
// client session as a list_changed on its reconnected stream, the client
// lists and calls the recovered tool, and later changes follow on B.
func TestSessionMovesToAnotherEdge(t *testing.T) {
	f := newSharedFleet(t)
	b := startBackend(t, "alpha", nil)
	f.add("default", b)
	f.catalog("default", "alpha", listCatalog(t, b))
	f.health("default", "alpha", false)
	edgeA := startRecordEdge(t, f, "a", nil, nil)
	edgeB := startRecordEdge(t, f, "b", nil, nil)
	p := newSwitchProxy(t, edgeA.MCPURL())
	c := connectAs(t, p.url(), "alice", false)
	if names := c.toolNames(t); len(names) != 0 {
		t.Fatalf("tools before recovery: %v", names)
	}
	sid := c.cs.ID()
	eventually(t, 10*time.Second, "record with A's traversal", func() bool {
		rec := stored(t, edgeA.Edge, sid)
		return rec != nil && rec.Edge == "a" && rec.Convergence.Traversal.Complete()
	})

	edgeA.kill()
	p.to(edgeB.MCPURL())
	gen := f.health("default", "alpha", true)
	eventually(t, 10*time.Second, "B at the recovery", func() bool { return edgeB.confirmed.Load() >= gen })

	c.waitChanged(t, 1, 30*time.Second)
	names := c.toolNames(t)
	if !names["alpha_echo"] {
		t.Fatalf("tools on B: %v", names)
	}
	if got := text(c.call(t, "alpha_echo", map[string]any{"text": "moved"})); got != "alpha: moved" {
		t.Fatalf("alpha_echo = %q", got)
	}
	if n := metricValue(t, edgeB.Edge, "fleetgate_edge_sessions_rehydrated_total"); n != 1 {
		t.Fatalf("B rehydrated %v sessions, want 1", n)
	}
	if info, ok := sessionInfo(t, edgeB.Edge, sid); !ok || info.Verdict != "converged" || info.Edge != "b" {
		t.Fatalf("B's view of the session: %+v (found %v)", info, ok)
	}

	// A later change reaches the session on B.
	n := c.changed.Load()
	f.health("default", "alpha", false)
	c.waitChanged(t, n+1, 20*time.Second)
	if names := c.toolNames(t); names["alpha_echo"] {
		t.Fatalf("tools after the flip on B: %v", names)
	}
	eventually(t, 10*time.Second, "record written by B", func() bool {
		rec := stored(t, edgeB.Edge, sid)
		return rec != nil && rec.Edge == "b" && rec.Convergence.LastSignal.Sent()
	})
}

// Ten sessions of a killed edge continue on another one, and every one
// converges on the catalog changed after the kill.
func TestKilledEdgeSessionsConverge(t *testing.T) {
	f := newSharedFleet(t)
	b := startBackend(t, "alpha", nil)
	f.add("default", b)
	f.catalog("default", "alpha", listCatalog(t, b))
	f.health("default", "alpha", false)
	edgeA := startRecordEdge(t, f, "a", nil, nil)
	edgeB := startRecordEdge(t, f, "b", nil, nil)
	p := newSwitchProxy(t, edgeA.MCPURL())
	clients := make([]*client, 10)
	for i := range clients {
		clients[i] = connectAs(t, p.url(), "alice", false)
		clients[i].toolNames(t)
	}
	for _, c := range clients {
		eventually(t, 10*time.Second, "records written", func() bool {
			rec := stored(t, edgeA.Edge, c.cs.ID())
			return rec != nil && rec.Convergence.Traversal.Complete()
		})
	}
	edgeA.kill()
	p.to(edgeB.MCPURL())
	f.health("default", "alpha", true)
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			c.waitChanged(t, 1, 30*time.Second)
			if names := c.toolNames(t); !names["alpha_echo"] {
				t.Errorf("session %s tools on B: %v", c.cs.ID(), names)
			}
		})
	}
	wg.Wait()
	for _, c := range clients {
		if info, ok := sessionInfo(t, edgeB.Edge, c.cs.ID()); !ok || info.Verdict != "converged" {
			t.Errorf("session %s on B: %+v (found %v)", c.cs.ID(), info, ok)
		}
	}
	if n := metricValue(t, edgeB.Edge, "fleetgate_edge_sessions_rehydrated_total"); n != 10 {
		t.Fatalf("B rehydrated %v sessions, want 10", n)
	}
}

// A session id presented by another identity is refused on the edge that
// holds the session and on one that would rebuild it, before and after a
// rehydration; a request without identity is refused too.
func TestSessionIdentityBinding(t *testing.T) {
	f := newSharedFleet(t)
	edgeA := startRecordEdge(t, f, "a", nil, nil)
	edgeB := startRecordEdge(t, f, "b", nil, nil)
	c := connectAs(t, edgeA.MCPURL(), "alice", true)
	sid := c.cs.ID()
	if err := sessionstore.ValidateID(sid); err != nil || len(sid) < 26 {
		t.Fatalf("session id %q: %v", sid, err)
	}
	for _, e := range []*Edge{edgeA.Edge, edgeB.Edge} {
		if code := rawRequest(t, http.MethodPost, e.MCPURL(), sid, "mallory", pingBody()); code != http.StatusForbidden {
			t.Fatalf("mallory on %s: %d, want 403", e.opts.ID, code)
		}
		if code := rawRequest(t, http.MethodPost, e.MCPURL(), sid, "", pingBody()); code != http.StatusUnauthorized {
			t.Fatalf("no identity on %s: %d, want 401", e.opts.ID, code)
		}
	}
	if n := metricValue(t, edgeB.Edge, "fleetgate_edge_sessions_rehydrated_total"); n != 0 {
		t.Fatalf("B rebuilt %v sessions for another identity", n)
	}
	if code := rawRequest(t, http.MethodPost, edgeB.MCPURL(), sid, "alice", pingBody()); code != http.StatusOK {
		t.Fatalf("alice on B: %d", code)
	}
	if code := rawRequest(t, http.MethodPost, edgeB.MCPURL(), sid, "mallory", pingBody()); code != http.StatusForbidden {
		t.Fatalf("mallory on B after the rehydration: %d, want 403", code)
	}
	if code := rawRequest(t, http.MethodDelete, edgeB.MCPURL(), sid, "mallory", ""); code != http.StatusForbidden {
		t.Fatalf("mallory's DELETE on B: %d, want 403", code)
	}
	if n := metricValue(t, edgeB.Edge, "fleetgate_edge_identity_refusals_total"); n != 4 {
		t.Fatalf("B counted %v refusals, want 4", n)
	}
	// Malformed ids never reach the store.
	if code := rawRequest(t, http.MethodPost, edgeB.MCPURL(), "bad id!", "alice", pingBody()); code != http.StatusNotFound {
		t.Fatalf("malformed id: %d", code)
	}
}

// One hundred concurrent first requests for a moved session rebuild it once.
func TestConcurrentRehydrationOnce(t *testing.T) {
	f := newSharedFleet(t)
	edgeA := startRecordEdge(t, f, "a", nil, nil)
	edgeB := startRecordEdge(t, f, "b", nil, nil)
	c := connectAs(t, edgeA.MCPURL(), "alice", true)
	sid := c.cs.ID()
	var wg sync.WaitGroup
	codes := make([]int, 100)
	start := make(chan struct{})
	for i := range codes {
		wg.Go(func() {
			<-start
			codes[i] = rawRequest(t, http.MethodPost, edgeB.MCPURL(), sid, "alice", pingBody())
		})
	}
	close(start)
	wg.Wait()
	for i, code := range codes {
		if code != http.StatusOK {
			t.Fatalf("request %d: %d", i, code)
		}
	}
	if n := metricValue(t, edgeB.Edge, "fleetgate_edge_sessions_rehydrated_total"); n != 1 {
		t.Fatalf("%v rehydrations for 100 concurrent requests, want 1", n)
	}
	// A gave the session up to B.
	eventually(t, 10*time.Second, "A releases the session", func() bool { return edgeA.reg.Lookup(sid) == nil })
}

// DELETE on edge B ends the session everywhere.
func TestDeleteEndsSessionEverywhere(t *testing.T) {
	f := newSharedFleet(t)
	edgeA := startRecordEdge(t, f, "a", nil, nil)
	edgeB := startRecordEdge(t, f, "b", nil, nil)
	p := newSwitchProxy(t, edgeA.MCPURL())
	c := connectAs(t, p.url(), "alice", true)
	sid := c.cs.ID()
	p.to(edgeB.MCPURL())
	if err := c.cs.Ping(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if err := c.cs.Close(); err != nil { // DELETE, on B
		t.Fatal(err)
	}
	if rec := stored(t, edgeB.Edge, sid); rec != nil {
		t.Fatalf("record after DELETE: %+v", rec)
	}
	eventually(t, 10*time.Second, "A drops the session", func() bool { return edgeA.reg.Lookup(sid) == nil })
	for _, e := range []*Edge{edgeA.Edge, edgeB.Edge} {
		if code := rawRequest(t, http.MethodPost, e.MCPURL(), sid, "alice", pingBody()); code != http.StatusNotFound {
			t.Fatalf("after DELETE on %s: %d, want 404", e.opts.ID, code)
		}
	}
}

// An idle session ends and its record is gone, on every edge. (The
// session bucket refuses roll-ups, so the server writes no delete marker
// when a record's TTL expires and a watcher sees nothing: an edge ends
// idle sessions itself, with its idle timeout at most the record TTL, as
// cmd/edge sets them.)
func TestIdleRecordExpires(t *testing.T) {
	f := newSharedFleet(t)
	store := &sessionstore.Options{Bucket: "expiring", IdleTimeout: time.Second}
	idle := func(o *Options) { o.SessionIdleTimeout = time.Second }
	edgeA := startRecordEdge(t, f, "a", store, idle)
	edgeB := startRecordEdge(t, f, "b", store, idle)
	c := connectAs(t, edgeA.MCPURL(), "alice", true)
	sid := c.cs.ID()
	if stored(t, edgeA.Edge, sid) == nil {
		t.Fatal("no record after initialize")
	}
	eventually(t, 20*time.Second, "record expired", func() bool { return stored(t, edgeA.Edge, sid) == nil })
	eventually(t, 10*time.Second, "A ends the session", func() bool { return edgeA.reg.Lookup(sid) == nil })
	for _, e := range []*Edge{edgeA.Edge, edgeB.Edge} {
		if code := rawRequest(t, http.MethodPost, e.MCPURL(), sid, "alice", pingBody()); code != http.StatusNotFound {
			t.Fatalf("expired session on %s: %d, want 404", e.opts.ID, code)
		}
	}
}
