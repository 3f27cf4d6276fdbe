package sessionserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestInitializeWithTasks: the tasks capability is added to the
// capabilities the go-sdk encodes, which stay as they were.
func TestInitializeWithTasks(t *testing.T) {
	ir := &mcp.InitializeResult{ProtocolVersion: "2025-11-25", ServerInfo: &mcp.Implementation{Name: "edge", Version: "1"},
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}}
	b, err := json.Marshal(&initializeWithTasks{ir})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		ProtocolVersion string                     `json:"protocolVersion"`
		Capabilities    map[string]json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.ProtocolVersion != "2025-11-25" || string(got.Capabilities["tasks"]) != string(TasksCapability) ||
		string(got.Capabilities["tools"]) != `{"listChanged":true}` {
		t.Fatalf("encoded %s", b)
	}
}

// TestCompleted: results the edge makes from a backend's are marked
// resultType "complete" when encoded; any other result is left as it is.
func TestCompleted(t *testing.T) {
	for _, res := range []mcp.Result{
		&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}},
		&mcp.GetPromptResult{Messages: []*mcp.PromptMessage{}},
		&mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{}},
	} {
		b, err := json.Marshal(completed(res))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), `{"resultType":"complete",`) {
			t.Errorf("%T encoded %s, want it marked", res, b)
		}
	}
	other := &mcp.ListPromptsResult{}
	if completed(other) != mcp.Result(other) {
		t.Error("a list result was wrapped")
	}
}
