package test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/controller"
	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/edge"
	"github.com/fleetgate/fleetgate/pkg/verify"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// eraBackend is a go-sdk v1.8.0 backend whose catalog differs by protocol
// era: its session-based server (up to 2025-11-25) is the demo backend's
// (echo, add, a readme resource); the requests of 2026-07-28 go to a
// server of their own (demobackend.ServeStatelessWith) that has echo
// with another description, "fresh", which only clients of 2026-07-28
// get, and a prompt "welcome" only they get. The second value is that
// server, to change its lists.
func eraBackend(t *testing.T) (*demobackend.Backend, *mcp.Server) {
	t.Helper()
	b := startBackend(t, "alpha", &demobackend.Options{NewProtocol: true})
	srv := mcp.NewServer(&mcp.Implementation{Name: "alpha-2026", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}, Prompts: &mcp.PromptCapabilities{ListChanged: true}}})
	srv.AddTool(&mcp.Tool{Name: "echo", Description: "Echo, 2026 edition.", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Text string }
			_ = json.Unmarshal(r.Params.Arguments, &in)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "2026: " + in.Text}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "fresh", Description: "Only for 2026-07-28 clients.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "fresh"}}}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "welcome"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello"}}}}, nil
	})
	b.ServeStatelessWith(srv)
	return b, srv
}

// eraLists are the tools and prompts a go-sdk client of rev lists at url,
// each as JSON by name.
type eraLists struct{ tools, prompts map[string]string }

func listEra(t *testing.T, ctx context.Context, cs *mcp.ClientSession) eraLists {
	t.Helper()
	l := eraLists{tools: map[string]string{}, prompts: map[string]string{}}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(tool)
		l.tools[tool.Name] = string(b)
	}
	if cs.InitializeResult().Capabilities.Prompts != nil {
		for p, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(p)
			l.prompts[p.Name] = string(b)
		}
	}
	return l
}

// renamed is l as the edge serves backend's lists: each name prefixed.
func (l eraLists) renamed(t *testing.T, backend string) eraLists {
	t.Helper()
	out := eraLists{tools: map[string]string{}, prompts: map[string]string{}}
	for dst, src := range map[*map[string]string]map[string]string{&out.tools: l.tools, &out.prompts: l.prompts} {
		for name, def := range src {
			var m map[string]any
			if err := json.Unmarshal([]byte(def), &m); err != nil {
				t.Fatal(err)
			}
			m["name"] = backend + "_" + name
			b, _ := json.Marshal(m)
			(*dst)[backend+"_"+name] = string(b)
		}
	}
	return out
}

func connectAt(t *testing.T, ctx context.Context, url, rev string, o *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "era-" + rev}, o).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: rev})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != rev {
		t.Fatalf("negotiated %q, want %q", got, rev)
	}
	return cs
}

// TestEraCatalogThroughEdge: a backend that lists 2026-07-28 clients
// other tools and prompts than 2025-11-25 ones, behind a real controller
// and edge over embedded NATS. The controller publishes both eras' lists
// (catalog_changed field 10) and one view digest over both; a 2025-11-25
// and a 2026-07-28 go-sdk client each list through the edge exactly what
// they list directly (renamed), call the tools of their era as the
// backend answers them, and have a tool of the other era refused as
// unknown; edge verify and the session's verdict are converged; a tool
// added to the 2026 list alone reaches the 2026-07-28 client's
// list_changed and list, while the 2025-11-25 session stays converged and
// its list unchanged; on an optimizer edge find_tool and call_tool see
// the caller's era only; a change of the 2025 list not yet listed again
// makes that session stale.
func TestEraCatalogThroughEdge(t *testing.T) {
	node := startNATS(t)
	alpha, era := eraBackend(t)
	ctl := startController(t, node.ClientURL(), "c1", fleetYAML(200*time.Millisecond, 200*time.Millisecond, alpha))
	el := followLog(t, node.ClientURL())
	el.waitEvent(t, 0, 20*time.Second, "alpha advertised", healthOf("alpha", true))
	_, ev, _ := el.waitEvent(t, 0, 20*time.Second, "alpha's catalog", catalogOf("alpha"))
	cc := ev.GetCatalogChanged()
	if cc.ProtocolVersion != "2026-07-28" || cc.StatelessOnly || cc.StatelessLists == nil || cc.StatelessLists.Digest == cc.Digest {
		t.Fatalf("catalog: protocol %q stateless-only %v stateless lists %v (digest %s)", cc.ProtocolVersion, cc.StatelessOnly, cc.StatelessLists, cc.Digest)
	}
	e := startEdge(t, node.ClientURL())

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	newChanged := make(chan struct{}, 16)
	oldChanged := make(chan struct{}, 16)
	revs := []string{"2025-11-25", "2026-07-28"}
	via := map[string]*mcp.ClientSession{
		"2025-11-25": connectAt(t, ctx, e.MCPURL(), "2025-11-25", &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { oldChanged <- struct{}{} }}),
		"2026-07-28": connectAt(t, ctx, e.MCPURL(), "2026-07-28", &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { newChanged <- struct{}{} }}),
	}
	direct := map[string]eraLists{}
	for _, rev := range revs {
		direct[rev] = listEra(t, ctx, connectAt(t, ctx, alpha.URL(), rev, nil)).renamed(t, "alpha")
	}
	if _, ok := direct["2025-11-25"].tools["alpha_fresh"]; ok {
		t.Fatal("the backend lists fresh to 2025-11-25 clients")
	}
	if _, ok := direct["2026-07-28"].tools["alpha_fresh"]; !ok {
		t.Fatal("the backend does not list fresh to 2026-07-28 clients")
	}
	for _, rev := range revs {
		got := listEra(t, ctx, via[rev])
		if !maps.Equal(got.tools, direct[rev].tools) {
			t.Errorf("%s: tools through the edge\n%v\nwant (the backend's to %s, renamed)\n%v", rev, got.tools, rev, direct[rev].tools)
		}
		if !maps.Equal(got.prompts, direct[rev].prompts) {
			t.Errorf("%s: prompts through the edge %v, want %v", rev, slices.Sorted(maps.Keys(got.prompts)), slices.Sorted(maps.Keys(direct[rev].prompts)))
		}
	}

	// Calls: each era's echo as the backend answers that era; fresh for
	// 2026-07-28 only, refused as unknown to a 2025-11-25 client.
	for rev, want := range map[string]string{"2025-11-25": "alpha: hi", "2026-07-28": "2026: hi"} {
		res, err := via[rev].CallTool(ctx, &mcp.CallToolParams{Name: "alpha_echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil || res.IsError || text(res) != want {
			t.Errorf("%s: echo: %v %+v, want %q", rev, err, res, want)
		}
	}
	res, err := via["2026-07-28"].CallTool(ctx, &mcp.CallToolParams{Name: "alpha_fresh", Arguments: map[string]any{}})
	if err != nil || res.IsError || text(res) != "fresh" {
		t.Errorf("2026-07-28: fresh: %v %+v", err, res)
	}
	res, err = via["2025-11-25"].CallTool(ctx, &mcp.CallToolParams{Name: "alpha_fresh", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "not available") {
		t.Errorf("2025-11-25: fresh: %v %+v, want refused as unknown", err, res)
	}
	if pr, err := via["2026-07-28"].GetPrompt(ctx, &mcp.GetPromptParams{Name: "alpha_welcome"}); err != nil || len(pr.Messages) != 1 {
		t.Errorf("2026-07-28: welcome: %v %+v", err, pr)
	}
	if _, err := via["2025-11-25"].GetPrompt(ctx, &mcp.GetPromptParams{Name: "alpha_welcome"}); err == nil {
		t.Error("2025-11-25: welcome, a prompt of 2026-07-28 only, was served")
	}

	// The evidence: one digest for the generation, over both eras.
	var view controller.ViewJSON
	if code := httpJSON(t, "GET", ctl.admin+"/v1/groups/default/view", "", &view); code != 200 || view.Eras == nil {
		t.Fatalf("controller view: HTTP %d, eras %+v", code, view.Eras)
	}
	if d, _ := catalog.EraDigest(view.Eras.Session.Digest, view.Eras.Stateless.Digest); d != view.Digest {
		t.Errorf("view digest %s, want the era digest %s", view.Digest, d)
	}
	if got := e.View().Digest; got != view.Digest {
		t.Errorf("edge view digest %s, controller's %s", got, view.Digest)
	}
	rep, err := verify.Run(ctx, verify.Options{URL: e.MCPURL(), Controller: ctl.admin})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != "converged" {
		t.Fatalf("edge verify: %s (%s)", rep.Verdict, rep.Reason)
	}
	verdict := func() string {
		for _, s := range e.Sessions() {
			if s.ID == via["2025-11-25"].ID() {
				return s.Verdict
			}
		}
		return ""
	}
	eventually(t, 10*time.Second, "2025-11-25 session converged", func() bool { return verdict() == "converged" })

	// A tool added to the 2026-07-28 list alone.
	from := el.len()
	era.AddTool(&mcp.Tool{Name: "later", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	el.waitEvent(t, from, 20*time.Second, "alpha's new stateless list", func(ev *eventspb.Event) bool {
		c := ev.GetCatalogChanged()
		return c != nil && ev.Backend == "alpha" && c.StatelessLists != nil && c.Digest == cc.Digest
	})
	select {
	case <-newChanged:
	case <-ctx.Done():
		t.Fatal("no tools list_changed for the 2026-07-28 client")
	}
	if got := listEra(t, ctx, via["2026-07-28"]); got.tools["alpha_later"] == "" {
		t.Errorf("2026-07-28 tools after the change: %v", slices.Sorted(maps.Keys(got.tools)))
	}
	if got := listEra(t, ctx, via["2025-11-25"]); !maps.Equal(got.tools, direct["2025-11-25"].tools) {
		t.Errorf("2025-11-25 tools changed with the 2026 list: %v", slices.Sorted(maps.Keys(got.tools)))
	}
	select {
	case <-oldChanged:
		t.Error("the 2025-11-25 client was told of a change of the 2026 list")
	default:
	}
	if v := verdict(); v != "converged" {
		t.Errorf("2025-11-25 session %s after a change of the 2026 list alone", v)
	}
	if rep, err := verify.Run(ctx, verify.Options{URL: e.MCPURL(), Controller: ctl.admin}); err != nil || rep.Verdict != "converged" {
		t.Errorf("edge verify after the 2026 change: %v %+v", err, rep)
	}

	// An optimizer edge: find_tool finds, and call_tool calls, the tools
	// of the caller's era only.
	opt := startEdgeOn(t, node.ClientURL(), nil, edge.Options{Coalesce: 100 * time.Millisecond, Mode: edge.ModeOptimizer})
	for rev, want := range map[string]bool{"2025-11-25": false, "2026-07-28": true} {
		cs := connectAt(t, ctx, opt.MCPURL(), rev, nil)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "find_tool", Arguments: map[string]any{"query": "only for 2026-07-28 clients", "limit": 50}})
		if err != nil || res.IsError {
			t.Fatalf("%s: find_tool: %v %+v", rev, err, res)
		}
		if found := strings.Contains(text(res), `"alpha_fresh"`); found != want {
			t.Errorf("%s: find_tool found alpha_fresh %v, want %v: %s", rev, found, want, text(res))
		}
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"tool_name": "alpha_fresh", "arguments": map[string]any{}}})
		if err != nil || res.IsError == want || want && text(res) != "fresh" {
			t.Errorf("%s: call_tool alpha_fresh: %v %+v (want served %v)", rev, err, res, want)
		}
	}

	// A change of the 2025 list, not listed again: stale.
	alpha.AddTool(&mcp.Tool{Name: "extra", InputSchema: json.RawMessage(`{"type":"object"}`)})
	select {
	case <-oldChanged:
	case <-ctx.Done():
		t.Fatal("no tools list_changed for the 2025-11-25 client")
	}
	eventually(t, 10*time.Second, "2025-11-25 session stale", func() bool { return verdict() == "stale" })
}
