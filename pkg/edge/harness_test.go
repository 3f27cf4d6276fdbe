package edge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// fleet is an event log on an embedded NATS node plus a writer publishing
// what the controller would.
type fleet struct {
	t   testing.TB
	log *events.Log
	w   *events.Writer
	n   atomic.Int64
}

func newFleet(t testing.TB) *fleet {
	f, _ := openFleet(t)
	return f
}

// openFleet starts an embedded NATS node, opens the event log on it and a
// writer, and returns the fleet and its JetStream client.
func openFleet(t testing.TB) (*fleet, jetstream.JetStream) {
	t.Helper()
	js := natstest.JetStream(t, natstest.Start(t).ClientURL())
	ctx := context.Background()
	log, err := events.OpenLog(ctx, js, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := events.NewWriter(ctx, log, "test-controller")
	if err != nil {
		t.Fatal(err)
	}
	return &fleet{t: t, log: log, w: w}, js
}

func (f *fleet) publish(ev *eventspb.Event) uint64 {
	f.t.Helper()
	gen, err := f.w.Publish(context.Background(), ev, fmt.Sprintf("test-%d", f.n.Add(1)))
	if err != nil {
		f.t.Fatal(err)
	}
	return gen
}

func (f *fleet) add(group string, b *demobackend.Backend) {
	f.publish(events.NewBackendAdded(time.Now(), group, b.Name(), events.BackendConfig{URL: b.URL(), Transport: "streamable-http"}))
}

func (f *fleet) remove(group string, b *demobackend.Backend) {
	f.publish(events.NewBackendRemoved(time.Now(), group, b.Name(), events.BackendConfig{URL: b.URL(), Transport: "streamable-http"}))
}

func (f *fleet) health(group, name string, advertisable bool) uint64 {
	to, from := "healthy", "unhealthy"
	if !advertisable {
		to, from = from, to
	}
	return f.publish(events.NewHealthChanged(time.Now(), group, name, from, to, advertisable, "test"))
}

func (f *fleet) catalog(group, name string, c *events.Catalog) {
	f.t.Helper()
	ev, err := events.NewCatalogChanged(time.Now(), group, name, c)
	if err != nil {
		f.t.Fatal(err)
	}
	f.publish(ev)
}

// healthyBackend publishes b as added, with its real catalog, advertisable.
func (f *fleet) healthyBackend(group string, b *demobackend.Backend) {
	f.add(group, b)
	f.catalog(group, b.Name(), listCatalog(f.t, b))
	f.health(group, b.Name(), true)
}

// startBackend starts a demo backend for the test.
func startBackend(t testing.TB, name string, o *demobackend.Options) *demobackend.Backend {
	t.Helper()
	b := demobackend.New(name, o)
	if err := b.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	return b
}

// listCatalog lists b's real definitions with a go-sdk client, as the
// controller does.
func listCatalog(t testing.TB, b *demobackend.Backend) *events.Catalog {
	t.Helper()
	return listCatalogVia(t, &mcp.StreamableClientTransport{Endpoint: b.URL(), DisableStandaloneSSE: true})
}

// listCatalogVia is listCatalog of the backend at the end of tr.
func listCatalogVia(t testing.TB, tr mcp.Transport) *events.Catalog {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "lister"}, nil)
	cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	cat := &events.Catalog{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		cat.Tools = append(cat.Tools, mustJSON(t, tool))
	}
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		cat.Resources = append(cat.Resources, mustJSON(t, r))
	}
	if caps := cs.InitializeResult().Capabilities; caps != nil && caps.Resources != nil {
		for rt, err := range cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			cat.ResourceTemplates = append(cat.ResourceTemplates, mustJSON(t, rt))
		}
	}
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		cat.Prompts = append(cat.Prompts, mustJSON(t, p))
	}
	if cat.Digest, err = catalog.Digest(cat.Tools); err != nil {
		t.Fatal(err)
	}
	return cat
}

func mustJSON(t testing.TB, v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// startEdge runs an edge on loopback until the test ends and waits until
// it is ready.
func startEdge(t testing.TB, f *fleet, o *Options) *Edge {
	t.Helper()
	opts := Options{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0", CallTimeout: 10 * time.Second}
	if o != nil {
		opts = *o
		opts.Listen, opts.AdminListen = "127.0.0.1:0", "127.0.0.1:0"
	}
	e, err := New(f.log, &opts)
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, context.Background(), e)
	eventually(t, 30*time.Second, "edge ready", e.Ready)
	return e
}

// runUntilCleanup runs e (Run) under a child of ctx until the test ends,
// failing it if Run fails.
func runUntilCleanup(t testing.TB, ctx context.Context, e *Edge) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("edge Run: %v", err)
		}
	})
}

// client is a go-sdk client session on an edge that counts list_changed
// notifications.
type client struct {
	cs      *mcp.ClientSession
	changed atomic.Int64
	signal  chan struct{}
	mu      sync.Mutex
	times   []time.Time
	clock   *sendClock // of the benchmarks; nil if none
	// completed are the URL elicitations the edge said completed (a
	// client declaring URL elicitation: signin_test.go); nil otherwise.
	completed chan string
}

// connect opens a client session; version "" is the go-sdk default
// (2026-07-28), "2025-11-25" the session-based protocol.
func connect(t testing.TB, url, version string) *client {
	t.Helper()
	return connectWith(t, url, version, nil)
}

// connectWith is connect with the HTTP client hc (nil: the go-sdk's
// default).
func connectWith(t testing.TB, url, version string, hc *http.Client) *client {
	t.Helper()
	cl := &client{signal: make(chan struct{}, 1)}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			cl.mu.Lock()
			cl.times = append(cl.times, time.Now())
			cl.mu.Unlock()
			cl.changed.Add(1)
			select {
			case cl.signal <- struct{}{}:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	cl.cs = cs
	return cl
}

// toolNames lists the session's tools.
func (c *client) toolNames(t testing.TB) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	names := map[string]bool{}
	for tool, err := range c.cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names[tool.Name] = true
	}
	return names
}

// waitChanged waits until the client has seen at least n list_changed.
func (c *client) waitChanged(t testing.TB, n int64, d time.Duration) {
	t.Helper()
	eventually(t, d, fmt.Sprintf("%d tools/list_changed", n), func() bool { return c.changed.Load() >= n })
}

func (c *client) call(t testing.TB, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// eventually polls cond until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// versions are the two protocol generations the tests exercise.
var versions = []struct{ name, version string }{{"session-2025-11-25", "2025-11-25"}, {"stateless-2026-07-28", ""}}
