package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

const userHeader = "X-Fleetgate-User"

// sharedFleet is a fleet whose edges share one session store.
type sharedFleet struct {
	*fleet
	js jetstream.JetStream
}

func newSharedFleet(t testing.TB) *sharedFleet {
	t.Helper()
	f, js := openFleet(t)
	return &sharedFleet{fleet: f, js: js}
}

// killableListener closes every connection it accepted when killed, as
// a dead process would.
type killableListener struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *killableListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

func (l *killableListener) kill() {
	_ = l.Listener.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		_ = c.Close()
	}
}

// recordEdge is an edge with session records and the means to kill it.
type recordEdge struct {
	*Edge
	kill func() // cut every connection and stop writing, like a dead process
}

// startRecordEdge runs an edge named id with session records on f's store.
func startRecordEdge(t testing.TB, f *sharedFleet, id string, store *sessionstore.Options, tweak func(*Options)) *recordEdge {
	t.Helper()
	opts := &Options{ID: id, Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0", CallTimeout: 10 * time.Second,
		IdentityHeader: userHeader, Coalesce: 20 * time.Millisecond,
		Records: &RecordOptions{JetStream: f.js, Store: store, FlushEvery: 20 * time.Millisecond}}
	if tweak != nil {
		tweak(opts)
	}
	e, err := New(f.log, opts)
	if err != nil {
		t.Fatal(err)
	}
	kl := &killableListener{Listener: e.mcpLn}
	e.mcpLn = kl
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	var killed atomic.Bool
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !killed.Load() {
			t.Errorf("edge %s Run: %v", id, err)
		}
	})
	eventually(t, 30*time.Second, "edge ready", e.Ready)
	return &recordEdge{Edge: e, kill: func() {
		killed.Store(true)
		e.recs.Halt()
		kl.kill()
	}}
}

// switchProxy is a reverse proxy whose target can be switched, standing
// for a load balancer without session affinity.
type switchProxy struct {
	srv    *httptest.Server
	target atomic.Pointer[url.URL]
}

func newSwitchProxy(t testing.TB, target string) *switchProxy {
	t.Helper()
	p := &switchProxy{}
	p.to(target)
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(p.target.Load()); r.Out.URL.Path = r.In.URL.Path },
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
	}
	p.srv = httptest.NewServer(rp)
	t.Cleanup(p.srv.Close)
	return p
}

// to switches the proxy to the edge MCP URL u.
func (p *switchProxy) to(u string) {
	parsed, err := url.Parse(strings.TrimSuffix(u, "/mcp"))
	if err != nil {
		panic(err)
	}
	p.target.Store(parsed)
}

func (p *switchProxy) url() string { return p.srv.URL + "/mcp" }

// identityTransport adds the identity header to every request.
type identityTransport struct{ user string }

func (t identityTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(userHeader, t.user)
	return clientTransport().RoundTrip(r)
}

// connectAs opens a 2025-11-25 session as user; noStream leaves out the
// standalone GET stream (a client that cannot hear list_changed).
func connectAs(t testing.TB, endpoint, user string, noStream bool) *client {
	t.Helper()
	cl := &client{signal: make(chan struct{}, 1)}
	c := mcp.NewClient(&mcp.Implementation{Name: "moving-client"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			cl.changed.Add(1)
			select {
			case cl.signal <- struct{}{}:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: 20,
		DisableStandaloneSSE: noStream, HTTPClient: &http.Client{Transport: identityTransport{user}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	cl.cs = cs
	return cl
}

// rawRequest sends one MCP request on session sid as user and returns the
// status code.
func rawRequest(t testing.TB, method, endpoint, sid, user, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	if user != "" {
		req.Header.Set(userHeader, user)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	return res.StatusCode
}

var pings atomic.Int64

// pingBody is a ping with an id of its own (the go-sdk refuses an id
// already in flight on the session).
func pingBody() string { return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, pings.Add(1)) }

// sessionInfo reads GET /v1/sessions/{id} of an edge.
func sessionInfo(t testing.TB, e *Edge, id string) (SessionInfo, bool) {
	t.Helper()
	res, err := http.Get(e.AdminURL() + "/v1/sessions/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusNotFound {
		return SessionInfo{}, false
	}
	var info SessionInfo
	if err := json.NewDecoder(res.Body).Decode(&info); err != nil {
		t.Fatal(err)
	}
	return info, true
}

// stored reads a session's record, or nil when there is none.
func stored(t testing.TB, e *Edge, id string) *sessionstore.Record {
	t.Helper()
	rec, _, err := e.recs.Store().Get(context.Background(), id)
	if errors.Is(err, sessionstore.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return rec
}
