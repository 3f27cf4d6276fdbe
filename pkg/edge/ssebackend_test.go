package edge

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/internal/h1"
	"github.com/fleetgate/fleetgate/pkg/events"
)

// sseServer serves a go-sdk MCP server over the legacy HTTP+SSE
// transport (mcp.NewSSEHandler) on an httptest server at 127.0.0.1. It
// records each GET stream, so that a test can end one (a backend closing
// its stream) or see one end.
type sseServer struct {
	ts  *httptest.Server
	url string

	mu      sync.Mutex
	streams []*sseStream
	stopped bool
	opened  chan *sseStream // each stream as it opens
}

// sseStream is one GET stream of an sseServer.
type sseStream struct {
	end  context.CancelFunc // ends the stream (its handler returns)
	done chan struct{}      // closed when its handler returned
}

// startSSEServer serves srv on addr ("" picks a port) until stop or the
// end of the test.
func startSSEServer(t testing.TB, srv *mcp.Server, addr string) *sseServer {
	t.Helper()
	s := &sseServer{opened: make(chan *sseStream, 64)}
	h := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	s.ts = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			h.ServeHTTP(w, r) // a message POST
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		st := &sseStream{end: cancel, done: make(chan struct{})}
		defer close(st.done)
		defer cancel()
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			http.Error(w, "stopping", http.StatusServiceUnavailable)
			return
		}
		s.streams = append(s.streams, st)
		s.mu.Unlock()
		s.opened <- st
		// The handler forgets the session before it returns, so before
		// the edge sees the stream end.
		h.ServeHTTP(w, r.WithContext(ctx))
	}))
	if addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listen again on %s: %v", addr, err)
		}
		s.ts.Listener.Close()
		s.ts.Listener = ln
	}
	s.ts.Start()
	s.url = s.ts.URL + "/sse"
	t.Cleanup(s.stop)
	return s
}

// stop kills the server: every connection is cut, as when the process
// dies.
func (s *sseServer) stop() {
	s.ts.CloseClientConnections()
	s.mu.Lock()
	s.stopped = true
	for _, st := range s.streams {
		st.end()
	}
	s.mu.Unlock()
	s.ts.Close()
}

// endStreams ends every open stream the way a backend does that closes
// its sessions, and returns when their handlers have returned.
func (s *sseServer) endStreams() {
	s.mu.Lock()
	streams := append([]*sseStream(nil), s.streams...)
	s.mu.Unlock()
	for _, st := range streams {
		st.end()
		<-st.done
	}
}

// count is the number of streams opened so far.
func (s *sseServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.streams)
}

// next returns the next stream opened.
func (s *sseServer) next(t testing.TB) *sseStream {
	t.Helper()
	select {
	case st := <-s.opened:
		return st
	case <-time.After(10 * time.Second):
		t.Fatal("no SSE stream opened")
		return nil
	}
}

// waitEnded waits until the stream's handler returned.
func waitEnded(t testing.TB, st *sseStream, what string) {
	t.Helper()
	select {
	case <-st.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("SSE stream still open after %s", what)
	}
}

// sseBackend publishes the SSE backend name at s as added, with the
// catalog of srv, advertisable. The catalog is listed in memory, so that
// every stream of s is the edge's.
func (f *fleet) sseBackend(group, name string, srv *mcp.Server, s *sseServer) {
	f.t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	cat := listCatalogVia(f.t, ct)
	_ = ss.Close()
	f.publish(events.NewBackendAdded(time.Now(), group, name, events.BackendConfig{URL: s.url, Transport: "sse"}))
	f.catalog(group, name, cat)
	f.health(group, name, true)
}

// sseDemo is a demo backend's go-sdk server with a tool that fails, for
// serving over SSE.
func sseDemo(name string) *demobackend.Backend {
	b := demobackend.New(name, nil)
	b.AddToolFunc(&mcp.Tool{Name: "fail", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "failed on purpose"}}}, nil
		})
	return b
}

// Tools, prompts and resources of an SSE backend are served through the
// edge, on one pooled SSE session.
func TestSSEBackendCalls(t *testing.T) {
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			f := newFleet(t)
			b := sseDemo("alpha")
			s := startSSEServer(t, b.Server(), "")
			f.sseBackend("default", "alpha", b.Server(), s)
			e := startEdge(t, f, nil)
			c := connect(t, e.MCPURL(), v.version)

			if res := c.call(t, "alpha_echo", map[string]any{"text": "over sse"}); res.IsError || text(res) != "alpha: over sse" {
				t.Fatalf("echo: %+v", res)
			}
			if res := c.call(t, "alpha_add", map[string]any{"a": 2, "b": 3}); res.IsError || text(res) != "5" {
				t.Fatalf("add: %+v", res)
			}
			if res := c.call(t, "alpha_fail", nil); !res.IsError || text(res) != "failed on purpose" {
				t.Fatalf("isError result: %+v", res)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			got, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "alpha_greet"})
			if err != nil || got.Messages[0].Content.(*mcp.TextContent).Text != "hello from alpha" {
				t.Fatalf("get prompt: %v %+v", err, got)
			}
			read, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://alpha/readme"})
			if err != nil || read.Contents[0].Text != "demo backend alpha" {
				t.Fatalf("read resource: %v %+v", err, read)
			}
			if n := b.Calls(); n != 3 {
				t.Fatalf("backend served %d tool calls, want 3", n)
			}
			if n := s.count(); n != 1 {
				t.Fatalf("%d SSE streams, want the one pooled session", n)
			}
		})
	}
}

// An SSE backend that restarts on its address, or ends its stream, is
// reconnected on the next call, which succeeds. With a client other than
// the edge's own any failed POST counts as undelivered.
func TestSSEBackendRestart(t *testing.T) {
	clients := []struct {
		name string
		hc   *http.Client
	}{{"edge-client", nil}, {"net-http-client", &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}}}
	for _, cl := range clients {
		t.Run(cl.name, func(t *testing.T) {
			f := newFleet(t)
			b := sseDemo("alpha")
			s := startSSEServer(t, b.Server(), "")
			f.sseBackend("default", "alpha", b.Server(), s)
			e := startEdge(t, f, &Options{CallTimeout: 10 * time.Second, BackendHTTPClient: cl.hc})
			c := connect(t, e.MCPURL(), "2025-11-25")
			echo := func(i int) {
				t.Helper()
				if res := c.call(t, "alpha_echo", map[string]any{"text": i}); res.IsError || text(res) != fmt.Sprintf("alpha: %d", i) {
					t.Fatalf("call %d: %q", i, text(res))
				}
			}
			for i := range 3 {
				echo(i)
				addr := s.ts.Listener.Addr().String()
				s.stop()
				s = startSSEServer(t, b.Server(), addr)
			}
			echo(3)
			if n := s.count(); n != 1 {
				t.Fatalf("%d streams on the last server, want 1", n)
			}
			// The backend ends its stream; it is still up.
			s.endStreams()
			echo(4)
			if n := s.count(); n != 2 {
				t.Fatalf("%d streams after the first ended, want 2", n)
			}
			if n := b.Calls(); n != 5 {
				t.Fatalf("backend served %d calls, want 5 (none twice)", n)
			}
		})
	}
}

// The SSE stream ends when its backend leaves the view, and the backend's
// next call after it returns opens a new one.
func TestSSEStreamEndsWithBackend(t *testing.T) {
	f := newFleet(t)
	b := sseDemo("alpha")
	s := startSSEServer(t, b.Server(), "")
	f.sseBackend("default", "alpha", b.Server(), s)
	e := startEdge(t, f, nil)
	c := connect(t, e.MCPURL(), "2025-11-25")
	if res := c.call(t, "alpha_echo", map[string]any{"text": "a"}); res.IsError {
		t.Fatalf("call: %+v", res)
	}
	st := s.next(t)
	f.health("default", "alpha", false)
	waitEnded(t, st, "the backend became unhealthy")
	gen := f.health("default", "alpha", true)
	eventually(t, 10*time.Second, "backend advertised again", func() bool { return e.confirmed.Load() >= gen })
	if res := c.call(t, "alpha_echo", map[string]any{"text": "b"}); res.IsError || text(res) != "alpha: b" {
		t.Fatalf("call after return: %+v", res)
	}
	st = s.next(t)
	f.publish(events.NewBackendRemoved(time.Now(), "default", "alpha", events.BackendConfig{URL: s.url, Transport: "sse"}))
	waitEnded(t, st, "the backend was removed")
}

// newTestPool is a pool with the edge's default backend client.
func newTestPool() *backend.Pool {
	return backend.NewPool(&http.Client{Transport: h1.NewTransport(http.DefaultTransport.(*http.Transport).Clone())},
		10*time.Second, 0, newMetrics(prometheus.NewRegistry()))
}

// A transport or URL change replaces the pooled connection (an SSE one's
// stream ends); closeAll ends the SSE streams and no call opens another.
func TestSSEPoolOwnsStream(t *testing.T) {
	b := sseDemo("alpha")
	s := startSSEServer(t, b.Server(), "")
	plain := startBackend(t, "alpha", nil)
	p := newTestPool()
	ctx := context.Background()
	sse := events.BackendConfig{URL: s.url, Transport: "sse"}
	streamable := events.BackendConfig{URL: plain.URL(), Transport: "streamable-http"}
	call := func(cfg events.BackendConfig) (backend.Reply, error) {
		return p.CallTool(ctx, backend.Call{Backend: "alpha", Config: cfg, Tool: "echo", Args: []byte(`{"text":"x"}`)})
	}

	if r, err := call(sse); err != nil || text(r.Decoded()) != "alpha: x" {
		t.Fatalf("sse call: %v %+v", err, r)
	}
	first := s.next(t)
	if r, err := call(streamable); err != nil || text(r.Decoded()) != "alpha: x" || plain.Calls() != 1 {
		t.Fatalf("streamable call: %v %+v (%d calls)", err, r, plain.Calls())
	}
	waitEnded(t, first, "the transport changed")
	if _, err := call(sse); err != nil {
		t.Fatalf("sse call again: %v", err)
	}
	second := s.next(t)
	// Another URL of the same server: a new connection.
	if _, err := call(events.BackendConfig{URL: s.url + "?other", Transport: "sse"}); err != nil {
		t.Fatalf("sse call at a new URL: %v", err)
	}
	waitEnded(t, second, "the URL changed")
	third := s.next(t)

	p.CloseAll()
	waitEnded(t, third, "closeAll")
	if _, err := call(sse); err == nil {
		t.Fatal("call after closeAll: no error")
	}
	if n := s.count(); n != 3 {
		t.Fatalf("%d streams, want 3 (none after closeAll)", n)
	}
}

// Errors of an SSE backend name it and not its URL, which may carry
// credentials.
func TestSSEErrorsHideURL(t *testing.T) {
	b := sseDemo("alpha")
	s := startSSEServer(t, b.Server(), "")
	secret := s.url + "?token=s3cret"
	s.stop() // nothing listens there any more
	p := newTestPool()
	defer p.CloseAll()
	_, err := p.CallTool(context.Background(), backend.Call{Backend: "alpha", Config: events.BackendConfig{URL: secret, Transport: "sse"}, Tool: "echo"})
	if err == nil {
		t.Fatal("call to a stopped backend: no error")
	}
	if msg := err.Error(); strings.Contains(msg, "s3cret") || strings.Contains(msg, "/sse") || !strings.Contains(msg, `"alpha"`) {
		t.Fatalf("error %q: want the backend's name and no URL", msg)
	}
}
