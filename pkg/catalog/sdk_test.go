package catalog

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestValidateToolAgreesWithGoSDK feeds every case with a readable schema to
// go-sdk's Server.AddTool: what ValidateTool accepts must not panic, and the
// schema faults it reports must be the ones the SDK panics on.
func TestValidateToolAgreesWithGoSDK(t *testing.T) {
	handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil }
	for _, tt := range toolCases {
		var def struct {
			Name         string          `json:"name"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		}
		if json.Unmarshal([]byte(tt.def), &def) != nil || len(tt.def) > MaxDefinitionSize {
			continue
		}
		if tt.wantErr != "" && !tt.sdkPanics {
			continue // a rule of ours beyond the SDK's (name, output schema type, ...)
		}
		t.Run(tt.name, func(t *testing.T) {
			tool := &mcp.Tool{Name: def.Name}
			if def.InputSchema != nil {
				tool.InputSchema = def.InputSchema
			}
			if def.OutputSchema != nil && string(def.OutputSchema) != "null" {
				tool.OutputSchema = def.OutputSchema
			}
			s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "v"}, nil)
			panicked := func() (p bool) {
				defer func() { p = recover() != nil }()
				s.AddTool(tool, handler)
				return false
			}()
			if panicked != tt.sdkPanics {
				t.Errorf("AddTool panicked = %v, want %v", panicked, tt.sdkPanics)
			}
		})
	}
}
