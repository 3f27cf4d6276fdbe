package edge

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fleetgate/fleetgate/pkg/edge/dispatch"
)

// routeSnapshot is the edge's route counts, by route and path.
func routeSnapshot(e *Edge) map[string]float64 {
	m := map[string]float64{}
	for i, path := range []string{"server", "lane"} {
		for k := dispatch.Kind(1); k.String() != "invalid"; k++ {
			if c := e.routes.c[i][k]; c != nil {
				m[k.String()+"/"+path] = testutil.ToFloat64(c)
			}
		}
	}
	return m
}

// routeTaken is the one route counted between two snapshots.
func routeTaken(t *testing.T, before, after map[string]float64) string {
	t.Helper()
	var taken []string
	for k, v := range after {
		if v != before[k] {
			taken = append(taken, fmt.Sprintf("%s+%v", k, v-before[k]))
		}
	}
	if len(taken) != 1 || !strings.HasSuffix(taken[0], "+1") {
		t.Fatalf("routes counted: %v, want exactly one", taken)
	}
	return strings.TrimSuffix(taken[0], "+1")
}

// rawConn is a client connection to the edge written by hand, so that a
// request can follow a call on one connection (a call lane).
type rawConn struct {
	t    *testing.T
	host string
	c    net.Conn
	br   *bufio.Reader
}

func dialRaw(t *testing.T, e *Edge) *rawConn {
	host := strings.TrimSuffix(strings.TrimPrefix(e.MCPURL(), "http://"), "/mcp")
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, host: host, c: c, br: bufio.NewReader(c)}
}

// do sends a request of method with headers hdr and body, and reads the
// response's status.
func (rc *rawConn) do(method string, hdr map[string]string, body string) int {
	rc.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n", method, rc.host)
	for k, v := range hdr {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	_ = rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(rc.c, b.String()); err != nil {
		rc.t.Fatal(err)
	}
	res, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		rc.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// Every request takes the same route whether it comes on a fresh
// connection to the server's handler or on a call lane (a connection
// whose previous request was a call answered by the edge): the lane
// serves the routes it keeps and hands every other back.
func TestRouteSameOnLane(t *testing.T) {
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	e := startEdge(t, f, &Options{IdentityHeader: userHeader, CallTimeout: 10 * time.Second})
	eventually(t, 10*time.Second, "view served", func() bool { _, ok := e.current().Catalog.Tool("alpha_echo"); return ok })
	sid := rawInitialize(t, e.MCPURL(), "alice")
	fastReady(t, e, sid) // bound and initialized: its calls are the edge's
	session := func(user string, more ...string) map[string]string {
		h := map[string]string{"Mcp-Protocol-Version": "2025-11-25", "Mcp-Session-Id": sid, userHeader: user}
		for i := 0; i+1 < len(more); i += 2 {
			h[more[i]] = more[i+1]
		}
		return h
	}
	stateless := func(method string) map[string]string {
		return map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method, userHeader: "alice", "Mcp-Name": "alpha_echo"}
	}
	const meta26 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`
	cases := []struct {
		name, method string
		hdr          map[string]string
		body, route  string
	}{
		{"plain call", "POST", session("alice"), gateCall(11, "alpha_echo"), "call"},
		{"call with _meta", "POST", session("alice"), `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"alpha_echo","arguments":{"text":"x"},"_meta":{"progressToken":"p"}}}`, "session-sdk"},
		{"list", "POST", session("alice"), `{"jsonrpc":"2.0","id":13,"method":"tools/list"}`, "session-sdk"},
		{"cancellation", "POST", session("alice"), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`, "cancel"},
		{"batch of one call", "POST", session("alice"), "[" + gateCall(14, "alpha_echo") + "]", "session-sdk"},
		{"someone else's session", "POST", session("bob"), gateCall(15, "alpha_echo"), "foreign"},
		{"tasks/list", "POST", session("alice"), `{"jsonrpc":"2.0","id":16,"method":"tasks/list","params":{}}`, "task"},
		{"unknown session", "POST", session("alice", "Mcp-Session-Id", "AAAAAAAAAAAAAAAAAAAAAAAAAA"), gateCall(17, "alpha_echo"), "not-found"}, // no session records here,
		{"malformed session id", "POST", session("alice", "Mcp-Session-Id", "no such id!"), gateCall(18, "alpha_echo"), "not-found"},
		{"call without a session", "POST", map[string]string{"Mcp-Protocol-Version": "2025-11-25", userHeader: "alice"}, gateCall(19, "alpha_echo"), "no-session"},
		{"initialize", "POST", map[string]string{userHeader: "alice"}, initBody, "initialize"},
		{"stateless call", "POST", stateless("tools/call"), `{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"alpha_echo","arguments":{"text":"x"},` + meta26 + `}}`, "stateless-call"},
		{"stateless list", "POST", stateless("tools/list"), `{"jsonrpc":"2.0","id":21,"method":"tools/list","params":{` + meta26 + `}}`, "stateless-sdk"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// On a fresh connection: the server's handler.
			before := routeSnapshot(e)
			c := dialRaw(t, e)
			hdr := map[string]string{"Connection": "close"}
			for k, v := range tc.hdr {
				hdr[k] = v
			}
			c.do(tc.method, hdr, tc.body)
			server := routeTaken(t, before, routeSnapshot(e))

			// On a lane: a call first, then the request on the same connection.
			lane := dialRaw(t, e)
			if code := lane.do("POST", session("alice"), gateCall(1, "alpha_echo")); code != http.StatusOK {
				t.Fatalf("the lane's first call: %d", code)
			}
			handbacks := testutil.ToFloat64(laneHandbacks(e))
			before = routeSnapshot(e)
			lane.do(tc.method, tc.hdr, tc.body)
			onLane := routeTaken(t, before, routeSnapshot(e))

			route, _, _ := strings.Cut(server, "/")
			laneRoute, path, _ := strings.Cut(onLane, "/")
			if route != tc.route || laneRoute != route {
				t.Fatalf("route %s on the server, %s on a lane; want %s", server, onLane, tc.route)
			}
			k, _ := dispatch.Parse(route)
			handedBack := testutil.ToFloat64(laneHandbacks(e)) > handbacks
			if dispatch.Lane(k) != (path == "lane") || dispatch.Lane(k) == handedBack {
				t.Fatalf("route %s taken on the %s path (handed back: %v)", route, path, handedBack)
			}
		})
	}
}
