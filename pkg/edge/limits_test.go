package edge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
)

// initializeAs posts an initialize with an identity header (none for "")
// and returns the status, Retry-After and session id.
func initializeAs(t *testing.T, url, user string) (int, string, string) {
	t.Helper()
	return initializeVersion(t, url, user, "2025-11-25")
}

// initializeVersion is initializeAs of a client of protocol version.
func initializeVersion(tb testing.TB, url, user, version string) (int, string, string) {
	tb.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"limits","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if user != "" {
		req.Header.Set(userHeader, user)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Mcp-Session-Id")
}

// Sessions are capped per identity (429) and per edge (503), both with
// Retry-After; the sessions already there are untouched, and a session
// ending makes room again.
func TestSessionLimits(t *testing.T) {
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	e := startEdge(t, f, &Options{IdentityHeader: userHeader,
		Limits: admission.Options{MaxSessions: 3, MaxSessionsPerIdentity: 2}})
	var alice []string
	for range 2 {
		code, _, sid := initializeAs(t, e.MCPURL(), "alice")
		if code != http.StatusOK {
			t.Fatalf("alice's initialize: %d", code)
		}
		alice = append(alice, sid)
	}
	if code, retry, _ := initializeAs(t, e.MCPURL(), "alice"); code != http.StatusTooManyRequests || retry == "" {
		t.Fatalf("alice's third session: %d, Retry-After %q; want 429 with Retry-After", code, retry)
	}
	if code, _, _ := initializeAs(t, e.MCPURL(), "bob"); code != http.StatusOK {
		t.Fatalf("bob's session: %d", code)
	}
	if code, retry, _ := initializeAs(t, e.MCPURL(), "carol"); code != http.StatusServiceUnavailable || retry == "" {
		t.Fatalf("a session over the edge's cap: %d, Retry-After %q; want 503 with Retry-After", code, retry)
	}
	for _, sid := range alice {
		if e.reg.Lookup(sid) == nil {
			t.Fatalf("alice's session %s was dropped by the refusals", sid)
		}
	}
	e.reg.Forget(e.reg.Lookup(alice[0]))
	if code, _, _ := initializeAs(t, e.MCPURL(), "carol"); code != http.StatusOK {
		t.Fatalf("carol after a session ended: %d", code)
	}
	if n := testutil.ToFloat64(e.adm.refused.WithLabelValues(admission.ReasonSessionLimit)); n != 1 {
		t.Fatalf("%v session_limit refusals counted, want 1", n)
	}
}

// A session without a request for longer than SessionIdleTimeout is ended
// by the sweep; one with its standalone stream open is not idle.
func TestIdleSessionEnds(t *testing.T) { synctest.Test(t, testIdleSessionEnds) }

func testIdleSessionEnds(t *testing.T) {
	m := serveMemoryEdge(t, &Options{SessionIdleTimeout: time.Minute})
	m.up("alpha", "echo")
	m.settle()
	e := m.Edge
	sid := rawInitialize(t, e.MCPURL(), "")
	fastReadyNow(t, e, sid)
	s := e.reg.Lookup(sid)
	e.reg.Sweep(time.Now())
	if e.reg.Lookup(sid) == nil {
		t.Fatal("a session seen just now was ended")
	}
	later := time.Now().Add(2 * time.Minute)
	server, client := net.Pipe()
	go func() { _, _ = io.Copy(io.Discard, client) }()
	if !s.Attach(server, session.StreamHead(), nil) {
		t.Fatal("stream not attached")
	}
	e.reg.Sweep(later)
	if e.reg.Lookup(sid) == nil {
		t.Fatal("a session with a stream open was ended as idle")
	}
	client.Close() // the stream detaches
	synctest.Wait()
	if s.Streaming() {
		t.Fatal("the stream its client closed still attached")
	}
	e.reg.Sweep(later)
	if e.reg.Lookup(sid) != nil {
		t.Fatal("an idle session was not ended")
	}
	req, _ := http.NewRequest(http.MethodPost, e.MCPURL(), strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a request of the ended session: %d, want 404", resp.StatusCode)
	}
	if n := testutil.ToFloat64(e.m.idleEnded); n != 1 {
		t.Fatalf("%v idle sessions counted, want 1", n)
	}
}

// A backend result nested deeper than fastjson parses (300) but within the
// one depth limit (1000) reaches the client whole on the raw call path;
// one deeper than the limit is refused naming the backend.
func TestDeepBackendResult(t *testing.T) { synctest.Test(t, testDeepBackendResult) }

func testDeepBackendResult(t *testing.T) {
	b := demobackend.New("alpha", nil)
	nested := func(n int) json.RawMessage {
		return json.RawMessage(strings.Repeat("[", n) + "1" + strings.Repeat("]", n))
	}
	b.AddToolFunc(&mcp.Tool{Name: "nest", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ N int }
			_ = json.Unmarshal(r.Params.Arguments, &args)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deep"}},
				StructuredContent: map[string]any{"v": nested(args.N)}}, nil
		})
	m := serveMemoryEdge(t, nil)
	m.serveBackend(t, b)
	m.settle()
	e := m.Edge
	if _, ok := e.current().Catalog.Tool("alpha_nest"); !ok {
		t.Fatal("alpha_nest not served")
	}
	sid := rawInitialize(t, e.MCPURL(), "")
	fastReadyNow(t, e, sid)
	call := func(n int) map[string]any {
		_, _, msg := rawPost(t, e.MCPURL(), sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"alpha_nest","arguments":{"n":%d}}}`, n, n))
		res, _ := msg["result"].(map[string]any)
		return res
	}
	res := call(500)
	sc, _ := res["structuredContent"].(map[string]any)
	got, _ := json.Marshal(sc["v"])
	if res["isError"] == true || string(got) != string(nested(500)) {
		t.Fatalf("500 deep: %.300v", res)
	}
	res = call(1200)
	if res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), `backend "alpha"`) || !strings.Contains(fmt.Sprint(res["content"]), backend.KindTooDeep) {
		t.Fatalf("1200 deep: %.300v", res)
	}
}
