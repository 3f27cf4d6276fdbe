package edge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/calltrail"
	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// bulkCatalog is a catalog of n synthetic tools (more than one tools/list
// page when n > 1000).
func bulkCatalog(t testing.TB, n int) *events.Catalog {
	t.Helper()
	c := &events.Catalog{}
	for i := range n {
		c.Tools = append(c.Tools, json.RawMessage(fmt.Sprintf(`{"name":"t%04d","description":"tool %d","inputSchema":{"type":"object"}}`, i, i)))
	}
	var err error
	if c.Digest, err = catalog.Digest(c.Tools); err != nil {
		t.Fatal(err)
	}
	return c
}

// publishBulk makes a backend serving n synthetic tools advertisable.
func publishBulk(f *fleet, name string, n int) uint64 {
	f.publish(events.NewBackendAdded(time.Now(), "default", name, events.BackendConfig{URL: "http://127.0.0.1:1/mcp", Transport: "streamable-http"}))
	f.catalog("default", name, bulkCatalog(f.t, n))
	return f.health("default", name, true)
}

// verdictOf waits until the edge's admin API shows the session's verdict
// as want, and returns what it shows.
func verdictOf(t *testing.T, e *Edge, id, want string) SessionInfo {
	t.Helper()
	var info SessionInfo
	eventually(t, 10*time.Second, "verdict "+want, func() bool {
		var ok bool
		info, ok = sessionInfo(t, e, id)
		return ok && info.Verdict == want
	})
	return info
}

// A session that lists every page after a change is converged; the
// evidence survives in its record.
func TestVerdictConvergedAfterRelist(t *testing.T) {
	f := newSharedFleet(t)
	publishBulk(f.fleet, "bulk", 1500)
	e := startRecordEdge(t, f, "a", nil, nil)
	c := connectAs(t, e.MCPURL(), "alice", false)
	if n := len(c.toolNames(t)); n != 1500 {
		t.Fatalf("%d tools listed", n)
	}
	info := verdictOf(t, e.Edge, c.cs.ID(), "converged")
	if tr := info.Convergence.Traversal; tr.Pages != 2 || tr.Tools != 1500 {
		t.Fatalf("traversal %+v", tr)
	}
	b := startBackend(t, "alpha", nil)
	f.healthyBackend("default", b)
	c.waitChanged(t, 1, 20*time.Second)
	verdictOf(t, e.Edge, c.cs.ID(), "stale")
	if names := c.toolNames(t); !names["alpha_echo"] {
		t.Fatal("alpha_echo not listed")
	}
	info = verdictOf(t, e.Edge, c.cs.ID(), "converged")
	if !info.Convergence.LastSignal.Sent() || info.Convergence.Traversal.StartSeq <= info.Convergence.LastSignal.Seq {
		t.Fatalf("evidence %+v", info.Convergence)
	}
	if n := metricValue(t, e.Edge, "fleetgate_edge_signal_to_converged_seconds"); n != 1 {
		t.Fatalf("signal-to-converged observations: %v", n)
	}
	eventually(t, 10*time.Second, "record converged", func() bool {
		rec := stored(t, e.Edge, c.cs.ID())
		return rec != nil && rec.Convergence.Traversal.Digest == info.Convergence.CurrentDigest && rec.RegistryDigest == rec.Convergence.CurrentDigest
	})
}

// verdictIs checks, once the bubble is idle, that the edge's admin API
// shows the session's verdict as want, and returns what it shows.
func verdictIs(t *testing.T, e *Edge, id, want string) SessionInfo {
	t.Helper()
	synctest.Wait()
	info, ok := sessionInfo(t, e, id)
	if !ok || info.Verdict != want {
		t.Fatalf("session %s: verdict %q (found %v), want %q", id, info.Verdict, ok, want)
	}
	return info
}

// A session told of a change that does not list again is stale.
func TestVerdictStaleWithoutRelist(t *testing.T) {
	cat := demoCatalog(t, "alpha")
	synctest.Test(t, func(t *testing.T) {
		e := serveMemoryEdge(t, &Options{ID: "a", IdentityHeader: userHeader, Coalesce: 20 * time.Millisecond})
		c := connectAs(t, e.MCPURL(), "alice", false)
		c.toolNames(t)
		verdictIs(t, e.Edge, c.cs.ID(), "converged")
		e.upCatalog("alpha", cat)
		e.settle()
		if n := c.changed.Load(); n != 1 {
			t.Fatalf("%d tools/list_changed for alpha's arrival; want 1", n)
		}
		info := verdictIs(t, e.Edge, c.cs.ID(), "stale")
		if !info.Convergence.ClientListChanged || !info.Convergence.ServerListChanged {
			t.Fatalf("negotiation evidence %+v", info.Convergence)
		}
		if n := metricValue(t, e.Edge, "fleetgate_edge_sessions_by_verdict"); n != 1 {
			t.Fatalf("sessions by verdict sum to %v", n)
		}
	})
}

// A client without listChanged (no standalone stream, nothing declared)
// that never lists again after a change is unverifiable, not stale.
func TestVerdictUnverifiableWithoutListChanged(t *testing.T) {
	cat := demoCatalog(t, "alpha")
	synctest.Test(t, func(t *testing.T) {
		e := serveMemoryEdge(t, &Options{ID: "a", IdentityHeader: userHeader, Coalesce: 20 * time.Millisecond})
		c := connectAs(t, e.MCPURL(), "alice", true)
		c.toolNames(t)
		verdictIs(t, e.Edge, c.cs.ID(), "converged")
		gen := e.upCatalog("alpha", cat)
		e.settle()
		if g := e.confirmed.Load(); g != gen {
			t.Fatalf("edge at generation %d; want the change's %d", g, gen)
		}
		info := verdictIs(t, e.Edge, c.cs.ID(), "unverifiable")
		if info.Convergence.ClientListChanged || info.Convergence.LastSignal.Sent() {
			t.Fatalf("evidence %+v", info.Convergence)
		}
	})
}

// Every tools/call is in the call trail with its session, owner and route;
// arguments only when the trail keeps them.
func TestToolCallsAudited(t *testing.T) {
	f := newSharedFleet(t)
	trail, err := calltrail.Open(t.Context(), f.js, &calltrail.Options{IncludeArguments: true})
	if err != nil {
		t.Fatal(err)
	}
	b := startBackend(t, "alpha", nil)
	b.AddToolFunc(&mcp.Tool{Name: "fail", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it failed"}}}, nil
		})
	f.healthyBackend("default", b)
	e := startRecordEdge(t, f, "a", nil, func(o *Options) { o.CallTrail = trail })
	c := connectAs(t, e.MCPURL(), "alice", true)
	c.call(t, "alpha_echo", map[string]any{"text": "audited"})
	c.call(t, "nope_echo", nil)
	c.call(t, "alpha_fail", nil)
	got := trailEntries(t, f, trail, 3)
	ok := got[0]
	if ok.SessionHash != sessionstore.IDHash(c.cs.ID()) || ok.OwnerHash != sessionstore.OwnerHash("alice") || ok.Tool != "alpha_echo" ||
		ok.BackendTool != "echo" || ok.Backend != "alpha" || ok.Outcome != calltrail.OutcomeOK || ok.Edge != "a" ||
		!strings.Contains(string(ok.Arguments), "audited") || ok.Generation == 0 {
		t.Fatalf("entry %+v", ok)
	}
	if bad := got[1]; bad.Tool != "nope_echo" || bad.Outcome != calltrail.OutcomeError || bad.Error == "" {
		t.Fatalf("entry of the unknown tool %+v", bad)
	}
	if failed := got[2]; failed.Tool != "alpha_fail" || failed.Outcome != calltrail.OutcomeIsError || failed.Error != "it failed" {
		t.Fatalf("entry of an isError result %+v", failed)
	}
}

// A call_tool of an optimizer session is in the trail as the tool it
// called, with the route it took; one of an unknown tool as an error.
func TestCallToolAudited(t *testing.T) {
	f := newSharedFleet(t)
	trail, err := calltrail.Open(t.Context(), f.js, &calltrail.Options{IncludeArguments: true})
	if err != nil {
		t.Fatal(err)
	}
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	e := startRecordEdge(t, f, "a", nil, func(o *Options) { o.CallTrail, o.Mode = trail, ModeOptimizer })
	c := connectAs(t, e.MCPURL(), "alice", true)
	c.call(t, CallToolName, map[string]any{"tool_name": "alpha_echo", "arguments": map[string]any{"text": "via"}})
	c.call(t, CallToolName, map[string]any{"tool_name": "nope_echo"})
	got := trailEntries(t, f, trail, 2)
	if ok := got[0]; ok.Tool != "alpha_echo" || ok.Backend != "alpha" || ok.BackendTool != "echo" ||
		ok.Outcome != calltrail.OutcomeOK || ok.SessionHash != sessionstore.IDHash(c.cs.ID()) || !strings.Contains(string(ok.Arguments), "via") {
		t.Fatalf("entry %+v", ok)
	}
	if bad := got[1]; bad.Tool != "nope_echo" || bad.Outcome != calltrail.OutcomeError || !strings.Contains(bad.Error, "not available") {
		t.Fatalf("entry of the unknown tool %+v", bad)
	}
}

// trailEntries waits for n entries of trail to be published and reads
// them from the stream.
func trailEntries(t *testing.T, f *sharedFleet, trail *calltrail.Trail, n int) []calltrail.Entry {
	t.Helper()
	eventually(t, 10*time.Second, "entries published", func() bool { return trail.Stats().Published >= uint64(n) })
	cons, err := f.js.OrderedConsumer(t.Context(), calltrail.DefaultStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]calltrail.Entry, 0, n)
	for range n {
		msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var ent calltrail.Entry
		if err := json.Unmarshal(msg.Data(), &ent); err != nil {
			t.Fatal(err)
		}
		got = append(got, ent)
	}
	return got
}
