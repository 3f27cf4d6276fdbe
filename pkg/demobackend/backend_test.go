package demobackend

import (
	"context"
	"encoding/json"
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

// TestBackendNewProtocol: with NewProtocol a 2026-07-28 client keeps its
// protocol (and hears of tool changes on its listen stream), while a
// 2025-11-25 client still gets a session; without it the new client falls
// back to 2025-11-25.
func TestBackendNewProtocol(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, tc := range []struct {
		newProtocol      bool
		asked, want, sid string
	}{
		{true, "", "2026-07-28", ""},
		{true, "2025-11-25", "2025-11-25", "session"},
		{false, "", "2025-11-25", "session"},
	} {
		b := New("alpha", &Options{NewProtocol: tc.newProtocol})
		if err := b.Start("127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		changed := make(chan struct{}, 1)
		c := mcp.NewClient(&mcp.Implementation{Name: "t"}, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				select {
				case changed <- struct{}{}:
				default:
				}
			}})
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b.URL(), MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: tc.asked})
		if err != nil {
			t.Fatal(err)
		}
		if got := cs.InitializeResult().ProtocolVersion; got != tc.want {
			t.Errorf("NewProtocol %v, asked %q: protocol %s, want %s", tc.newProtocol, tc.asked, got, tc.want)
		}
		if hasID := cs.ID() != ""; hasID != (tc.sid != "") {
			t.Errorf("NewProtocol %v, asked %q: session id %q", tc.newProtocol, tc.asked, cs.ID())
		}
		out, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil || out.Content[0].(*mcp.TextContent).Text != "alpha: hi" {
			t.Fatalf("echo: %v %+v", err, out)
		}
		b.AddTool(&mcp.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object"}`)})
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("NewProtocol %v, asked %q: no list_changed", tc.newProtocol, tc.asked)
		}
		cs.Close()
		b.Stop()
	}
}

// Stop ends the MCP sessions of the server with its listener, as a killed
// process does: none is left holding a goroutine across restarts.
func TestBackendStopEndsSessions(t *testing.T) {
	b := New("alpha", nil)
	if err := b.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sessions := func() int {
		n := 0
		for range b.Server().Sessions() {
			n++
		}
		return n
	}
	for range 2 {
		c := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b.URL(), MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if n := sessions(); n != 1 {
			t.Fatalf("%d sessions on the server after one connect, want 1", n)
		}
		if err := b.Restart(); err != nil {
			t.Fatal(err)
		}
		if n := sessions(); n != 0 {
			t.Fatalf("%d sessions outlived a restart, want 0", n)
		}
	}
}
