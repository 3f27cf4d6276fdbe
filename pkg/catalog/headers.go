package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// The go-sdk's Server.AddTool panics when a tool's input schema carries bad
// x-mcp-header parameter annotations (SEP-2243; go-sdk v1.8.0
// mcp/streamable_headers.go, validateParamHeaderAnnotations). This file
// applies the same rules so that such a tool is rejected here instead.

// headerProperty mirrors the go-sdk's headerSchemaProperty: the fields of
// a schema property the x-mcp-header rules look at.
type headerProperty struct {
	Type       string                    `json:"type"`
	XMCPHeader json.RawMessage           `json:"x-mcp-header,omitempty"`
	Properties map[string]headerProperty `json:"properties,omitempty"`
}

// checkParamHeaders applies the go-sdk's x-mcp-header rules to an input
// schema. Like the go-sdk, it checks nothing when the schema's properties do
// not decode into the shape above (for example a property whose type is an
// array), since the go-sdk then skips the check as well.
func checkParamHeaders(schema []byte) error {
	if !bytes.Contains(schema, []byte("x-mcp-header")) {
		return nil
	}
	var s headerProperty
	if err := json.Unmarshal(schema, &s); err != nil || len(s.Properties) == 0 {
		return nil
	}
	return checkHeadersIn(s.Properties, "", make(map[string]bool))
}

func checkHeadersIn(props map[string]headerProperty, prefix string, seen map[string]bool) error {
	// Visit properties in sorted order so that, of several faults, the
	// one reported is always the same.
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		prop := props[name]
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		if prop.XMCPHeader != nil {
			if prop.Type != "string" && prop.Type != "integer" && prop.Type != "boolean" {
				return fmt.Errorf("property %q: x-mcp-header on type %q, want integer, string or boolean", path, prop.Type)
			}
			var header string
			if err := json.Unmarshal(prop.XMCPHeader, &header); err != nil || header == "" {
				return fmt.Errorf("property %q: x-mcp-header must be a non-empty string", path)
			}
			for _, c := range header {
				if !headerTokenChar(c) {
					return fmt.Errorf("property %q: x-mcp-header %q has invalid character %q", path, header, c)
				}
			}
			lower := strings.ToLower(header)
			if seen[lower] {
				return fmt.Errorf("property %q: duplicate x-mcp-header %q (case-insensitive)", path, header)
			}
			seen[lower] = true
		}
		if len(prop.Properties) > 0 {
			if err := checkHeadersIn(prop.Properties, path, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

// headerTokenChar reports whether c is an HTTP token character (RFC 9110
// tchar).
func headerTokenChar(c rune) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.ContainsRune("!#$%&'*+-.^_`|~", c)
}
