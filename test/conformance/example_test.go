package conformance_test

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/test/conformance"
)

// The backend serves the suite's tools under their own names; an edge
// that prefixes names gets them without "test_".
func Example() {
	b := conformance.New(nil)
	if err := b.Start("127.0.0.1:0"); err != nil {
		panic(err)
	}
	defer b.Stop()
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "example"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b.URL(), MaxRetries: -1}, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output: This is a simple text response for testing.
}
