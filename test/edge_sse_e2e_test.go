package test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
)

// A backend of the legacy HTTP+SSE transport in the fleet file: the
// controller probes it over SSE and advertises it, its tools reach an
// edge, and a client's tool call, prompt and resource go through the edge
// to it, next to a streamable HTTP backend.
func TestFleetSSEBackend(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			node := startNATS(t)
			alpha := startBackend(t, "alpha", nil)
			legacy := startBackend(t, "legacy", &demobackend.Options{SSE: true})
			interval := 200 * time.Millisecond
			yaml := fmt.Sprintf("groups:\n  - name: default\n    backends:\n"+
				"      - name: alpha\n        url: %s\n"+
				"      - name: legacy\n        url: %s\n        transport: sse\n"+
				"health:\n  interval: %s\n  timeout: %s\n  unhealthy_after: 2\n  debounce: %s\n",
				alpha.URL(), legacy.URL(), interval, interval/2, interval)
			startController(t, node.ClientURL(), "c1", yaml)
			el := followLog(t, node.ClientURL())
			el.waitEvent(t, 0, 20*time.Second, "legacy advertised", healthOf("legacy", true))
			e := startEdge(t, node.ClientURL())
			cl := connectMCP(t, e.MCPURL(), p.version)
			eventually(t, 10*time.Second, "both backends' tools", func() bool {
				tools := cl.tools(t)
				return slices.Contains(tools, "legacy_echo") && slices.Contains(tools, "alpha_echo")
			})

			res, err := cl.call("legacy_echo", map[string]any{"text": "over sse"})
			if err != nil || res.IsError || text(res) != "legacy: over sse" {
				t.Fatalf("legacy_echo: %v %q", err, text(res))
			}
			if res, err := cl.call("alpha_echo", map[string]any{"text": "x"}); err != nil || res.IsError || text(res) != "alpha: x" {
				t.Fatalf("alpha_echo: %v %q", err, text(res))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			got, err := cl.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "legacy_greet"})
			if err != nil || got.Messages[0].Content.(*mcp.TextContent).Text != "hello from legacy" {
				t.Fatalf("get prompt: %v %+v", err, got)
			}
			read, err := cl.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://legacy/readme"})
			if err != nil || read.Contents[0].Text != "demo backend legacy" {
				t.Fatalf("read resource: %v %+v", err, read)
			}
			if n := legacy.Calls(); n != 1 {
				t.Fatalf("legacy served %d tool calls, want 1", n)
			}
		})
	}
}
