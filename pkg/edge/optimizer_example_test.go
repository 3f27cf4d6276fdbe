package edge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/edge"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
)

// An optimizer edge advertises find_tool and call_tool only: a client
// searches the group's tools in plain words and calls the one it picks.
func Example_optimizer() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, _ := os.MkdirTemp("", "edge-example")
	defer os.RemoveAll(dir)
	node, _ := natsnode.Start(&natsnode.Options{DataDir: dir, Listen: "127.0.0.1:0"})
	defer node.Shutdown()
	nc, _ := nats.Connect(node.ClientURL())
	defer nc.Close()
	js, _ := jetstream.New(nc)

	// The controller's side: a demo backend (echo, add), its catalog and health.
	log, _ := events.OpenLog(ctx, js, nil)
	w, _ := events.NewWriter(ctx, log, "controller")
	be := demobackend.New("alpha", nil)
	_ = be.Start("127.0.0.1:0")
	defer be.Stop()
	lister, _ := mcp.NewClient(&mcp.Implementation{Name: "lister"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: be.URL()}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	tools, _ := lister.ListTools(ctx, nil)
	lister.Close()
	cat := &events.Catalog{}
	for _, t := range tools.Tools {
		b, _ := json.Marshal(t)
		cat.Tools = append(cat.Tools, b)
	}
	catEv, _ := events.NewCatalogChanged(time.Now(), "default", "alpha", cat)
	_, _ = w.Publish(ctx, events.NewBackendAdded(time.Now(), "default", "alpha", events.BackendConfig{URL: be.URL()}), "1")
	_, _ = w.Publish(ctx, catEv, "2")
	_, _ = w.Publish(ctx, events.NewHealthChanged(time.Now(), "default", "alpha", "unknown", "healthy", true, ""), "3")

	e, err := edge.New(log, &edge.Options{Mode: edge.ModeOptimizer, Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ectx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error)
	go func() { done <- e.Run(ectx) }()
	for !e.Ready() {
		time.Sleep(10 * time.Millisecond)
	}

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: e.MCPURL()}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	listed, _ := cs.ListTools(ctx, nil)
	for _, t := range listed.Tools {
		fmt.Println("advertised:", t.Name)
	}
	found, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "find_tool", Arguments: map[string]any{"query": "add two numbers", "limit": 1}})
	best := found.StructuredContent.(map[string]any)["tools"].([]any)[0].(map[string]any)["name"].(string)
	fmt.Println("found:", best)
	res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool",
		Arguments: map[string]any{"tool_name": best, "arguments": map[string]any{"a": 2, "b": 3}}})
	fmt.Println("call_tool:", res.Content[0].(*mcp.TextContent).Text)
	cs.Close()
	stop()
	fmt.Println("run:", <-done)
	// Output:
	// advertised: call_tool
	// advertised: find_tool
	// found: alpha_add
	// call_tool: 5
	// run: <nil>
}
