package edge

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
