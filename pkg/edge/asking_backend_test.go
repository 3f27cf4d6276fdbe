package edge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/events"
)

// startAskingBackend serves, as backend name, the tools that send what a
// backend may send during a call: progress, log messages, and requests
// to the client (sampling, elicitation, roots). It is published healthy
// in group default of f.
func startAskingBackend(t testing.TB, f *fleet, name string) {
	startAskingBackendWith(t, f, name, &atomic.Value{})
}

// startAskingBackendWith is startAskingBackend noting in unsubscribed the
// URI of the last resources/unsubscribe it got.
func startAskingBackendWith(t testing.TB, f *fleet, name string, unsubscribed *atomic.Value) (url string) {
	t.Helper()
	srv := askingServer(name, unsubscribed)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	cfg := events.BackendConfig{URL: hs.URL, Transport: "streamable-http"}
	f.publish(events.NewBackendAdded(time.Now(), "default", name, cfg))
	f.catalog("default", name, listCatalogVia(t, &mcp.StreamableClientTransport{Endpoint: hs.URL, DisableStandaloneSSE: true}))
	f.health("default", name, true)
	return hs.URL
}

// askingServer is the MCP server of startAskingBackendWith.
func askingServer(name string, unsubscribed *atomic.Value) *mcp.Server {
	var srv *mcp.Server
	srv = mcp.NewServer(&mcp.Implementation{Name: name}, &mcp.ServerOptions{
		SubscribeHandler: func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(_ context.Context, r *mcp.UnsubscribeRequest) error {
			unsubscribed.Store(r.Params.URI)
			return nil
		},
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			if req.Params.Ref.Type != "ref/prompt" || req.Params.Ref.Name != "greet" || req.Params.Argument.Name != "name" {
				return nil, fmt.Errorf("completion of %+v", req.Params.Ref)
			}
			var vals []string
			for _, v := range []string{"ada", "alan", "grace"} {
				if strings.HasPrefix(v, req.Params.Argument.Value) {
					vals = append(vals, v)
				}
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: vals, Total: len(vals)}}, nil
		}})
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "name"}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + req.Params.Arguments["name"]}}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "progress", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tok := req.Params.GetProgressToken()
			for i := 1; i <= 3; i++ {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3,
					Message: fmt.Sprintf("step %d", i)}); err != nil {
					return nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("token %v", tok)}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "logs", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for _, l := range []mcp.LoggingLevel{"debug", "info", "warning"} {
				if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: l, Logger: name, Data: "a " + string(l) + " message"}); err != nil {
					return nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "logged"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "sample", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "say hi"}}}})
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "sampling: " + err.Error()}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "model " + res.Model + ": " + res.Content.(*mcp.TextContent).Text}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "elicit", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "your name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "elicitation: " + err.Error()}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action + " " + fmt.Sprint(res.Content["name"])}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "roots", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "roots: " + err.Error()}}}, nil
			}
			var uris []string
			for _, r := range res.Roots {
				uris = append(uris, r.URI)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "roots " + strings.Join(uris, ",")}}}, nil
		})
	srv.AddResource(&mcp.Resource{URI: "res://counter", Name: "counter", MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "res://counter", Text: "1"}}}, nil
		})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "res://items/{id}", Name: "item", MIMEType: "text/plain"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "item at " + r.Params.URI}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "bump", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "res://counter"}); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "bumped"}}}, nil
		})
	// tick sends one progress notification carrying the time it was
	// sent; sampletime returns how long its sampling request took.
	srv.AddTool(&mcp.Tool{Name: "tick", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(),
				Progress: 1, Message: strconv.FormatInt(time.Now().UnixNano(), 10)})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ticked"}}}, err
		})
	srv.AddTool(&mcp.Tool{Name: "sampletime", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			start := time.Now()
			_, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "say hi"}}}})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.FormatInt(int64(time.Since(start)), 10)}}}, err
		})
	return srv
}

// A client subscribed to a backend's resource hears its updates through
// the edge, and only it; after it unsubscribes, the edge's subscription
// on the backend ends too.
func TestResourceSubscription(t *testing.T) { synctest.Test(t, testResourceSubscription) }

func testResourceSubscription(t *testing.T) {
	m := serveMemoryEdge(t, nil)
	var unsubscribed atomic.Value
	m.serveServer(t, "ask", askingServer("ask", &unsubscribed))
	m.settle()
	e := m.Edge
	if n := len(e.current().Catalog.Tools); n != 8 {
		t.Fatalf("%d tools served; want ask's 8", n)
	}
	a, b := connectAsked(t, e.MCPURL(), false), connectAsked(t, e.MCPURL(), false)
	if caps := a.cs.InitializeResult().Capabilities; caps.Resources == nil || !caps.Resources.Subscribe {
		t.Fatalf("edge capabilities %+v: want resources.subscribe", caps.Resources)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := a.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "res://counter"}); err != nil {
		t.Fatal(err)
	}
	if err := b.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "res://nope"}); err == nil {
		t.Fatal("subscribed to a resource no backend serves")
	}
	// A 2026-07-28 client subscribes on a subscriptions/listen stream.
	var newUpdates atomic.Int64
	c26 := mcp.NewClient(&mcp.Implementation{Name: "listener"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			if r.Params.URI == "res://counter" {
				newUpdates.Add(1)
			}
		}})
	cs26, err := c26.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.MCPURL(), MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs26.Close()
	if err := cs26.Subscribe(ctx, &mcp.SubscribeParams{URI: "res://counter"}); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	if n := e.calls.Subscribers("ask", "", "res://counter"); n != 2 {
		t.Fatalf("%d subscribers of res://counter; want a's and the listen stream's", n)
	}
	b.call(t, "ask_bump", nil)
	synctest.Wait()
	if got := a.updatesHeard(); len(got) != 1 {
		t.Fatalf("updates heard by a: %v; want one", got)
	}
	if n := newUpdates.Load(); n != 1 {
		t.Fatalf("%d updates on the listen stream; want 1", n)
	}
	if err := cs26.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "res://counter"}); err != nil {
		t.Fatal(err)
	}
	if got := a.updatesHeard(); got[0] != "res://counter" {
		t.Fatalf("updates heard: %v", got)
	}
	if err := a.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "res://counter"}); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	if u, _ := unsubscribed.Load().(string); u != "res://counter" {
		t.Fatalf("the backend's last unsubscription %q; want res://counter", u)
	}
	b.call(t, "ask_bump", nil)
	b.call(t, "ask_bump", nil)
	if got := b.updatesHeard(); len(got) != 0 {
		t.Fatalf("a client that never subscribed heard %v", got)
	}
}
