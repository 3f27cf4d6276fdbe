package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzValidateTool validates arbitrary bytes as a backend's tool
// definition: it never panics, refuses with an *InvalidToolError, and
// refuses anything over MaxDefinitionSize. A tool it accepts is JSON with
// the name encoding/json reads (matched exactly), valid and the same after
// Rename, and a go-sdk Server adds it without panicking. The same bytes
// given to ValidateResource and ValidatePrompt do not panic either and are
// refused with their errors.
func FuzzValidateTool(f *testing.F) {
	for _, tc := range toolCases {
		if len(tc.def) <= 4<<10 {
			f.Add([]byte(tc.def))
		}
	}
	for _, s := range []string{
		`{"name":"r","inputSchema":{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"boolean","x-mcp-header":"B"}}},"c":{"type":"integer","x-mcp-header":"C"}}}}`,
		`{"name":"\u0065cho","inputSchema":{"type":"\u006fbject"},"description":"\ud83d\ude00 \u2028"}`,
		`{"name":"n","inputSchema":{"type":"object","x":1e400,"y":-0.0e-0}}`,
		`{"name":"n","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A","properties":{"b":{"type":"string","x-mcp-header":"a"}}}}}}`,
		`{"name":"n","Name":"m","inputSchema":{"type":"object"}}`,
		`{"uri":"file:///x","name":"res"}`,
		`{"name":"p","arguments":[{"name":"a"}]}`,
		`{"name":"d","inputSchema":{"type":"object","pad":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}}`,
		`{"name":"d","inputSchema":` + strings.Repeat(`{"type":"object","properties":{"p":`, 400) + `{}` + strings.Repeat("}}", 400) + `}`,
	} {
		f.Add([]byte(s))
	}
	handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil }
	f.Fuzz(func(t *testing.T, raw []byte) {
		var ie *InvalidToolError
		if _, err := ValidateResource(raw); err != nil && !errors.Is(err, ErrInvalidResource) {
			t.Fatalf("resource refused with %v", err)
		}
		if _, err := ValidatePrompt(raw); err != nil && !errors.Is(err, ErrInvalidPrompt) {
			t.Fatalf("prompt refused with %v", err)
		}
		name, err := ValidateTool(raw)
		if err != nil {
			if !errors.As(err, &ie) || !errors.Is(err, ErrInvalidTool) {
				t.Fatalf("refused with %T %v", err, err)
			}
			return
		}
		if len(raw) > MaxDefinitionSize {
			t.Fatalf("took %d bytes, limit %d", len(raw), MaxDefinitionSize)
		}
		if !json.Valid(raw) || ValidateName(name) != nil {
			t.Fatalf("took %q, name %q", raw, name)
		}
		var def map[string]json.RawMessage
		if err := json.Unmarshal(raw, &def); err != nil {
			t.Fatalf("took %q: %v", raw, err)
		}
		var want string
		if err := json.Unmarshal(def["name"], &want); err != nil || want != name {
			t.Fatalf("name %q, encoding/json %q (%v)", name, want, err)
		}
		for _, to := range []string{name, "renamed.tool_1"} {
			renamed, err := Rename(raw, to)
			if err != nil {
				t.Fatalf("rename %q to %q: %v", raw, to, err)
			}
			if got, err := ValidateTool(renamed); err != nil || got != to {
				t.Fatalf("renamed %q: %q, %v", renamed, got, err)
			}
		}
		tool := &mcp.Tool{Name: name, InputSchema: def["inputSchema"]}
		if out := def["outputSchema"]; out != nil && string(out) != "null" {
			tool.OutputSchema = out
		}
		s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "v"}, nil)
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("took %q; the go-sdk's AddTool panics: %v", raw, p)
				}
			}()
			s.AddTool(tool, handler)
		}()
	})
}

// FuzzValidateResourceTemplate: a template ValidateResourceTemplate takes
// is bounded, and matching any URI against it neither panics nor loops.
func FuzzValidateResourceTemplate(f *testing.F) {
	for _, s := range []string{`{"uriTemplate":"res://items/{id}","name":"item"}`, `{"uriTemplate":"{+x}{/y*}{?a,b}","name":"n"}`,
		`{"uriTemplate":"res://{","name":"bad"}`, `{"uriTemplate":"a","name":""}`} {
		f.Add([]byte(s), "res://items/42")
	}
	f.Fuzz(func(t *testing.T, data []byte, uri string) {
		tmpl, err := ValidateResourceTemplate(data)
		if err != nil {
			return
		}
		if len(tmpl) > MaxURITemplate {
			t.Fatalf("template of %d bytes taken", len(tmpl))
		}
		te := TemplateEntry{URITemplate: tmpl}
		_ = te.Matches(uri)
	})
}
