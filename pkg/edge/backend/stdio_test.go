package backend

import (
	"context"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/stdio"
)

// TestMain makes the test binary a stdio MCP server (tool echo) when
// FLEETGATE_STDIO_HELPER says so.
func TestMain(m *testing.M) {
	if os.Getenv("FLEETGATE_STDIO_HELPER") == "server" {
		s := mcp.NewServer(&mcp.Implementation{Name: "stdio-echo", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
		_ = s.Run(context.Background(), &mcp.StdioTransport{})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestStdioBackend: a tools/call to a stdio backend goes to the edge's own
// instance; killed, the call gets an error naming the backend and the
// instance comes back; a command outside the allow-list never runs.
func TestStdioBackend(t *testing.T) {
	self, _ := os.Executable()
	host := stdio.NewHost(stdio.Commands{"echo": {Argv: []string{self, "-test.run=^$"},
		Env: map[string]stdio.Value{"FLEETGATE_STDIO_HELPER": {Literal: "server"}}}},
		stdio.HostOptions{Policy: stdio.Policy{MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}})
	p := NewPool(&http.Client{}, 10*time.Second, 0, nil)
	p.SetStdio(host)
	defer p.CloseAll()
	cfg := events.BackendConfig{Transport: events.TransportStdio, Command: "echo"}
	bad := events.BackendConfig{Transport: events.TransportStdio, Command: "sh"}
	p.Prune(map[string]events.BackendConfig{"files": cfg, "evil": bad})
	ctx := context.Background()
	call := func(backend string, c events.BackendConfig) (string, error) {
		r, err := p.CallTool(ctx, Call{Backend: backend, Config: c, Tool: "echo", Args: []byte(`{"text":"hi"}`)})
		if err != nil {
			return "", err
		}
		return r.Res.Content[0].(*mcp.TextContent).Text, nil
	}
	if got, err := call("files", cfg); err != nil || got != "hi" {
		t.Fatalf("call: %q, %v", got, err)
	}
	if _, err := call("evil", bad); err == nil || !strings.Contains(err.Error(), "evil") || !strings.Contains(err.Error(), "allow-list") {
		t.Fatalf("call to a command outside the allow-list: %v", err)
	}
	var st stdio.Status
	for _, s := range p.StdioStatus() {
		if s.Backend == "files" {
			st = s
		}
	}
	if st.State != "up" || st.PID == 0 {
		t.Fatalf("status %+v (all %+v)", st, p.StdioStatus())
	}
	_ = syscall.Kill(st.PID, syscall.SIGKILL)
	deadline := time.Now().Add(10 * time.Second)
	sawDown := false
	for {
		got, err := call("files", cfg)
		if err == nil && got == "hi" && sawDown {
			break
		}
		if err != nil {
			if !strings.Contains(err.Error(), `"files"`) {
				t.Fatalf("error does not name the backend: %v", err)
			}
			sawDown = true
		}
		if time.Now().After(deadline) {
			t.Fatalf("no restart: %v (down seen %v)", err, sawDown)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, s := range p.StdioStatus() {
		if s.Backend == "files" && (s.Restarts != 1 || s.PID == st.PID) {
			t.Fatalf("after restart %+v", s)
		}
	}
}
