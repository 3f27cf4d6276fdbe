package test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
	"github.com/fleetgate/fleetgate/pkg/region"
)

// startRecordingRegionalEdge is startRegionalEdge with session records in
// the NATS at natsURL (its own region's bucket), written within 50 ms.
func startRecordingRegionalEdge(t *testing.T, id, natsURL string, regions []string) *edge.Edge {
	t.Helper()
	e, err := edge.NewRegional(jsConnect(t, natsURL), regions, &edge.Options{ID: id, Listen: "127.0.0.1:0",
		AdminListen: "127.0.0.1:0", Coalesce: time.Millisecond, CallTimeout: 10 * time.Second,
		Records: &edge.RecordOptions{JetStream: jsConnect(t, natsURL), FlushEvery: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	runEdge(t, e, 60*time.Second)
	return e
}

// listToolsAs posts a tools/list for session sid (protocol 2025-11-25) to
// the MCP endpoint url, as a client whose requests a load balancer moved
// there would, and returns the status and the body.
func listToolsAs(t *testing.T, url, sid string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url,
		strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("tools/list to %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatalf("tools/list to %s: body: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

// TestRegionSessionMoveReinitializes tests what docs/regions.md promises
// of a session whose requests move: regions a and b linked, edges a1 and
// a2 in region a and b1 in b, each writing session records to its own
// region's bucket. A session created on a1 continues on a2 (rebuilt from
// its record, same id); the same id on b1 is answered 404, the record
// never having crossed the link; the client re-initializes on b1 and
// calls both regions' backends there.
func TestRegionSessionMoveReinitializes(t *testing.T) {
	link := natstest.NewLinkProxy(t)
	a, b := startLinkedRegions(t, link)
	alpha := startBackend(t, "alpha", nil)
	beta := startBackend(t, "beta", nil)
	regions := []string{"a", "b"}
	startRegionController(t, a.ClientURL(), "a", fleetYAML(400*time.Millisecond, 100*time.Millisecond, alpha), regions...)
	startRegionController(t, b.ClientURL(), "b", fleetYAML(400*time.Millisecond, 100*time.Millisecond, beta), regions...)
	for r, url := range map[string]string{"a": a.ClientURL(), "b": b.ClientURL()} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := region.EnsureMirrors(ctx, jsConnect(t, url), r, regions, nil)
		cancel()
		if err != nil {
			t.Fatalf("mirrors in %s: %v", r, err)
		}
	}
	a1 := startRecordingRegionalEdge(t, "a1", a.ClientURL(), regions)
	a2 := startRecordingRegionalEdge(t, "a2", a.ClientURL(), regions)
	b1 := startRecordingRegionalEdge(t, "b1", b.ClientURL(), regions)
	for _, e := range []*edge.Edge{a1, a2, b1} {
		eventually(t, 60*time.Second, "both regions' backends on "+e.MCPURL(), func() bool {
			tools := e.View().Tools
			return slices.Contains(tools, "alpha_echo") && slices.Contains(tools, "beta_echo")
		})
	}

	c := connectMCP(t, a1.MCPURL(), "2025-11-25")
	if res, err := c.call("alpha_echo", map[string]any{"text": "on a1"}); err != nil || text(res) != "alpha: on a1" {
		t.Fatalf("alpha_echo on a1: %v %q", err, text(res))
	}
	sid := c.cs.ID()

	// Within region a the session moves: a2 rebuilds it from its record.
	var status int
	var body string
	eventually(t, 20*time.Second, "a2 serves the session created on a1", func() bool {
		status, body = listToolsAs(t, a2.MCPURL(), sid)
		return status == http.StatusOK
	})
	if !strings.Contains(body, "alpha_echo") || !strings.Contains(body, "beta_echo") {
		t.Fatalf("a2's tools/list for the moved session: %s", body)
	}
	if info := findSession(a2, sid); info == nil || info.Edge != "a2" {
		t.Fatalf("a2's view of the moved session: %+v", info)
	}

	// To region b it does not: b1 has no record of it, however long it
	// waits (the record is in region a's bucket only), and answers 404.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if status, body = listToolsAs(t, b1.MCPURL(), sid); status != http.StatusNotFound {
			t.Fatalf("b1 answered the session of region a %d: %s", status, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if findSession(b1, sid) != nil {
		t.Fatal("b1 lists the session of region a")
	}

	// The client re-initializes on b1, as MCP requires after a 404, and
	// calls both regions' backends there.
	moved := connectMCP(t, b1.MCPURL(), "2025-11-25")
	if moved.cs.ID() == sid {
		t.Fatalf("b1 gave the new session the old id %s", sid)
	}
	for _, tool := range []string{"alpha_echo", "beta_echo"} {
		if res, err := moved.call(tool, map[string]any{"text": "on b1"}); err != nil || !strings.HasSuffix(text(res), ": on b1") {
			t.Fatalf("%s on b1 after re-initializing: %v %q", tool, err, text(res))
		}
	}
	if info := findSession(b1, moved.cs.ID()); info == nil || info.Edge != "b1" {
		t.Fatalf("b1's view of the new session: %+v", info)
	}
	// The session still lives in region a, on both edges there.
	if status, _ = listToolsAs(t, a1.MCPURL(), sid); status != http.StatusOK {
		t.Fatalf("a1 answered its own session %d after the move", status)
	}
}

// findSession is e's admin record of session sid, nil if e has none.
func findSession(e *edge.Edge, sid string) *edge.SessionInfo {
	for _, s := range e.Sessions() {
		if s.ID == sid {
			return &s
		}
	}
	return nil
}
