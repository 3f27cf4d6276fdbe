package edge

import (
	"context"
	"fmt"
	"testing"
	"time"

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

// Lists are paged with keyset cursors.
func TestPaginate(t *testing.T) {
	list := make([]string, 2500)
	for i := range list {
		list[i] = fmt.Sprintf("t%04d", i)
	}
	id := func(s string) string { return s }
	var all []string
	cursor := ""
	for pages := 0; ; pages++ {
		page, next, err := paginate(list, cursor, id)
		if err != nil || pages > 3 {
			t.Fatalf("page %d: %v", pages, err)
		}
		all = append(all, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	if fmt.Sprint(all) != fmt.Sprint(list) {
		t.Fatalf("pages do not add up: %d items", len(all))
	}
	if _, _, err := paginate(list, "!!", id); err == nil {
		t.Fatal("bad cursor accepted")
	}
	if page, next, _ := paginate([]string(nil), "", id); page == nil || len(page) != 0 || next != "" {
		t.Fatalf("empty list: %v %q", page, next)
	}
}
