package calls

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/policy"
)

// memListener is a net.Listener of in-memory connections (net.Pipe): the
// backends of these tests are real go-sdk servers behind real HTTP, with
// no socket.
type memListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newMemListener() *memListener {
	return &memListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error { l.once.Do(func() { close(l.closed) }); return nil }

func (l *memListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// dial is the backend client's DialContext: one end of a pipe, the other
// accepted by the backend's server.
func (l *memListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// memBackend is a go-sdk server named name with a tool echo, a prompt
// greet and a resource, served over memory; it returns the server and
// the pool that reaches it.
func memBackend(t *testing.T) (*mcp.Server, *backend.Pool) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "alpha", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echoes"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	srv.AddPrompt(&mcp.Prompt{Name: "greet"}, func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + r.Params.Name}}}}, nil
	})
	srv.AddResource(&mcp.Resource{URI: "file:///a.txt", Name: "a"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "A"}}}, nil
	})
	ln := newMemListener()
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
	done := make(chan struct{})
	go func() { defer close(done); _ = hs.Serve(ln) }()
	pool := backend.NewPool(&http.Client{Transport: &http.Transport{DialContext: ln.dial}}, 10*time.Second, 0, nil)
	t.Cleanup(func() {
		pool.CloseAll()
		_ = hs.Close()
		<-done
	})
	return srv, pool
}

// memView is the view of one advertisable backend alpha with the
// definitions given.
func memView(t *testing.T, tools, prompts, resources []json.RawMessage) *view.Served {
	t.Helper()
	d, err := catalog.Digest(tools)
	if err != nil {
		t.Fatal(err)
	}
	g := &events.Group{Name: "default", Backends: map[string]*events.Backend{"alpha": {Name: "alpha", Group: "default",
		Advertisable: true, Status: "healthy", Config: events.BackendConfig{URL: "http://alpha.test/mcp"},
		Catalog: &events.Catalog{Tools: tools, Prompts: prompts, Resources: resources, Digest: d}}}}
	return view.Build(1, g, "_", view.Empty())
}

func newPlane(t *testing.T, pool *backend.Pool, sv *view.Served) *Plane {
	return New(Options{Group: "default", Edge: "e1", IdentityHeader: "X-User", Pool: pool,
		View: func() *view.Served { return sv }, Generation: func(s *view.Served) uint64 { return s.Gen },
		Backend: func(name string) (events.BackendConfig, bool) {
			if name != "alpha" {
				return events.BackendConfig{}, false
			}
			return events.BackendConfig{URL: "http://alpha.test/mcp"}, true
		}, Log: zerolog.Nop()})
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func text(r *mcp.CallToolResult) string {
	if r == nil || len(r.Content) == 0 {
		return ""
	}
	tc, _ := r.Content[0].(*mcp.TextContent)
	if tc == nil {
		return ""
	}
	return tc.Text
}

// A call, a prompt and a resource reach the real backend that owns them,
// under their own names; an unknown tool is an isError result naming it.
func TestPlaneRoutes(t *testing.T) {
	_, pool := memBackend(t)
	sv := memView(t, []json.RawMessage{raw(`{"name":"echo","inputSchema":{"type":"object"}}`)},
		[]json.RawMessage{raw(`{"name":"greet"}`)}, []json.RawMessage{raw(`{"uri":"file:///a.txt","name":"a"}`)})
	pl := newPlane(t, pool, sv)
	ctx := context.Background()

	reply := pl.Run(ctx, Call{Name: "alpha_echo", Args: raw(`{"text":"hi"}`)})
	if res := reply.Decoded(); res.IsError || text(res) != "echo: hi" {
		t.Fatalf("call: %+v", res)
	}
	unknown := pl.Run(ctx, Call{Name: "beta_echo"})
	if res := unknown.Decoded(); !res.IsError || !strings.Contains(text(res), `"beta_echo"`) {
		t.Fatalf("unknown tool: %+v", res)
	}
	if n := testutil.ToFloat64(pl.unknownCalls); n != 1 {
		t.Fatalf("unknown calls counted: %v", n)
	}
	pr, err := pl.GetPrompt(ctx, &mcp.GetPromptRequest{Params: &mcp.GetPromptParams{Name: "alpha_greet"}})
	if err != nil || len(pr.Messages) != 1 {
		t.Fatalf("prompt: %+v %v", pr, err)
	}
	rr, err := pl.ReadResource(ctx, &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: "file:///a.txt"}})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "A" {
		t.Fatalf("resource: %+v %v", rr, err)
	}
	if _, err := pl.ReadResource(ctx, &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: "file:///nope"}}); err == nil {
		t.Fatal("an unknown resource was read")
	}
	if pl.Inflight() != 0 {
		t.Fatalf("%d requests still counted in flight", pl.Inflight())
	}
}

// The policy in force decides per caller: a denied tool is hidden from the
// caller's view and its call is refused naming the rule, without reaching
// the backend; another caller is not affected.
func TestPlanePolicy(t *testing.T) {
	_, pool := memBackend(t)
	sv := memView(t, []json.RawMessage{raw(`{"name":"echo","inputSchema":{"type":"object"}}`)}, nil, nil)
	pl := newPlane(t, pool, sv)
	p, err := policy.Compile(&policy.Section{Rules: []policy.Rule{{Name: "no-echo-for-bob", Effect: "deny",
		Tools: []string{"alpha_echo"}, When: `identity == "bob"`}}})
	if err != nil {
		t.Fatal(err)
	}
	if old := pl.SetPolicy(p); old != nil {
		t.Fatal("a policy before the first")
	}
	bob := &mcp.RequestExtra{Header: http.Header{"X-User": {"bob"}}}
	alice := &mcp.RequestExtra{Header: http.Header{"X-User": {"alice"}}}
	if n := len(pl.VisibleTo(sv, bob).ToolList); n != 0 {
		t.Fatalf("bob sees %d tools", n)
	}
	if n := len(pl.VisibleTo(sv, alice).ToolList); n != 1 {
		t.Fatalf("alice sees %d tools", n)
	}
	_, refusal := pl.Allowed(sv, nil, "bob", policy.KindTool, "alpha_echo")
	var d *deniedError
	if !errors.As(refusal, &d) || d.rule != "no-echo-for-bob" {
		t.Fatalf("refusal %v", refusal)
	}
	refused := pl.Run(context.Background(), Call{Ident: "bob", Name: "alpha_echo", Args: raw(`{"text":"x"}`)})
	if res := refused.Decoded(); !res.IsError {
		t.Fatalf("bob's call: %+v", res)
	}
	allowed := pl.Run(context.Background(), Call{Ident: "alice", Name: "alpha_echo", Args: raw(`{"text":"x"}`)})
	if res := allowed.Decoded(); res.IsError {
		t.Fatalf("alice's call: %+v", res)
	}
	if n := testutil.ToFloat64(pl.Refused().WithLabelValues("no-echo-for-bob")); n != 2 { // Allowed above, and the call
		t.Fatalf("refusals counted: %v", n)
	}
}
