package test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge"
	"github.com/fleetgate/fleetgate/pkg/events"
)

// startEdge runs an in-process edge against the fleet's event log.
func startEdge(t testing.TB, natsURL string) *edge.Edge {
	t.Helper()
	return startEdgeOn(t, natsURL, nil, edge.Options{Coalesce: 100 * time.Millisecond})
}

// startEdgeOn runs an in-process edge on the event log the NATS at
// natsURL holds under logOpts (nil: the default log), with opts on top of
// loopback listeners and a 10 s call timeout, until the test ends.
func startEdgeOn(t testing.TB, natsURL string, logOpts *events.LogOptions, opts edge.Options) *edge.Edge {
	t.Helper()
	js := jsConnect(t, natsURL)
	actx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	lg, err := events.AttachLog(actx, js, logOpts)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	opts.Listen, opts.AdminListen = "127.0.0.1:0", "127.0.0.1:0"
	if opts.CallTimeout == 0 {
		opts.CallTimeout = 10 * time.Second
	}
	e, err := edge.New(lg, &opts)
	if err != nil {
		t.Fatal(err)
	}
	runEdge(t, e, 30*time.Second)
	return e
}

// runEdge runs e until the test ends and waits (up to ready) until it
// has caught up with its log.
func runEdge(t testing.TB, e *edge.Edge, ready time.Duration) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("edge: %v", err)
		}
	})
	eventually(t, ready, "edge ready", e.Ready)
}

// mcpClient is a go-sdk client session that counts list_changed.
type mcpClient struct {
	cs      *mcp.ClientSession
	changed atomic.Int64
}

func connectMCP(t testing.TB, url, version string) *mcpClient {
	t.Helper()
	cl := &mcpClient{}
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { cl.changed.Add(1) },
	})
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	cl.cs = cs
	return cl
}

func (c *mcpClient) tools(t testing.TB) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var names []string
	for tool, err := range c.cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

func (c *mcpClient) call(name string, args map[string]any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
}

func text(r *mcp.CallToolResult) string {
	if r == nil || len(r.Content) == 0 {
		return ""
	}
	if tc, ok := r.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

var protocols = []struct{ name, version string }{{"2025-11-25", "2025-11-25"}, {"2026-07-28", ""}}

// The whole fleet: a real controller probing real backends, an edge
// following its events, real clients. A session initialized while a
// backend is down gets list_changed when it recovers and calls its tool
// on the same session; then the backend dies again and its tools leave.
func TestFleetRecoveryAndLoss(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			node := startNATS(t)
			alpha := startBackend(t, "alpha", nil)
			beta := startBackend(t, "beta", nil)
			beta.Stop() // down from the start
			startController(t, node.ClientURL(), "c1", fleetYAML(200*time.Millisecond, 200*time.Millisecond, alpha, beta))
			el := followLog(t, node.ClientURL())
			el.waitEvent(t, 0, 20*time.Second, "alpha advertised", healthOf("alpha", true))
			e := startEdge(t, node.ClientURL())
			cl := connectMCP(t, e.MCPURL(), p.version)
			eventually(t, 10*time.Second, "alpha's tools", func() bool { return slices.Contains(cl.tools(t), "alpha_echo") })
			if slices.Contains(cl.tools(t), "beta_echo") {
				t.Fatal("a down backend's tool is listed")
			}
			before := cl.changed.Load()
			if err := beta.Restart(); err != nil {
				t.Fatal(err)
			}
			eventually(t, 20*time.Second, "list_changed for beta's recovery", func() bool { return cl.changed.Load() > before })
			eventually(t, 10*time.Second, "beta's tools listed", func() bool { return slices.Contains(cl.tools(t), "beta_echo") })
			res, err := cl.call("beta_echo", map[string]any{"text": "back"})
			if err != nil || res.IsError || text(res) != "beta: back" {
				t.Fatalf("call recovered tool: %v %+v", err, res)
			}

			before = cl.changed.Load()
			beta.Stop()
			eventually(t, 20*time.Second, "list_changed for beta's loss", func() bool { return cl.changed.Load() > before })
			eventually(t, 10*time.Second, "beta's tools gone", func() bool { return !slices.Contains(cl.tools(t), "beta_echo") })
			res, err = cl.call("beta_echo", map[string]any{"text": "gone"})
			if err == nil && !res.IsError {
				t.Fatalf("call to a gone tool succeeded: %+v", res)
			}
			msg := text(res)
			if err != nil {
				msg = err.Error()
			}
			if !strings.Contains(msg, "beta_echo") {
				t.Fatalf("error %q does not name the tool", msg)
			}
		})
	}
}

// A backend flapping ten times inside one debounce window causes at most
// two notifications per session.
func TestFleetFlappingBackend(t *testing.T) {
	node := startNATS(t)
	alpha := startBackend(t, "alpha", nil)
	beta := startBackend(t, "beta", nil)
	debounce := 3 * time.Second
	startController(t, node.ClientURL(), "c1", fleetYAML(100*time.Millisecond, debounce, alpha, beta))
	el := followLog(t, node.ClientURL())
	el.waitEvent(t, 0, 20*time.Second, "beta advertised", healthOf("beta", true))
	e := startEdge(t, node.ClientURL())
	var clients []*mcpClient
	for _, p := range protocols {
		for range 3 {
			clients = append(clients, connectMCP(t, e.MCPURL(), p.version))
		}
	}
	for _, c := range clients {
		eventually(t, 10*time.Second, "beta listed", func() bool { return slices.Contains(c.tools(t), "beta_echo") })
	}
	time.Sleep(debounce) // let the window opened at startup close
	start := make([]int64, len(clients))
	for i, c := range clients {
		start[i] = c.changed.Load()
	}
	flapStart := time.Now()
	for range 5 { // ten flips: down, up, down, up ...
		beta.Stop()
		time.Sleep(100 * time.Millisecond)
		if err := beta.Restart(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if el := time.Since(flapStart); el > debounce {
		t.Logf("flapping took %s, longer than the %s window", el, debounce)
	}
	time.Sleep(2*debounce + time.Second) // a full window after the burst for the trailing event
	for i, c := range clients {
		if n := c.changed.Load() - start[i]; n > 2 {
			t.Fatalf("client %d got %d list_changed for one flapping window, want at most 2", i, n)
		}
	}
	if !slices.Contains(clients[0].tools(t), "beta_echo") {
		t.Fatal("beta is up at the end but not listed")
	}
}

// Adding and removing a backend through the controller's admin API reaches
// live sessions.
func TestFleetRuntimeMembership(t *testing.T) {
	node := startNATS(t)
	alpha := startBackend(t, "alpha", nil)
	gamma := startBackend(t, "gamma", nil)
	c := startController(t, node.ClientURL(), "c1", fleetYAML(200*time.Millisecond, 100*time.Millisecond, alpha))
	el := followLog(t, node.ClientURL())
	el.waitEvent(t, 0, 20*time.Second, "alpha advertised", healthOf("alpha", true))
	eventually(t, 10*time.Second, "leader", c.c.Leading)
	e := startEdge(t, node.ClientURL())
	var clients []*mcpClient
	for _, p := range protocols {
		clients = append(clients, connectMCP(t, e.MCPURL(), p.version))
	}
	if code := httpJSON(t, "PUT", c.admin+"/v1/groups/default/backends/gamma", `{"url":"`+gamma.URL()+`"}`, nil); code != 200 {
		t.Fatalf("PUT gamma: %d", code)
	}
	for _, cl := range clients {
		eventually(t, 20*time.Second, "gamma reaches the session", func() bool { return cl.changed.Load() > 0 && slices.Contains(cl.tools(t), "gamma_add") })
		if res, err := cl.call("gamma_add", map[string]any{"a": 2, "b": 3}); err != nil || text(res) != "5" {
			t.Fatalf("gamma_add: %v %+v", err, res)
		}
	}
	if code := httpJSON(t, "DELETE", c.admin+"/v1/groups/default/backends/alpha", "", nil); code != 200 {
		t.Fatalf("DELETE alpha: %d", code)
	}
	for _, cl := range clients {
		eventually(t, 20*time.Second, "alpha leaves the session", func() bool { return !slices.Contains(cl.tools(t), "alpha_echo") })
	}
}
