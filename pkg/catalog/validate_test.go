package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

type toolCase struct {
	name     string
	def      string
	wantName string
	wantErr  string // substring of the reason; empty for a valid tool
	// sdkPanics: whether go-sdk's Server.AddTool panics on this definition
	// (only meaningful for definitions with a readable name and schema).
	sdkPanics bool
}

var toolCases = []toolCase{
	{name: "minimal", def: `{"name":"echo","inputSchema":{"type":"object"}}`, wantName: "echo"},
	{name: "full", def: `{"name":"a.b-c_D9","title":"T","description":"d","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}},"outputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},"execution":{},"_meta":{}}`, wantName: "a.b-c_D9"},
	{name: "null outputSchema", def: `{"name":"n","inputSchema":{"type":"object"},"outputSchema":null}`, wantName: "n"},
	{name: "name 128 bytes", def: `{"name":"` + strings.Repeat("x", 128) + `","inputSchema":{"type":"object"}}`, wantName: strings.Repeat("x", 128)},
	{name: "valid header annotation", def: `{"name":"h","inputSchema":{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"Region"}}}}`, wantName: "h"},
	{name: "header on multi-type property is not checked (as go-sdk)", def: `{"name":"h","inputSchema":{"type":"object","properties":{"r":{"type":["string","null"],"x-mcp-header":"a b"}}}}`, wantName: "h"},

	{name: "not JSON", def: `{"name":"x"`, wantErr: "not valid JSON"},
	{name: "array", def: `[]`, wantErr: "not a JSON object"},
	{name: "no name", def: `{"inputSchema":{"type":"object"}}`, wantErr: "name: missing"},
	{name: "name not string", def: `{"name":7,"inputSchema":{"type":"object"}}`, wantErr: "name: not a string"},
	{name: "empty name", def: `{"name":"","inputSchema":{"type":"object"}}`, wantErr: "name is empty"},
	{name: "name 129 bytes", def: `{"name":"` + strings.Repeat("x", 129) + `","inputSchema":{"type":"object"}}`, wantName: strings.Repeat("x", 129), wantErr: "limit 128"},
	{name: "name with space", def: `{"name":"a b","inputSchema":{"type":"object"}}`, wantName: "a b", wantErr: "want [A-Za-z0-9_.-]"},
	{name: "name with slash", def: `{"name":"a/b","inputSchema":{"type":"object"}}`, wantName: "a/b", wantErr: "want [A-Za-z0-9_.-]"},
	{name: "duplicate name member", def: `{"name":"a","name":"b","inputSchema":{"type":"object"}}`, wantErr: `duplicate member "name"`},
	{name: "no inputSchema", def: `{"name":"x"}`, wantName: "x", wantErr: "inputSchema: missing", sdkPanics: true},
	{name: "inputSchema null", def: `{"name":"x","inputSchema":null}`, wantName: "x", wantErr: "inputSchema: not a JSON object", sdkPanics: true},
	{name: "inputSchema array", def: `{"name":"x","inputSchema":[]}`, wantName: "x", wantErr: "inputSchema: not a JSON object", sdkPanics: true},
	{name: "inputSchema without type", def: `{"name":"x","inputSchema":{"properties":{}}}`, wantName: "x", wantErr: "inputSchema: type: missing", sdkPanics: true},
	{name: "inputSchema type string", def: `{"name":"x","inputSchema":{"type":"string"}}`, wantName: "x", wantErr: `inputSchema: type is "string"`, sdkPanics: true},
	{name: "inputSchema type list", def: `{"name":"x","inputSchema":{"type":["object"]}}`, wantName: "x", wantErr: "inputSchema: type: not a string", sdkPanics: true},
	{name: "outputSchema type array", def: `{"name":"x","inputSchema":{"type":"object"},"outputSchema":{"type":"array"}}`, wantName: "x", wantErr: `outputSchema: type is "array"`},
	{name: "header on object property", def: `{"name":"x","inputSchema":{"type":"object","properties":{"o":{"type":"object","x-mcp-header":"O"}}}}`, wantName: "x", wantErr: "x-mcp-header on type", sdkPanics: true},
	{name: "header empty", def: `{"name":"x","inputSchema":{"type":"object","properties":{"o":{"type":"string","x-mcp-header":""}}}}`, wantName: "x", wantErr: "non-empty string", sdkPanics: true},
	{name: "header bad char", def: `{"name":"x","inputSchema":{"type":"object","properties":{"o":{"type":"string","x-mcp-header":"a:b"}}}}`, wantName: "x", wantErr: "invalid character", sdkPanics: true},
	{name: "header duplicate nested", def: `{"name":"x","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"H"},"n":{"type":"object","properties":{"b":{"type":"integer","x-mcp-header":"h"}}}}}}`, wantName: "x", wantErr: "duplicate x-mcp-header", sdkPanics: true},
	{name: "header member in another case is no header (as go-sdk)", def: `{"name":"h","inputSchema":{"type":"object","properties":{"o":{"type":"object","X-Mcp-Header":"O"}}}}`, wantName: "h"},
	{name: "properties in another case are not looked into (as go-sdk)", def: `{"name":"h","inputSchema":{"type":"object","Properties":{"o":{"type":"object","x-mcp-header":"O"}}}}`, wantName: "h"},
	{name: "header member name escaped", def: `{"name":"x","inputSchema":{"type":"object","properties":{"o":{"type":"object","x-mcp-\u0068eader":"O"}}}}`, wantName: "x", wantErr: "x-mcp-header on type", sdkPanics: true},
	{name: "inputSchema deeper than the go-sdk decodes", def: `{"name":"x","inputSchema":{"type":"object","pad":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}}`, wantName: "x", wantErr: "inputSchema: nests deeper than 1000", sdkPanics: true},
	{name: "inputSchema as deep as the go-sdk decodes", def: `{"name":"h","inputSchema":{"type":"object","pad":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}}`, wantName: "h"},
	{name: "outputSchema deeper than the go-sdk decodes", def: `{"name":"x","inputSchema":{"type":"object"},"outputSchema":{"type":"object","pad":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}}`, wantName: "x", wantErr: "outputSchema: nests deeper than 1000", sdkPanics: true},
	{name: "invalid UTF-8 in description", def: "{\"name\":\"x\",\"description\":\"\xc3\",\"inputSchema\":{\"type\":\"object\"}}", wantName: "x", wantErr: "description: canonicalize"},
	{name: "too large", def: `{"name":"big","inputSchema":{"type":"object"},"description":"` + strings.Repeat("a", MaxDefinitionSize) + `"}`, wantErr: "limit 262144"},
}

func TestValidateTool(t *testing.T) {
	for _, tt := range toolCases {
		t.Run(tt.name, func(t *testing.T) {
			name, err := ValidateTool(json.RawMessage(tt.def))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateTool: %v", err)
				}
				if name != tt.wantName {
					t.Errorf("name = %q, want %q", name, tt.wantName)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidateTool succeeded, want error containing %q", tt.wantErr)
			}
			if !errors.Is(err, ErrInvalidTool) {
				t.Errorf("errors.Is(%v, ErrInvalidTool) = false", err)
			}
			var ite *InvalidToolError
			if !errors.As(err, &ite) {
				t.Fatalf("error %T is not *InvalidToolError", err)
			}
			if !strings.Contains(ite.Reason, tt.wantErr) {
				t.Errorf("reason %q does not contain %q", ite.Reason, tt.wantErr)
			}
			if ite.Name != tt.wantName || name != tt.wantName {
				t.Errorf("names = %q, %q, want %q", ite.Name, name, tt.wantName)
			}
			if want := fmt.Sprintf("validate tool %q: ", tt.wantName); !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error %q does not start with %q", err, want)
			}
		})
	}
}

func TestFilterTools(t *testing.T) {
	in := raws(
		`{"name":"a","description":"first","inputSchema":{"type":"object"}}`,
		`{"name":"bad","inputSchema":{"type":"string"}}`,
		`{"name":"b","inputSchema":{"type":"object"}}`,
		`{"name":"a","description":"second","inputSchema":{"type":"object"}}`,
	)
	valid, invalid := FilterTools(in)
	if len(valid) != 2 || string(valid[0]) != string(in[0]) || string(valid[1]) != string(in[2]) {
		t.Errorf("valid = %s, want first a and b", valid)
	}
	want := []InvalidToolError{
		{Name: "bad", Reason: `inputSchema: type is "string", want "object"`},
		{Name: "a", Reason: "duplicate name, first definition kept"},
	}
	if fmt.Sprint(invalid) != fmt.Sprint(want) {
		t.Errorf("invalid = %+v, want %+v", invalid, want)
	}
}

func TestValidateResourceAndPrompt(t *testing.T) {
	resources := []struct{ def, uri, wantErr string }{
		{`{"uri":"file:///a.txt","name":"a","mimeType":"text/plain"}`, "file:///a.txt", ""},
		{`{"name":"a"}`, "", "uri: missing or empty"},
		{`{"uri":"","name":"a"}`, "", "uri: missing or empty"},
		{`{"uri":5,"name":"a"}`, "", "uri: not a string"},
		{`{"uri":"file:///a"}`, "file:///a", "name: missing or empty"},
		{`{"uri":"http://[::1","name":"a"}`, "http://[::1", "uri: parse"},
		{`"file:///a"`, "", "not a JSON object"},
	}
	for _, tt := range resources {
		uri, err := ValidateResource(json.RawMessage(tt.def))
		if uri != tt.uri {
			t.Errorf("ValidateResource(%s) uri = %q, want %q", tt.def, uri, tt.uri)
		}
		checkInvalid(t, tt.def, err, tt.wantErr, ErrInvalidResource)
	}
	prompts := []struct{ def, name, wantErr string }{
		{`{"name":"greet","arguments":[{"name":"who","required":true}]}`, "greet", ""},
		{`{"description":"x"}`, "", "name: missing or empty"},
		{`{"name":""}`, "", "name: missing or empty"},
		{`{"name":"p","name":"q"}`, "", `duplicate member "name"`},
		{`{"name":"p","arguments":[{"a":1,"a":2}]}`, "p", "canonicalize"},
	}
	for _, tt := range prompts {
		name, err := ValidatePrompt(json.RawMessage(tt.def))
		if name != tt.name {
			t.Errorf("ValidatePrompt(%s) name = %q, want %q", tt.def, name, tt.name)
		}
		checkInvalid(t, tt.def, err, tt.wantErr, ErrInvalidPrompt)
	}
}

func checkInvalid(t *testing.T, def string, err error, wantErr string, sentinel error) {
	t.Helper()
	switch {
	case wantErr == "" && err != nil:
		t.Errorf("validate %s: %v", def, err)
	case wantErr != "" && err == nil:
		t.Errorf("validate %s succeeded, want %q", def, wantErr)
	case wantErr != "" && (!errors.Is(err, sentinel) || !strings.Contains(err.Error(), wantErr)):
		t.Errorf("validate %s: error %v, want %v containing %q", def, err, sentinel, wantErr)
	}
}

func TestFilterResourcesAndPrompts(t *testing.T) {
	valid, invalid := FilterResources(raws(
		`{"uri":"u:1","name":"one"}`, `{"uri":"u:1","name":"again"}`, `{"name":"nouri"}`, `{"uri":"u:2","name":"two"}`))
	if len(valid) != 2 || len(invalid) != 2 || invalid[0].URI != "u:1" || invalid[1].URI != "" {
		t.Errorf("FilterResources = %s, %+v", valid, invalid)
	}
	pv, pi := FilterPrompts(raws(`{"name":"p"}`, `{"name":"p","description":"2"}`, `{"name":"q"}`))
	if len(pv) != 2 || len(pi) != 1 || pi[0].Name != "p" || !strings.Contains(pi[0].Reason, "duplicate") {
		t.Errorf("FilterPrompts = %s, %+v", pv, pi)
	}
}
