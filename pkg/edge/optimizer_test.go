package edge

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
)

// find calls find_tool on the client's session.
func (c *client) find(t testing.TB, query string, limit int) view.FindResult {
	t.Helper()
	args := map[string]any{"query": query}
	if limit > 0 {
		args["limit"] = limit
	}
	return decodeFind(t, c.call(t, FindToolName, args))
}

// finds reports whether find_tool for query returns the tool name.
func (c *client) finds(t testing.TB, query, name string) bool {
	t.Helper()
	return slices.Contains(resultNames(c.find(t, query, FindToolMaxLimit)), name)
}

// callVia calls a tool through call_tool.
func (c *client) callVia(t testing.TB, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	return c.call(t, CallToolName, map[string]any{"tool_name": name, "arguments": args})
}

func optimizerOpts(window time.Duration, pinned ...string) *Options {
	return &Options{Mode: ModeOptimizer, Coalesce: window, PinnedTools: pinned, CallTimeout: 10 * time.Second}
}

// One session that never reconnects: find_tool does not see the tools of a
// backend that is down, sees them once it recovers, call_tool then
// reaches it, and no tools/list_changed arrives all along. A passthrough
// edge on the same log, whose client is notified of the same changes,
// shows that the optimizer session would have heard them.
func TestOptimizerRecoveryWithoutListChanged(t *testing.T) {
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testOptimizerRecoveryWithoutListChanged(t, v.version) })
		})
	}
}

// testOptimizerRecoveryWithoutListChanged is
// TestOptimizerRecoveryWithoutListChanged on protocol version, in the
// bubble of t.
func testOptimizerRecoveryWithoutListChanged(t *testing.T, version string) {
	const window = 100 * time.Millisecond
	e := serveMemoryEdge(t, optimizerOpts(window))
	e.serveBackend(t, demobackend.New("alpha", nil))
	pass := e.net.serveEdge(t, &Options{Coalesce: window})
	pass.upCatalog("alpha", e.fleet.backends["alpha"].Catalog)
	// health publishes alpha's health on both edges' sources (one log)
	// and lets the window pass.
	health := func(up bool) {
		for _, m := range []*memoryEdge{e, pass} {
			if up {
				m.up("alpha")
			} else {
				m.down("alpha")
			}
		}
		e.settle()
	}
	health(false)
	c := connect(t, e.MCPURL(), version)
	control := connect(t, pass.MCPURL(), version)

	if names := c.toolNames(t); len(names) != 2 || !names[FindToolName] || !names[CallToolName] {
		t.Fatalf("advertised tools: %v", names)
	}
	if got := c.find(t, "echo text", 0); len(got.Tools) != 0 || got.CatalogTools != 0 {
		t.Fatalf("find_tool while alpha is down: %+v", got)
	}
	res := c.callVia(t, "alpha_echo", map[string]any{"text": "hi"})
	if !res.IsError || !strings.Contains(text(res), `"alpha_echo"`) {
		t.Fatalf("call_tool while alpha is down: isError=%v %q", res.IsError, text(res))
	}

	health(true)
	if !c.finds(t, "echo text", "alpha_echo") {
		t.Fatal("find_tool does not see alpha_echo once alpha recovered")
	}
	if got := text(c.callVia(t, "alpha_echo", map[string]any{"text": "hi"})); got != "alpha: hi" {
		t.Fatalf("call_tool alpha_echo = %q", got)
	}
	// More view swaps on the same session: down, up again.
	health(false)
	if c.finds(t, "echo text", "alpha_echo") {
		t.Fatal("find_tool sees alpha_echo once alpha is down again")
	}
	// The control session hears of the removal before alpha is back.
	if n := control.changed.Load(); n < 2 {
		t.Fatalf("passthrough control session got %d tools/list_changed for two changes, want 2", n)
	}
	health(true)
	if !c.finds(t, "echo text", "alpha_echo") {
		t.Fatal("find_tool does not see alpha_echo once alpha is back")
	}
	if got := text(c.callVia(t, "alpha_add", map[string]any{"a": 2, "b": 3})); got != "5" {
		t.Fatalf("call_tool alpha_add = %q", got)
	}

	// Two more windows: nothing may arrive late.
	time.Sleep(2 * window)
	synctest.Wait()
	if n := c.changed.Load(); n != 0 {
		t.Fatalf("optimizer session got %d tools/list_changed, want 0", n)
	}
	if n := control.changed.Load(); n < 3 {
		t.Fatalf("passthrough control session got %d tools/list_changed for three changes, want 3", n)
	}
	if names := c.toolNames(t); len(names) != 2 {
		t.Fatalf("advertised tools changed: %v", names)
	}
}

// A dead backend's tools leave find_tool's results, and call_tool on one
// gives an isError result naming it; the other backend keeps working.
func TestOptimizerDeadBackendVanishes(t *testing.T) {
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testOptimizerDeadBackendVanishes(t, v.version) })
		})
	}
}

// testOptimizerDeadBackendVanishes is TestOptimizerDeadBackendVanishes on
// protocol version, in the bubble of t.
func testOptimizerDeadBackendVanishes(t *testing.T, version string) {
	e := serveMemoryEdge(t, optimizerOpts(50*time.Millisecond))
	e.serveBackend(t, demobackend.New("alpha", nil))
	e.serveBackend(t, demobackend.New("beta", nil))
	e.settle()
	c := connect(t, e.MCPURL(), version)
	got := c.find(t, "echo text", 0)
	if !slices.Contains(resultNames(got), "alpha_echo") || !slices.Contains(resultNames(got), "beta_echo") || got.CatalogTools != 4 {
		t.Fatalf("find_tool: %+v", got)
	}
	if got := text(c.callVia(t, "alpha_echo", map[string]any{"text": "x"})); got != "alpha: x" {
		t.Fatalf("call_tool alpha_echo = %q", got)
	}
	e.stopBackend("alpha")
	e.down("alpha")
	e.settle()
	if r := c.find(t, "echo text add numbers", 0); r.CatalogTools != 2 || slices.ContainsFunc(resultNames(r), func(n string) bool { return strings.HasPrefix(n, "alpha_") }) {
		t.Fatalf("find_tool once alpha is down: %+v; want beta's 2 tools only", r)
	}
	res := c.callVia(t, "alpha_echo", map[string]any{"text": "x"})
	if !res.IsError || !strings.Contains(text(res), `"alpha_echo"`) || !strings.Contains(text(res), "find_tool") {
		t.Fatalf("call_tool of the dead backend's tool: isError=%v %q", res.IsError, text(res))
	}
	if got := text(c.callVia(t, "beta_echo", map[string]any{"text": "y"})); got != "beta: y" {
		t.Fatalf("call_tool beta_echo = %q", got)
	}
	// Bad meta-tool arguments are isError results naming the problem.
	if res := c.call(t, FindToolName, map[string]any{"query": " "}); !res.IsError || !strings.Contains(text(res), `"query"`) {
		t.Fatalf("find_tool with an empty query: isError=%v %q", res.IsError, text(res))
	}
	if res := c.call(t, FindToolName, map[string]any{"query": "echo", "limit": 0}); !res.IsError || !strings.Contains(text(res), `"limit"`) {
		t.Fatalf("find_tool with limit 0: isError=%v %q", res.IsError, text(res))
	}
	if res := c.call(t, CallToolName, map[string]any{"arguments": map[string]any{}}); !res.IsError || !strings.Contains(text(res), `"tool_name"`) {
		t.Fatalf("call_tool without tool_name: isError=%v %q", res.IsError, text(res))
	}
}

// Concurrent find_tool calls from several sessions while the view is
// swapped over and over (run with -race): every result is one whole
// snapshot, and no session is notified.
func TestOptimizerConcurrentFindDuringSwaps(t *testing.T) {
	f := newFleet(t)
	a := startBackend(t, "alpha", nil)
	bb := startBackend(t, "beta", nil)
	f.healthyBackend("default", a)
	f.healthyBackend("default", bb)
	e := startEdge(t, f, optimizerOpts(time.Millisecond))
	var clients []*client
	for _, v := range versions {
		clients = append(clients, connect(t, e.MCPURL(), v.version), connect(t, e.MCPURL(), v.version))
	}
	batches := testutil.ToFloat64(e.m.batches)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var calls sync.Map
	for i, c := range clients {
		wg.Go(func() {
			n := 0
			for {
				select {
				case <-stop:
					calls.Store(i, n)
					return
				default:
				}
				res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: FindToolName, Arguments: map[string]any{"query": "echo text"}})
				if err != nil || res.IsError {
					t.Errorf("find_tool: %v %+v", err, res)
					return
				}
				var r view.FindResult
				if err := json.Unmarshal([]byte(text(res)), &r); err != nil {
					t.Errorf("find_tool result %q: %v", text(res), err)
					return
				}
				n++
				hasBeta := slices.Contains(resultNames(r), "beta_echo")
				if !slices.Contains(resultNames(r), "alpha_echo") || (hasBeta != (r.CatalogTools == 4)) || (r.CatalogTools != 2 && r.CatalogTools != 4) {
					t.Errorf("inconsistent find_tool result: %+v", r)
					return
				}
			}
		})
	}
	var last uint64
	for i := range 30 {
		last = f.health("default", "beta", i%2 == 1) // ends up
		time.Sleep(2 * time.Millisecond)
	}
	eventually(t, 20*time.Second, "edge at the last generation", func() bool { return e.confirmed.Load() >= last })
	close(stop)
	wg.Wait()
	if swaps := testutil.ToFloat64(e.m.batches) - batches; swaps < 3 {
		t.Errorf("%v view swaps during the calls, want several", swaps)
	}
	for i, c := range clients {
		if n, _ := calls.Load(i); n == nil || n.(int) == 0 {
			t.Errorf("client %d made no find_tool call", i)
		}
		if !c.finds(t, "echo text", "beta_echo") {
			t.Errorf("client %d: beta_echo missing after the last swap", i)
		}
		if n := c.changed.Load(); n != 0 {
			t.Errorf("client %d: %d tools/list_changed", i, n)
		}
	}
	if got := testutilCount(t, e, "fleetgate_edge_find_tool_seconds"); got == 0 {
		t.Error("fleetgate_edge_find_tool_seconds observed nothing")
	}
}

// testutilCount is the number of observations of a histogram of e.
func testutilCount(t testing.TB, e *Edge, name string) uint64 {
	t.Helper()
	mfs, err := e.opts.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}

// find_tool puts the right demo tool first for plain-words queries.
func TestOptimizerFindsDemoTool(t *testing.T) {
	f := newFleet(t)
	b := startBackend(t, "alpha", &demoOpts) // echo, add and 18 generated tools
	f.healthyBackend("default", b)
	e := startEdge(t, f, optimizerOpts(50*time.Millisecond))
	c := connect(t, e.MCPURL(), "2025-11-25")
	for query, want := range map[string]string{
		"add two numbers":                  "alpha_add",
		"calculate the sum of two numbers": "alpha_add",
		"echo some text back to me":        "alpha_echo",
		"repeat the text I give you":       "alpha_echo",
		"generated tool number 7":          "alpha_tool_0007",
		"what tools does alpha offer?":     "",
	} {
		got := c.find(t, query, 3)
		if got.CatalogTools != 20 || got.CatalogTokens <= got.ReturnedTokens {
			t.Errorf("find_tool %q: figures %+v", query, got)
		}
		if want == "" {
			continue
		}
		if len(got.Tools) == 0 || got.Tools[0].Name != want {
			t.Errorf("find_tool %q = %v, want %s first", query, resultNames(got), want)
			continue
		}
		top := got.Tools[0]
		def := e.current().Tools[want]
		if top.Description != def.Description || string(top.InputSchema) != string(view.RawSchema(def.InputSchema)) || top.Score <= 0 {
			t.Errorf("find_tool %q: %+v does not carry the tool's definition", query, top)
		}
	}
}
