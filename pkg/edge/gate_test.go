package edge

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/policy"
	"github.com/fleetgate/fleetgate/pkg/ratelimit"
)

// gatePost posts body on session sid (protocol version) as user and
// returns the status and the response body.
func gatePost(t testing.TB, c *http.Client, url, sid, version, user, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", version)
	req.Header.Set("Mcp-Session-Id", sid)
	if user != "" {
		req.Header.Set(userHeader, user)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// initializeAt opens a session of protocol version as user ("": no
// identity header).
func initializeAt(t testing.TB, url, user, version string) string {
	t.Helper()
	code, _, sid := initializeVersion(t, url, user, version)
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize %s: %d", version, code)
	}
	if code, _ := gatePost(t, http.DefaultClient, url, sid, version, user, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("initialized: %d", code)
	}
	return sid
}

func gateCall(id int, tool string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"text":"x"}}}`, id, tool)
}

// budgetedEdge is an edge in front of backend alpha whose policy gives
// each identity slots concurrent calls and alpha's tools a budget of
// burst calls (no refill to speak of), and a session of alice's of
// protocol version, served in the synctest bubble of t.
func budgetedEdge(t *testing.T, version string, slots, burst int) (*Edge, *demobackend.Backend, string) {
	t.Helper()
	e := serveMemoryEdge(t, &Options{IdentityHeader: userHeader, CallTimeout: 10 * time.Second})
	alpha := demobackend.New("alpha", nil)
	e.serveBackend(t, alpha)
	e.settle()
	if _, ok := e.current().Catalog.Tool("alpha_echo"); !ok {
		t.Fatal("alpha_echo not served")
	}
	sid := initializeAt(t, e.MCPURL(), "alice", version)
	e.setPolicy(&policy.Section{RateLimits: &ratelimit.Limits{
		Identity: &ratelimit.IdentityLimits{ConcurrentCalls: slots},
		Tools:    []ratelimit.ToolRule{{Name: "alpha-budget", Tools: []string{"alpha_*"}, RequestsPerSecond: 0.001, Burst: burst}},
	}})
	e.settle()
	return e.Edge, alpha, sid
}

// The limits are decided on the parse that serves: once the tool's budget
// is spent, neither a call with a member the go-sdk ignores ("Method") nor
// a batch of calls (protocol 2025-03-26, which has batches) reaches the
// backend; a batch over the bound is refused whole; each refusal names
// its limit.
func TestGateDecidesOnServedParse(t *testing.T) { synctest.Test(t, testGateDecidesOnServedParse) }

func testGateDecidesOnServedParse(t *testing.T) {
	const old = "2025-03-26"
	e, alpha, sid := budgetedEdge(t, old, 1, 1)
	c := http.DefaultClient
	if code, body := gatePost(t, c, e.MCPURL(), sid, old, "alice", gateCall(2, "alpha_echo")); code != http.StatusOK {
		t.Fatalf("call within the budget: %d %s", code, body)
	}
	before := alpha.Calls()
	// The go-sdk reads member names case-sensitively: "Method" is not the method.
	sneaky := `{"jsonrpc":"2.0","id":3,"method":"tools/call","Method":"ping","params":{"name":"alpha_echo","arguments":{"text":"x"}}}`
	code, body := gatePost(t, c, e.MCPURL(), sid, old, "alice", sneaky)
	if code != http.StatusBadRequest || !strings.Contains(body, `"code":-32600`) || !strings.Contains(body, "Method") {
		t.Fatalf("case-variant member: %d %s; want 400 with a JSON-RPC -32600 naming the member", code, body)
	}
	twice := `{"jsonrpc":"2.0","id":4,"method":"ping","method":"tools/call","params":{"name":"alpha_echo"}}`
	if code, body := gatePost(t, c, e.MCPURL(), sid, old, "alice", twice); code != http.StatusBadRequest {
		t.Fatalf("member sent twice: %d %s", code, body)
	}
	var batch []string
	for i := range 20 {
		batch = append(batch, gateCall(10+i, "alpha_echo"))
	}
	code, body = gatePost(t, c, e.MCPURL(), sid, old, "alice", "["+strings.Join(batch, ",")+"]")
	if code != http.StatusBadRequest || !strings.Contains(body, "batch of more than 16") {
		t.Fatalf("batch of 20: %d %s; want 400 naming the bound", code, body)
	}
	code, body = gatePost(t, c, e.MCPURL(), sid, old, "alice", "["+strings.Join(batch[:3], ",")+"]")
	if code != http.StatusTooManyRequests || !strings.Contains(body, "call rate limit of this tool") || !strings.Contains(body, "alpha-budget") {
		t.Fatalf("batch over the budget: %d %s; want 429 naming the tool's limit", code, body)
	}
	if n := alpha.Calls(); n != before {
		t.Fatalf("the backend was called %d more times past the budget", n-before)
	}
}

// A batch is charged call by call: with a budget of 2, a batch of 2 calls
// passes and a batch of 3 does not, and the concurrency limit counts each
// call of a batch.
func TestBatchChargedPerCall(t *testing.T) { synctest.Test(t, testBatchChargedPerCall) }

func testBatchChargedPerCall(t *testing.T) {
	const old = "2025-03-26"
	e, alpha, sid := budgetedEdge(t, old, 2, 4)
	two := "[" + gateCall(1, "alpha_echo") + "," + gateCall(2, "alpha_echo") + "]"
	if code, body := gatePost(t, http.DefaultClient, e.MCPURL(), sid, old, "alice", two); code != http.StatusOK || strings.Count(body, `"result"`) != 2 {
		t.Fatalf("batch of two calls: %d %s", code, body)
	}
	three := "[" + gateCall(3, "alpha_echo") + "," + gateCall(4, "alpha_echo") + "," + gateCall(5, "alpha_echo") + "]"
	code, body := gatePost(t, http.DefaultClient, e.MCPURL(), sid, old, "alice", three)
	if code != http.StatusTooManyRequests || !strings.Contains(body, "concurrent call limit") {
		t.Fatalf("batch of three calls with two slots: %d %s", code, body)
	}
	if n := alpha.Calls(); n != 2 {
		t.Fatalf("backend calls %d, want 2", n)
	}
}

// A concurrency slot is held while its call runs, not while its
// connection stays open: with concurrent_calls 1, a keep-alive client's
// sequential calls all pass (the connection becomes a call lane after the
// first), and so does a call on another connection meanwhile.
func TestConcurrencySlotPerCall(t *testing.T) {
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	e := startEdge(t, f, &Options{IdentityHeader: userHeader, CallTimeout: 10 * time.Second})
	eventually(t, 10*time.Second, "view served", func() bool { _, ok := e.current().Catalog.Tool("alpha_echo"); return ok })
	sid := rawInitialize(t, e.MCPURL(), "alice")
	fastReady(t, e, sid)
	setPolicy(t, f, &policy.Section{RateLimits: &ratelimit.Limits{Identity: &ratelimit.IdentityLimits{ConcurrentCalls: 1}}}, e)
	keep := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer keep.CloseIdleConnections()
	other := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 4 {
		if code, body := gatePost(t, keep, e.MCPURL(), sid, "2025-11-25", "alice", gateCall(100+i, "alpha_echo")); code != http.StatusOK {
			t.Fatalf("sequential call %d on one connection: %d %s", i, code, body)
		}
		if code, body := gatePost(t, other, e.MCPURL(), sid, "2025-11-25", "alice", gateCall(200+i, "alpha_echo")); code != http.StatusOK {
			t.Fatalf("call %d on a fresh connection while the first stays open: %d %s", i, code, body)
		}
	}
}

// Failed authentications on a call lane are charged to the client's
// address, as on a fresh connection: bad tokens sent on a kept-alive
// connection spend the budget of that address, not a key shared by
// every lane.
func TestLaneFailedAuthCharged(t *testing.T) {
	f := newFleet(t)
	iss := issuertest.New(t, nil)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	e := authEdge(t, f, iss, nil)
	eventually(t, 10*time.Second, "view served", func() bool { _, ok := e.current().Catalog.Tool("alpha_echo"); return ok })
	good := iss.Mint(iss.Claims("alice", e.MCPURL()))
	res := postWithToken(t, e.MCPURL(), "", good, initBody)
	sid := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d", res.StatusCode)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(strings.TrimSuffix(e.MCPURL(), "/mcp"), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	send := func(token, body string) int {
		t.Helper()
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
			"Mcp-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: %s\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s",
			strings.TrimPrefix(strings.TrimSuffix(e.MCPURL(), "/mcp"), "http://"), sid, token, len(body), body)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := send(good, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("initialized: %d", code)
	}
	fastReady(t, e, sid) // its calls are the edge's: the connection becomes a lane
	if code := send(good, gateCall(1, "alpha_echo")); code != http.StatusOK {
		t.Fatalf("first call (the connection becomes a lane): %d", code)
	}
	setPolicy(t, f, &policy.Section{RateLimits: &ratelimit.Limits{
		FailedAuth: &ratelimit.FailedAuthLimits{PerAddressPerMinute: 1, Burst: 2}}}, e)
	for i := range 2 {
		if code := send("garbage", gateCall(2+i, "alpha_echo")); code != http.StatusUnauthorized {
			t.Fatalf("bad token %d on the lane: %d", i, code)
		}
	}
	// The same address on a fresh connection: its budget is spent.
	fresh := postWithToken(t, e.MCPURL(), "", good, initBody)
	if fresh.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a fresh connection from the address whose lane spent the budget: %d, want 429", fresh.StatusCode)
	}
}
