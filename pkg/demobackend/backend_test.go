package demobackend

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestBackendServesAndRestarts(t *testing.T) {
	b := New("alpha", &Options{ExtraTools: 3})
	if err := b.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	list := func() int {
		c := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b.URL(), MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		out, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil || out.Content[0].(*mcp.TextContent).Text != "alpha: hi" {
			t.Fatalf("echo: %v %+v", err, out)
		}
		return len(res.Tools)
	}
	if n := list(); n != 5 {
		t.Fatalf("%d tools, want 5", n)
	}
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	if n := list(); n != 5 {
		t.Fatalf("after restart %d tools, want 5", n)
	}
}
