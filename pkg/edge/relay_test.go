package edge

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// askedClient is a session-based client that answers sampling,
// elicitation and roots, and keeps the progress and log messages it hears.
type askedClient struct {
	cs       *mcp.ClientSession
	mu       sync.Mutex
	progress []string
	logs     []string
	updates  []string
	messages []time.Duration // ages of the progress notifications whose message is a send time
}

func (c *askedClient) updatesHeard() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.updates...)
}

func (c *askedClient) heard() (progress, logs []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.progress...), append([]string(nil), c.logs...)
}

// connectAsked connects to url; capable declares sampling and elicitation.
func connectAsked(t testing.TB, url string, capable bool) *askedClient {
	t.Helper()
	return connectAskedWith(t, url, capable, nil)
}

// connectAskedWith is connectAsked with the HTTP client hc.
func connectAskedWith(t testing.TB, url string, capable bool, hc *http.Client) *askedClient {
	t.Helper()
	ac := &askedClient{}
	opts := &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			ac.mu.Lock()
			ac.progress = append(ac.progress, fmt.Sprintf("%v:%v/%v", r.Params.ProgressToken, r.Params.Progress, r.Params.Total))
			if ns, err := strconv.ParseInt(r.Params.Message, 10, 64); err == nil {
				ac.messages = append(ac.messages, time.Since(time.Unix(0, ns)))
			}
			ac.mu.Unlock()
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			ac.mu.Lock()
			ac.updates = append(ac.updates, r.Params.URI)
			ac.mu.Unlock()
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			ac.mu.Lock()
			ac.logs = append(ac.logs, string(r.Params.Level))
			ac.mu.Unlock()
		},
	}
	if capable {
		opts.CreateMessageHandler = func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant",
				Content: &mcp.TextContent{Text: "hi from the client (" + r.Params.Messages[0].Content.(*mcp.TextContent).Text + ")"}}, nil
		}
		opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "asked-client"}, opts)
	c.AddRoots(&mcp.Root{URI: "file:///work", Name: "work"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: 20, HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	ac.cs = cs
	return ac
}

func (c *askedClient) call(t testing.TB, name string, meta mcp.Meta) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}, Meta: meta})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// TestRelayDuringCall: what a backend sends during a call reaches the
// client that made it, through the edge, and the client's answers reach
// the backend; a client without the capability is answered at once.
func TestRelayDuringCall(t *testing.T) {
	// sub runs f in a bubble of its own, on an edge serving the asking
	// backend at url.
	sub := func(name string, f func(t *testing.T, url string)) {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := serveMemoryEdge(t, nil)
				e.serveServer(t, "ask", askingServer("ask", &atomic.Value{}))
				e.settle()
				if n := len(e.current().Catalog.Tools); n != 8 {
					t.Fatalf("%d tools served; want ask's 8", n)
				}
				f(t, e.MCPURL())
			})
		})
	}
	sub("progress", func(t *testing.T, url string) {
		capable := connectAsked(t, url, true)
		res := capable.call(t, "ask_progress", mcp.Meta{"progressToken": "tok-1"})
		if text(res) != "token tok-1" {
			t.Fatalf("backend saw %q, want the client's token", text(res))
		}
		synctest.Wait()
		if p, _ := capable.heard(); len(p) != 3 {
			t.Fatalf("progress heard: %v; want three notifications", p)
		}
		if p, _ := capable.heard(); p[0] != "tok-1:1/3" || p[2] != "tok-1:3/3" {
			t.Fatalf("progress heard: %v", p)
		}
	})
	sub("sampling", func(t *testing.T, url string) {
		capable := connectAsked(t, url, true)
		if got := text(capable.call(t, "ask_sample", nil)); got != "model test-model: hi from the client (say hi)" {
			t.Fatalf("sampling result %q", got)
		}
	})
	sub("elicitation", func(t *testing.T, url string) {
		capable := connectAsked(t, url, true)
		if got := text(capable.call(t, "ask_elicit", nil)); got != "accept ada" {
			t.Fatalf("elicitation result %q", got)
		}
	})
	sub("roots", func(t *testing.T, url string) {
		capable := connectAsked(t, url, true)
		if got := text(capable.call(t, "ask_roots", nil)); got != "roots file:///work" {
			t.Fatalf("roots result %q", got)
		}
	})
	sub("logging", func(t *testing.T, url string) {
		lc := connectAsked(t, url, false)
		lc.call(t, "ask_logs", nil)
		if _, logs := lc.heard(); len(logs) != 0 {
			t.Fatalf("a client that set no level heard %v", logs)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := lc.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
		lc.call(t, "ask_logs", nil)
		synctest.Wait()
		if _, logs := lc.heard(); len(logs) != 2 {
			t.Fatalf("logs heard at level info: %v; want two", logs)
		}
		if _, logs := lc.heard(); logs[0] != "info" || logs[1] != "warning" {
			t.Fatalf("logs at level info: %v", logs)
		}
	})
	sub("completion", func(t *testing.T, url string) {
		capable := connectAsked(t, url, true)
		if caps := capable.cs.InitializeResult().Capabilities; caps.Completions == nil || caps.Logging == nil {
			t.Fatalf("edge capabilities %+v: want completions and logging", caps)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := capable.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "ask_greet"},
			Argument: mcp.CompleteParamsArgument{Name: "name", Value: "a"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(res.Completion.Values, ","); got != "ada,alan" {
			t.Fatalf("completion values %q", got)
		}
		if _, err := capable.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "nope"},
			Argument: mcp.CompleteParamsArgument{Name: "name", Value: "a"}}); err == nil || !strings.Contains(err.Error(), "not available") {
			t.Fatalf("completion of an unknown prompt: %v", err)
		}
	})
	sub("incapable", func(t *testing.T, url string) {
		plain := connectAsked(t, url, false)
		for _, tool := range []string{"ask_sample", "ask_elicit"} {
			start := time.Now()
			res := plain.call(t, tool, nil)
			if !res.IsError || !strings.Contains(text(res), "did not declare") && !strings.Contains(text(res), "not supported") {
				t.Fatalf("%s without the capability: %q", tool, text(res))
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("%s without the capability took %s", tool, d)
			}
		}
		// A plain client is served by the fast path: a backend's roots/list
		// is answered at once with an error there (relay.go).
		start := time.Now()
		if res := plain.call(t, "ask_roots", nil); !res.IsError || time.Since(start) > 3*time.Second {
			t.Fatalf("roots on the fast path: %q after %s", text(res), time.Since(start))
		}
	})
}

// A session keeps its client's log level and resource subscriptions when
// it moves to another edge: both are in its record, and the edge that
// rebuilds the session sets them again.
func TestMovedSessionKeepsLevelAndSubscriptions(t *testing.T) {
	f := newSharedFleet(t)
	startAskingBackend(t, f.fleet, "ask")
	edgeA := startRecordEdge(t, f, "a", nil, nil)
	edgeB := startRecordEdge(t, f, "b", nil, nil)
	p := newSwitchProxy(t, edgeA.MCPURL())
	lc := connectAskedWith(t, p.url(), false, &http.Client{Transport: identityTransport{"alice"}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := lc.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatal(err)
	}
	if err := lc.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "res://counter"}); err != nil {
		t.Fatal(err)
	}
	sid := lc.cs.ID()
	eventually(t, 10*time.Second, "the level and subscription in A's record", func() bool {
		rec := stored(t, edgeA.Edge, sid)
		return rec != nil && rec.LogLevel == "warning" && len(rec.Subscriptions) == 1
	})
	edgeA.kill()
	p.to(edgeB.MCPURL())
	eventually(t, 10*time.Second, "B serves the tools", func() bool { return len(edgeB.current().Catalog.Tools) == 8 })
	if got := text(lc.call(t, "ask_logs", nil)); got != "logged" {
		t.Fatalf("ask_logs on B = %q", got)
	}
	eventually(t, 5*time.Second, "the warning", func() bool { _, l := lc.heard(); return len(l) >= 1 })
	if _, logs := lc.heard(); len(logs) != 1 || logs[0] != "warning" {
		t.Fatalf("logs heard on B: %v, want only the warning", logs)
	}
	lc.call(t, "ask_bump", nil)
	eventually(t, 5*time.Second, "the update on B", func() bool { return len(lc.updatesHeard()) == 1 })
	if info, ok := sessionInfo(t, edgeB.Edge, sid); !ok || info.Edge != "b" {
		t.Fatalf("the session on B: %+v (found %v)", info, ok)
	}
}

// A backend's resource templates are listed through the edge, and a read
// of a URI that expands one goes to that backend.
func TestResourceTemplates(t *testing.T) { synctest.Test(t, testResourceTemplates) }

func testResourceTemplates(t *testing.T) {
	e := serveMemoryEdge(t, nil)
	e.serveServer(t, "ask", askingServer("ask", &atomic.Value{}))
	e.settle()
	if n := len(e.current().Catalog.Tools); n != 8 {
		t.Fatalf("%d tools served; want ask's 8", n)
	}
	c := connectAsked(t, e.MCPURL(), false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(res.ResourceTemplates) != 1 || res.ResourceTemplates[0].URITemplate != "res://items/{id}" {
		t.Fatalf("templates: %+v, %v", res, err)
	}
	rr, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "res://items/42"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "item at res://items/42" {
		t.Fatalf("read of an expansion: %+v, %v", rr, err)
	}
	if _, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "res://other/42"}); err == nil {
		t.Fatal("read of a URI no resource or template has")
	}
}
