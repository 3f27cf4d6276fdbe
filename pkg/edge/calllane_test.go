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

	"github.com/fleetgate/fleetgate/pkg/calltrail"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// laneClient is one raw HTTP/1.1 connection to an edge.
type laneClient struct {
	t    *testing.T
	conn net.Conn
	br   *bufio.Reader
}

func dialLane(t *testing.T, e *Edge) *laneClient {
	t.Helper()
	c, err := net.Dial("tcp", e.mcpLn.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &laneClient{t: t, conn: c, br: bufio.NewReader(c)}
}

// laneRequest is the bytes of a POST to /mcp of session sid; extra are
// more header lines.
func laneRequest(sid, body string, extra ...string) string {
	var b strings.Builder
	b.WriteString("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")
	b.WriteString("Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2025-11-25\r\n")
	fmt.Fprintf(&b, "Mcp-Session-Id: %s\r\nContent-Length: %d\r\n", sid, len(body))
	for _, h := range extra {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n" + body)
	return b.String()
}

func callBody(id, tool string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":{"text":"x"}}}`, id, tool)
}

// send writes raw as one write.
func (lc *laneClient) send(raw string) {
	lc.t.Helper()
	if _, err := io.WriteString(lc.conn, raw); err != nil {
		lc.t.Fatal(err)
	}
}

// read reads one response whole.
func (lc *laneClient) read() (*http.Response, string) {
	lc.t.Helper()
	_ = lc.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(lc.br, nil)
	if err != nil {
		lc.t.Fatalf("read response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		lc.t.Fatalf("read response body: %v", err)
	}
	return resp, string(body)
}

// laneEdge starts an edge serving backend alpha with a session ready for
// the fast path; lanes off makes it leave every request to net/http.
func laneEdge(t *testing.T, f *fleet, lanes bool, o *Options) (*Edge, string) {
	t.Helper()
	if !lanes {
		c := Options{CallTimeout: 10 * time.Second}
		if o != nil {
			c = *o
		}
		c.paths.noLanes = true
		o = &c
	}
	e := startEdge(t, f, o)
	eventually(t, 10*time.Second, "view served", func() bool { _, ok := e.current().Catalog.Tool("alpha_echo"); return ok })
	sid := rawInitialize(t, e.MCPURL(), "")
	fastReady(t, e, sid)
	return e, sid
}

// Every request on a connection gets from an edge with call lanes what an
// edge without them gives it: calls answered on the lane, and others (a
// tools/list, malformed JSON, an unknown session, a call the fast path does
// not take, a notification, an oversized body) given back to the server
// with their bytes, the connection going on after each.
func TestLaneMatchesServer(t *testing.T) {
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	steps := []struct {
		name string
		req  func(sid string) string
	}{
		{"call", func(sid string) string { return laneRequest(sid, callBody("1", "alpha_echo")) }},
		{"call, string id", func(sid string) string { return laneRequest(sid, callBody(`"s-2"`, "alpha_echo")) }},
		{"tools/list", func(sid string) string {
			return laneRequest(sid, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
		}},
		{"call after a give-back", func(sid string) string { return laneRequest(sid, callBody("4", "alpha_echo")) }},
		{"unknown tool", func(sid string) string { return laneRequest(sid, callBody("5", "nope")) }},
		{"malformed JSON", func(sid string) string { return laneRequest(sid, `{"jsonrpc":"2.0","id":6,`) }},
		{"call with _meta", func(sid string) string {
			return laneRequest(sid, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"alpha_echo","arguments":{"text":"x"},"_meta":{}}}`)
		}},
		{"notification", func(sid string) string {
			return laneRequest(sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`)
		}},
		{"unknown session", func(string) string { return laneRequest("NOSUCHSESSION0000", callBody("8", "alpha_echo")) }},
		{"wrong protocol version", func(sid string) string {
			return strings.Replace(laneRequest(sid, callBody("9", "alpha_echo")), "2025-11-25", "2025-06-18", 1)
		}},
		{"call again", func(sid string) string { return laneRequest(sid, callBody("10", "alpha_echo")) }},
		{"oversized body", func(sid string) string {
			return laneRequest(sid, callBody("11", strings.Repeat("x", maxBody)))
		}},
	}
	type answer struct {
		status int
		ctype  string
		body   string
	}
	run := func(lanes bool) ([]answer, *Edge) {
		e, sid := laneEdge(t, f, lanes, nil)
		lc := dialLane(t, e)
		var out []answer
		for _, st := range steps {
			raw := st.req(sid)
			go func() { _, _ = io.WriteString(lc.conn, raw) }() // a large body is read as it is written
			resp, body := lc.read()
			body = strings.ReplaceAll(body, sid, "SID")
			out = append(out, answer{resp.StatusCode, resp.Header.Get("Content-Type"), body})
			if resp.Close {
				break
			}
		}
		return out, e
	}
	want, _ := run(false)
	got, e := run(true)
	if len(got) != len(want) {
		t.Fatalf("%d answers with lanes, %d without", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s:\nwith lanes    %+v\nwithout lanes %+v", steps[i].name, got[i], want[i])
		}
	}
	// Given back: the tools/list, the malformed JSON (the server then
	// keeps the connection until the next plain call) and the oversized
	// body.
	if n := testutil.ToFloat64(laneHandbacks(e)); n != 3 {
		t.Errorf("%v requests given back, want 3", n)
	}
}

// Requests the server refuses or tolerates get on a lane what the server
// gives them: a malformed Host is refused (400), CR LF before a request
// after a POST is skipped.
func TestLaneRefusesAsServer(t *testing.T) {
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	for name, mk := range map[string]func(sid string) string{
		"malformed Host": func(sid string) string {
			return strings.Replace(laneRequest(sid, callBody("2", "alpha_echo")), "Host: 127.0.0.1", "Host: localhost:80{", 1)
		},
		"CR LF before the request": func(sid string) string { return "\r\n" + laneRequest(sid, callBody("2", "alpha_echo")) },
	} {
		t.Run(name, func(t *testing.T) {
			var got [2]int
			for i, lanes := range []bool{false, true} {
				e, sid := laneEdge(t, f, lanes, nil)
				lc := dialLane(t, e)
				lc.send(laneRequest(sid, callBody("1", "alpha_echo")))
				lc.read()
				if lanes {
					eventually(t, 10*time.Second, "lane open", func() bool { return testutil.ToFloat64(lanesGauge(e)) == 1 })
				}
				lc.send(mk(sid))
				resp, _ := lc.read()
				got[i] = resp.StatusCode
			}
			if got[0] != got[1] {
				t.Errorf("without lanes %d, with lanes %d", got[0], got[1])
			}
		})
	}
}

// Requests sent together are answered in order: a call on the lane, then
// a tools/list given back with the bytes already read for it, then a call
// on the lane the server's handler makes again.
func TestLanePipelined(t *testing.T) {
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	e, sid := laneEdge(t, f, true, nil)
	lc := dialLane(t, e)
	lc.send(laneRequest(sid, callBody("1", "alpha_echo")))
	if resp, body := lc.read(); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"id":1`) {
		t.Fatalf("first call: %d %s", resp.StatusCode, body)
	}
	eventually(t, 10*time.Second, "lane open", func() bool { return testutil.ToFloat64(lanesGauge(e)) == 1 })
	lc.send(laneRequest(sid, callBody("2", "alpha_echo")) +
		laneRequest(sid, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`) +
		laneRequest(sid, callBody("4", "alpha_echo")) +
		laneRequest(sid, callBody("5", "alpha_echo")))
	for _, id := range []string{"2", "3", "4", "5"} {
		resp, body := lc.read()
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"id":`+id) {
			t.Fatalf("response %s: %d %s", id, resp.StatusCode, body)
		}
	}
	if n := testutil.ToFloat64(laneHandbacks(e)); n != 1 {
		t.Fatalf("%v requests given back, want 1 (the tools/list)", n)
	}
}

// Calls alternating one by one with other requests (a tools/list, or a
// GET the server refuses) leave the connection with the server after the
// first give-back (moving it each time would cost more than the lane
// saves); calls in a row make it a lane again, which reads the connection
// itself, not through a wrapper.
func TestLaneAlternating(t *testing.T) {
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	for name, other := range map[string]func(sid string, id int) string{
		"tools/list": func(sid string, id int) string {
			return laneRequest(sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, id))
		},
		"GET": func(sid string, _ int) string {
			return "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nMcp-Session-Id: " + sid + "\r\nMcp-Protocol-Version: 2025-11-25\r\n\r\n"
		},
	} {
		t.Run(name, func(t *testing.T) {
			e, sid := laneEdge(t, f, true, nil)
			lc := dialLane(t, e)
			for i := range 20 {
				lc.send(laneRequest(sid, callBody(fmt.Sprint(2*i), "alpha_echo")))
				if resp, body := lc.read(); resp.StatusCode != http.StatusOK || !strings.Contains(body, fmt.Sprintf(`"id":%d`, 2*i)) {
					t.Fatalf("call %d: %d %s", i, resp.StatusCode, body)
				}
				lc.send(other(sid, 2*i+1))
				lc.read()
			}
			if n := testutil.ToFloat64(lanesGauge(e)); n != 0 {
				t.Fatalf("%v lanes while calls alternate with other requests, want 0", n)
			}
			for id := 100; id < 103; id++ {
				lc.send(laneRequest(sid, callBody(fmt.Sprint(id), "alpha_echo")))
				lc.read()
			}
			if n := e.lanes.Open(); n != 1 {
				t.Fatalf("%d lanes after calls in a row, want 1", n)
			}
			if n := e.lanes.Wrapped(); n != 0 {
				t.Fatalf("%d lanes read a given-back wrapper, not the connection", n)
			}
			if n := testutil.ToFloat64(laneHandbacks(e)); n != 1 {
				t.Fatalf("%v requests given back, want 1", n)
			}
		})
	}
}

// A client that leaves during a call on a lane cancels the call, as the
// server does for its requests.
func TestLaneClientGoneCancelsCall(t *testing.T) {
	f := newFleet(t)
	b := startBackend(t, "alpha", nil)
	f.healthyBackend("default", b)
	e, sid := laneEdge(t, f, true, &Options{CallTimeout: time.Minute})
	lc := dialLane(t, e)
	lc.send(laneRequest(sid, callBody("1", "alpha_echo")))
	lc.read()
	b.SetHang(true)
	t.Cleanup(func() { b.SetHang(false) })
	lc.send(laneRequest(sid, callBody("2", "alpha_echo")))
	eventually(t, 10*time.Second, "call in flight", func() bool { return e.reg.Lookup(sid).CallInFlight("2") })
	lc.conn.Close()
	eventually(t, 10*time.Second, "call cancelled", func() bool { return !e.reg.Lookup(sid).CallInFlight("2") })
	eventually(t, 10*time.Second, "lane closed", func() bool { return testutil.ToFloat64(lanesGauge(e)) == 0 })
}

// A head with bare-LF line ends (which the server takes) goes back to the
// server at once, not after the head timeout.
func TestLaneBareLFHead(t *testing.T) {
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	e, sid := laneEdge(t, f, true, nil)
	lc := dialLane(t, e)
	lc.send(laneRequest(sid, callBody("1", "alpha_echo")))
	lc.read()
	raw := laneRequest(sid, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	head := strings.Index(raw, "\r\n\r\n") + 4
	start := time.Now()
	lc.send(strings.ReplaceAll(raw[:head], "\r\n", "\n") + raw[head:])
	if resp, body := lc.read(); resp.StatusCode != http.StatusOK || !strings.Contains(body, "alpha_echo") {
		t.Fatalf("tools/list: %d %s", resp.StatusCode, body)
	}
	if d := time.Since(start); d >= e.opts.HeaderTimeout {
		t.Fatalf("answered after %v: the lane waited for a CR LF head end", d)
	}
}

// The call trail has every call answered on a lane, queued after its
// response: a call whose client stays, and one whose client left while it
// ran (cancelled: an error), as the server's own calls are.
func TestLaneCallsAudited(t *testing.T) {
	f := newSharedFleet(t)
	trail, err := calltrail.Open(t.Context(), f.js, &calltrail.Options{IncludeArguments: true})
	if err != nil {
		t.Fatal(err)
	}
	b := startBackend(t, "alpha", nil)
	f.healthyBackend("default", b)
	e, sid := laneEdge(t, f.fleet, true, &Options{CallTimeout: time.Minute, CallTrail: trail})
	lc := dialLane(t, e)
	for _, id := range []string{"1", "2"} { // the server's, then the lane's
		lc.send(laneRequest(sid, callBody(id, "alpha_echo")))
		if resp, body := lc.read(); resp.StatusCode != http.StatusOK || !strings.Contains(body, "alpha: x") {
			t.Fatalf("call %s: %d %s", id, resp.StatusCode, body)
		}
	}
	if testutil.ToFloat64(lanesGauge(e)) != 1 {
		t.Fatal("the connection is not a lane")
	}
	b.SetHang(true)
	t.Cleanup(func() { b.SetHang(false) })
	lc.send(laneRequest(sid, callBody("3", "alpha_echo")))
	eventually(t, 10*time.Second, "call in flight", func() bool { return e.reg.Lookup(sid).CallInFlight("3") })
	lc.conn.Close()
	got := trailEntries(t, f, trail, 3)
	for i, ent := range got {
		want := calltrail.OutcomeOK
		if i == 2 {
			want = calltrail.OutcomeError
		}
		if ent.Tool != "alpha_echo" || ent.Outcome != want || ent.SessionHash != sessionstore.IDHash(sid) ||
			!strings.Contains(string(ent.Arguments), `"x"`) || ent.Latency <= 0 {
			t.Fatalf("entry %d: %+v", i, ent)
		}
	}
}
