package edge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/session"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// rawGET opens the standalone stream of session sid; hdr adds or
// overrides request headers. The response body is closed at cleanup.
func rawGET(t *testing.T, url, sid string, hdr map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	return openStream(t, req, hdr)
}

// openStream sends req, a request for an event stream, with hdr setting
// headers (deleting those given as ""), and closes the response body at
// cleanup.
func openStream(t *testing.T, req *http.Request, hdr map[string]string) *http.Response {
	t.Helper()
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// stuckHTTPClient initializes a session with raw HTTP, opens its GET
// stream and never reads it.
func stuckHTTPClient(t *testing.T, url string) {
	t.Helper()
	rawGET(t, url, rawInitialize(t, url, ""), nil)
}

// stalledPeer connects a 2026-07-28 listen session server (notified
// through the go-sdk) to an in-memory peer that never reads, so every
// write to it blocks: the worst stuck client.
func stalledPeer(t *testing.T, e *Edge) {
	t.Helper()
	s := e.servers.NewSession("stalled", session.KindListen, "2026-07-28", "")
	e.reg.Open(s)
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := s.Server().Connect(ctx, st, &mcp.ServerSessionOptions{State: &mcp.ServerSessionState{
		InitializeParams:  &mcp.InitializeParams{ProtocolVersion: "2025-11-25", ClientInfo: &mcp.Implementation{Name: "stalled"}},
		InitializedParams: &mcp.InitializedParams{}}}); err != nil {
		t.Fatal(err)
	}
	peer, err := ct.Connect(ctx) // never read: from the second message on, writes block
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() }) // runs before the edge's cleanup
	e.reg.Track(s)
}

// blockedWriter is a standalone stream's response whose writes block,
// after the first (the stream's opening comment), until release is
// closed: a client whose socket buffers are full.
type blockedWriter struct {
	header  http.Header
	writes  atomic.Int32
	release chan struct{}
}

func (w *blockedWriter) Header() http.Header { return w.header }
func (w *blockedWriter) WriteHeader(int)     {}
func (w *blockedWriter) Flush()              {}
func (w *blockedWriter) Write(p []byte) (int, error) {
	if w.writes.Add(1) == 1 {
		return len(p), nil
	}
	<-w.release
	return 0, io.ErrClosedPipe
}

// blockedStream opens a session-based session whose standalone stream
// blocks on its first notification.
func blockedStream(t *testing.T, e *Edge) *session.Session {
	t.Helper()
	s := e.servers.NewSession("blocked", session.KindSession, "2025-11-25", "")
	e.reg.Open(s)
	w := &blockedWriter{header: http.Header{}, release: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.ServeStream(w, httptestGET(ctx))
	}()
	t.Cleanup(func() { cancel(); close(w.release); <-done; e.reg.Forget(s) })
	eventually(t, 5*time.Second, "the blocked stream attached", func() bool { return w.writes.Load() == 1 })
	return s
}

// stuckConnStream opens a session-based session whose taken-over stream
// is one end of a net.Pipe nobody reads: its first write blocks.
func stuckConnStream(t *testing.T, e *Edge) *session.Session {
	t.Helper()
	s := e.servers.NewSession("stuck-conn", session.KindSession, "2025-11-25", "")
	e.reg.Open(s)
	server, client := net.Pipe()
	head := append(session.StreamHead(), session.Chunk([]byte(": ok\n\n"))...)
	go func() { _, _ = io.ReadFull(client, make([]byte, len(head))) }() // the head, then nothing
	if !s.Attach(server, head, nil) {
		t.Fatal("stream not attached")
	}
	t.Cleanup(func() { client.Close(); e.reg.Forget(s) })
	return s
}

func httptestGET(ctx context.Context) *http.Request {
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1/mcp", nil)
	return r
}

// A client that stops reading delays no notification to 20 others.
func TestStuckClientDoesNotDelayOthers(t *testing.T) {
	f := newFleet(t)
	b := startBackend(t, "alpha", nil)
	f.healthyBackend("default", b)
	e := startEdge(t, f, &Options{Coalesce: 10 * time.Millisecond})
	stuckHTTPClient(t, e.MCPURL())
	stalledPeer(t, e)
	blocked := blockedStream(t, e)
	stuck := stuckConnStream(t, e)
	var clients []*client
	for i := range 20 {
		v := "2025-11-25"
		if i%2 == 1 {
			v = ""
		}
		clients = append(clients, connect(t, e.MCPURL(), v))
	}
	if n := len(e.Sessions()); n < 24 {
		t.Fatalf("%d sessions on the edge, want at least 24", n)
	}
	for round := int64(1); round <= 4; round++ {
		f.health("default", "alpha", round%2 == 0)
		var wg sync.WaitGroup
		for _, c := range clients {
			wg.Go(func() { c.waitChanged(t, round, 5*time.Second) })
		}
		wg.Wait()
	}
	// The stalled peer and the blocked streams (held and taken over) really
	// were stuck: their later notifications found the previous one still
	// being written (at least once each in four rounds), and the blocked
	// streams still owe one.
	eventually(t, 10*time.Second, "skipped notifications", func() bool { return testutil.ToFloat64(e.m.notifyDropped) >= 3 })
	for _, s := range []*session.Session{blocked, stuck} {
		if pending := s.Pending(); pending&session.PendingTools == 0 {
			t.Fatalf("%s stream: pending %b, want the tools notification still owed", s.ID(), pending)
		}
	}
}

// Exposed-name collisions are resolved the same way whatever the order of
// the events, and reported by the admin API, the metrics and the lists.
func TestCollisionDeterministicAndReported(t *testing.T) {
	var views []ViewInfo
	for _, order := range [][]string{{"x", "x_y"}, {"x_y", "x"}} {
		synctest.Test(t, func(t *testing.T) {
			e := serveMemoryEdge(t, nil)
			for _, backend := range order { // one state each, in order
				if backend == "x" {
					e.up("x", "y_z")
				} else {
					e.up("x_y", "z")
				}
				e.settle()
			}
			if n := len(e.View().Tools); n != 2 {
				t.Fatalf("%d tools in the view; want both backends'", n)
			}
			c := connect(t, e.MCPURL(), "2025-11-25")
			if names := c.toolNames(t); !names["x_y_z"] || !names["x_y_z_2"] {
				t.Fatalf("tools: %v", names)
			}
			var v ViewInfo
			getJSON(t, e.AdminURL()+"/v1/view", &v)
			if len(v.Collisions) != 1 {
				t.Fatalf("collisions: %+v", v.Collisions)
			}
			if m := get(t, e.AdminURL()+"/metrics"); !strings.Contains(m, "fleetgate_edge_view_collisions 1") {
				t.Fatalf("metrics lack the collision gauge")
			}
			views = append(views, v)
		})
	}
	c := views[0].Collisions[0]
	if c.Backend != "x_y" || c.Original != "z" || c.KeptBy != "x" || c.Exposed != "x_y_z_2" {
		t.Fatalf("collision %+v: want x/y_z to keep x_y_z and x_y/z to get x_y_z_2", c)
	}
	if views[0].Digest != views[1].Digest || fmt.Sprint(views[0].Collisions) != fmt.Sprint(views[1].Collisions) {
		t.Fatalf("order-dependent result: %+v vs %+v", views[0], views[1])
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	if err := json.NewDecoder(bufio.NewReader(strings.NewReader(get(t, url)))).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
