package stdio

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
)

// The test binary is also the stdio MCP server of these tests (and a host
// that runs one, for the orphan test): TestMain runs it as such when
// FLEETGATE_STDIO_HELPER says so.
func TestMain(m *testing.M) {
	switch os.Getenv("FLEETGATE_STDIO_HELPER") {
	case "server":
		helperServer()
		os.Exit(0)
	case "host":
		helperHost()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helperServer serves tools pid, env and crash over stdin/stdout. With
// FLEETGATE_STDIO_IGNORE_TERM it ignores SIGTERM and the end of stdin.
func helperServer() {
	if os.Getenv("FLEETGATE_STDIO_IGNORE_TERM") != "" {
		signal.Ignore(syscall.SIGTERM)
	}
	fmt.Fprintln(os.Stderr, "helper server starting")
	s := mcp.NewServer(&mcp.Implementation{Name: "stdio-helper", Version: "1"}, nil)
	text := func(v any) *mcp.CallToolResult {
		b, _ := json.Marshal(v)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "pid"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return text(os.Getpid()), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "env"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return text(os.Environ()), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "args"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return text(os.Args[1:]), nil, nil
	})
	_ = s.Run(context.Background(), &mcp.StdioTransport{})
	if os.Getenv("FLEETGATE_STDIO_IGNORE_TERM") != "" {
		time.Sleep(time.Hour)
	}
}

// helperHost runs one instance of the helper server and prints its pid,
// then waits to be killed.
func helperHost() {
	h := NewHost(helperCommands(), HostOptions{})
	inst, err := h.Instance(Spec{Backend: "orphan", Command: "stubborn"}, nil)
	if err != nil {
		fmt.Println("error", err)
		return
	}
	go inst.Run(context.Background())
	if _, err := inst.Session(context.Background()); err != nil {
		fmt.Println("error", err)
		return
	}
	fmt.Println(inst.Status().PID)
	select {}
}

// helperCommands is an allow-list whose entry "helper" runs the helper
// server, and "stubborn" one that ignores SIGTERM.
func helperCommands() Commands {
	self, _ := os.Executable()
	argv := []string{self, "-test.run=^$"}
	return Commands{
		"helper":   {Argv: argv, Env: map[string]Value{"FLEETGATE_STDIO_HELPER": {Literal: "server"}}},
		"stubborn": {Argv: argv, Env: map[string]Value{"FLEETGATE_STDIO_HELPER": {Literal: "server"}, "FLEETGATE_STDIO_IGNORE_TERM": {Literal: "1"}}},
		"false":    {Argv: []string{"false"}},
	}
}

// testLogger logs to t.
func testLogger(t *testing.T) *zerolog.Logger {
	l := zerolog.New(zerolog.NewTestWriter(t)).With().Timestamp().Logger()
	return &l
}

// callJSON calls tool on cs and decodes its text.
func callJSON(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool string, v any) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), v); err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
}

func hasPrefix(list []string, p string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
