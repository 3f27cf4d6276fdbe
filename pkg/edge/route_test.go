package edge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Prompts and resources are served prefixed and routed to their backend.
func TestPromptsAndResourcesPassThrough(t *testing.T) {
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			f := newFleet(t)
			b := startBackend(t, "alpha", nil)
			f.healthyBackend("default", b)
			e := startEdge(t, f, nil)
			c := connect(t, e.MCPURL(), v.version)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			prompts, err := c.cs.ListPrompts(ctx, nil)
			if err != nil || len(prompts.Prompts) != 1 || prompts.Prompts[0].Name != "alpha_greet" {
				t.Fatalf("prompts: %v %+v", err, prompts)
			}
			got, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "alpha_greet"})
			if err != nil || got.Messages[0].Content.(*mcp.TextContent).Text != "hello from alpha" {
				t.Fatalf("get prompt: %v %+v", err, got)
			}
			res, err := c.cs.ListResources(ctx, nil)
			if err != nil || len(res.Resources) != 1 || res.Resources[0].Name != "alpha_readme" || res.Resources[0].URI != "demo://alpha/readme" {
				t.Fatalf("resources: %v %+v", err, res)
			}
			read, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://alpha/readme"})
			if err != nil || read.Contents[0].Text != "demo backend alpha" {
				t.Fatalf("read resource: %v %+v", err, read)
			}
			if _, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "beta_greet"}); err == nil {
				t.Fatal("unknown prompt: no error")
			}
		})
	}
}

// A restarted backend forgets the pooled session; the next call opens a
// new one transparently.
func TestBackendRestartReconnects(t *testing.T) {
	f := newFleet(t)
	b := startBackend(t, "alpha", nil)
	f.healthyBackend("default", b)
	e := startEdge(t, f, nil)
	c := connect(t, e.MCPURL(), "2025-11-25")
	for i := range 3 {
		if got := text(c.call(t, "alpha_echo", map[string]any{"text": i})); got != fmt.Sprintf("alpha: %d", i) {
			t.Fatalf("call %d: %q", i, got)
		}
		if err := b.Restart(); err != nil {
			t.Fatal(err)
		}
	}
}

// A call cut short by its deadline leaves the pooled session usable.
func TestCallTimeout(t *testing.T) {
	f := newFleet(t)
	b := startBackend(t, "alpha", nil)
	f.healthyBackend("default", b)
	e := startEdge(t, f, &Options{CallTimeout: 200 * time.Millisecond})
	c := connect(t, e.MCPURL(), "2025-11-25")
	b.SetHang(true)
	res := c.call(t, "alpha_echo", map[string]any{"text": "slow"})
	if !res.IsError {
		t.Fatalf("hung backend: %+v", res)
	}
	b.SetHang(false)
	if got := text(c.call(t, "alpha_echo", map[string]any{"text": "fast"})); got != "alpha: fast" {
		t.Fatalf("after timeout: %q", got)
	}
}

// An unknown prompt is invalid params, as a go-sdk server answers it; a
// request without a session id that is not initialize gets 400.
func TestUnknownPromptAndSessionlessRequest(t *testing.T) {
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	e := startEdge(t, f, nil)
	c := connect(t, e.MCPURL(), "2025-11-25")
	_, err := c.cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "nope_prompt"})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("unknown prompt: %v, want JSON-RPC error %d", err, jsonrpc.CodeInvalidParams)
	}
	res := postWithToken(t, e.MCPURL(), "", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("tools/list without a session: %d, want 400", res.StatusCode)
	}
	if res := postWithToken(t, e.MCPURL(), "", "", initBody); res.StatusCode != http.StatusOK {
		t.Fatalf("initialize: %d", res.StatusCode)
	}
}
