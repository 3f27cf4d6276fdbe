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

// An edge serves the tools of the advertisable backends of its group, as
// the event log describes them, and routes calls to them.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, _ := os.MkdirTemp("", "edge-example")
	defer os.RemoveAll(dir)
	node, _ := natsnode.Start(&natsnode.Options{DataDir: dir, Listen: "127.0.0.1:0"})
	defer node.Shutdown()
	nc, _ := nats.Connect(node.ClientURL())
	defer nc.Close()
	js, _ := jetstream.New(nc)

	// The controller's side: a backend, its catalog and its health.
	log, _ := events.OpenLog(ctx, js, nil)
	w, _ := events.NewWriter(ctx, log, "controller")
	be := demobackend.New("alpha", nil)
	_ = be.Start("127.0.0.1:0")
	defer be.Stop()
	echo := `{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}`
	cat, _ := events.NewCatalogChanged(time.Now(), "default", "alpha", &events.Catalog{Tools: []json.RawMessage{json.RawMessage(echo)}})
	_, _ = w.Publish(ctx, events.NewBackendAdded(time.Now(), "default", "alpha", events.BackendConfig{URL: be.URL()}), "1")
	_, _ = w.Publish(ctx, cat, "2")
	_, _ = w.Publish(ctx, events.NewHealthChanged(time.Now(), "default", "alpha", "unknown", "healthy", true, ""), "3")

	// The edge.
	e, err := edge.New(log, &edge.Options{Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0"})
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

	// A client.
	c := mcp.NewClient(&mcp.Implementation{Name: "example"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.MCPURL()}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	tools, _ := cs.ListTools(ctx, nil)
	res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: tools.Tools[0].Name, Arguments: map[string]any{"text": "hi"}})
	fmt.Println(tools.Tools[0].Name, "->", res.Content[0].(*mcp.TextContent).Text)
	cs.Close()
	stop()
	fmt.Println("run:", <-done)
	// Output:
	// alpha_echo -> alpha: hi
	// run: <nil>
}
