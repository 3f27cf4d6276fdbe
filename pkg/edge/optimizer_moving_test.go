package edge

import (
	"testing"
	"time"
)

// An optimizer session moved to another edge searches that edge's current
// index: a backend that recovered while the session was idle is found on
// the new edge and callable, and no list_changed is sent.
func TestOptimizerSessionMovesToAnotherEdge(t *testing.T) {
	f := newSharedFleet(t)
	b := startBackend(t, "alpha", nil)
	f.add("default", b)
	f.catalog("default", "alpha", listCatalog(t, b))
	f.health("default", "alpha", false)
	optimizer := func(o *Options) { o.Mode = ModeOptimizer }
	edgeA := startRecordEdge(t, f, "a", nil, optimizer)
	edgeB := startRecordEdge(t, f, "b", nil, optimizer)
	p := newSwitchProxy(t, edgeA.MCPURL())
	c := connectAs(t, p.url(), "alice", false)
	if c.finds(t, "echo the given text", "alpha_echo") {
		t.Fatal("find_tool sees a down backend's tool")
	}
	sid := c.cs.ID()
	eventually(t, 10*time.Second, "record on A", func() bool { rec := stored(t, edgeA.Edge, sid); return rec != nil && rec.Edge == "a" })

	edgeA.kill()
	p.to(edgeB.MCPURL())
	gen := f.health("default", "alpha", true)
	eventually(t, 10*time.Second, "B at the recovery", func() bool { return edgeB.confirmed.Load() >= gen })
	eventually(t, 10*time.Second, "find_tool on B sees the recovered tool", func() bool { return c.finds(t, "echo the given text", "alpha_echo") })
	if got := text(c.callVia(t, "alpha_echo", map[string]any{"text": "moved"})); got != "alpha: moved" {
		t.Fatalf("call_tool on B = %q", got)
	}
	if n := metricValue(t, edgeB.Edge, "fleetgate_edge_sessions_rehydrated_total"); n != 1 {
		t.Fatalf("B rehydrated %v sessions, want 1", n)
	}
	time.Sleep(500 * time.Millisecond) // a quiet window: nothing may arrive late
	if n := c.changed.Load(); n != 0 {
		t.Fatalf("optimizer session got %d list_changed across the move", n)
	}
}
