package test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkStdioCall: a tools/call to the demo backend run as a stdio
// command, in one run: through an edge process (the edge's own instance,
// the controller probing its own) against a go-sdk client in this process
// running the same command over its command transport.
//
//	go test -run '^$' -bench StdioCall -benchtime 2000x ./test/
func BenchmarkStdioCall(b *testing.B) {
	commands, fleet := stdioFleet(b, "files")
	node := startNATS(b)
	admin := freeAddr(b)
	startProc(b, "controller", exec.Command(binary(b, "controller"), "--config", fleet, "--nats-url", node.ClientURL(), "--id", "bench-ctl",
		"--admin-listen", admin, "--data-dir", b.TempDir(), "--lease-ttl", "1s", "--log-format", "json", "--stdio-commands", commands))
	eventually(b, 30*time.Second, "files advertised", soleBackendAdvertised("http://"+admin))
	edge := startEdgeProc(b, node.ClientURL(), "--stdio-commands", commands)
	ctx := context.Background()
	viaEdge, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: edge}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer viaEdge.Close()
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: exec.Command(binaryOf(b, "demo", "./demo"), "backend", "--name", "files", "--stdio")}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	eventually(b, 20*time.Second, "the edge serves files_echo", func() bool {
		res, err := viaEdge.CallTool(ctx, &mcp.CallToolParams{Name: "files_echo", Arguments: map[string]any{"text": "up"}})
		return err == nil && !res.IsError
	})
	for _, leg := range []struct {
		name string
		cs   *mcp.ClientSession
		tool string
	}{{"direct", direct, "echo"}, {"edge", viaEdge, "files_echo"}} {
		b.Run(leg.name, func(b *testing.B) {
			args := map[string]any{"text": "hi"}
			for range b.N {
				res, err := leg.cs.CallTool(ctx, &mcp.CallToolParams{Name: leg.tool, Arguments: args})
				if err != nil || res.IsError {
					b.Fatalf("%s: %v", leg.tool, err)
				}
			}
		})
	}
}
