package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	sjson "github.com/segmentio/encoding/json"

	"github.com/fleetgate/fleetgate/pkg/mcpwire"
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

// ParamBinding is a tool argument bound to a request header by its input
// schema (x-mcp-header): the argument's path in the call's arguments and
// the header's name, after "Mcp-Param-". A 2026-07-28 client sends the
// header with each call; a server refuses a call whose header does not
// match the argument.
type ParamBinding struct {
	Path   []string
	Header string
}

// maxSchemaDepth is the nesting the go-sdk's decoder takes (deeper JSON
// fails to decode, and the go-sdk then finds no bindings): fleetgate's one
// depth limit.
const maxSchemaDepth = mcpwire.MaxDepth

// paramHeaders applies the go-sdk's x-mcp-header rules to an input schema
// and returns its bindings, in the order of their paths. Like the go-sdk,
// it decodes the schema with member names matched exactly (escapes
// decoded), and checks nothing when the schema's properties do not decode
// into the shape above (for example a property whose type is an array) or
// nest deeper than maxSchemaDepth, since the go-sdk then skips the check
// as well.
func paramHeaders(schema []byte) ([]ParamBinding, error) {
	if !bytes.Contains(schema, []byte("x-mcp-")) && !bytes.Contains(schema, []byte(`\u`)) {
		return nil, nil // no member can be named x-mcp-header
	}
	var s headerProperty
	if deeperThan(schema, maxSchemaDepth) {
		return nil, nil
	}
	if _, err := sjson.Parse(schema, &s, sjson.DontMatchCaseInsensitiveStructFields); err != nil || len(s.Properties) == 0 {
		return nil, nil
	}
	var out []ParamBinding
	err := headersIn(s.Properties, nil, make(map[string]bool), &out)
	return out, err
}

// headersIn checks props (at path) and appends their bindings to out.
func headersIn(props map[string]headerProperty, path []string, seen map[string]bool, out *[]ParamBinding) error {
	// Visit properties in sorted order so that, of several faults, the
	// one reported is always the same.
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		prop := props[name]
		path := append(path, name) // shared below this level; cloned when kept
		if prop.XMCPHeader != nil {
			at := strings.Join(path, ".")
			if prop.Type != "string" && prop.Type != "integer" && prop.Type != "boolean" {
				return fmt.Errorf("property %q: x-mcp-header on type %q, want integer, string or boolean", at, prop.Type)
			}
			var header string
			if err := json.Unmarshal(prop.XMCPHeader, &header); err != nil || header == "" {
				return fmt.Errorf("property %q: x-mcp-header must be a non-empty string", at)
			}
			for _, c := range header {
				if !headerTokenChar(c) {
					return fmt.Errorf("property %q: x-mcp-header %q has invalid character %q", at, header, c)
				}
			}
			lower := strings.ToLower(header)
			if seen[lower] {
				return fmt.Errorf("property %q: duplicate x-mcp-header %q (case-insensitive)", at, header)
			}
			seen[lower] = true
			*out = append(*out, ParamBinding{Path: slices.Clone(path), Header: header})
		}
		if len(prop.Properties) > 0 {
			if err := headersIn(prop.Properties, path, seen, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// deeperThan reports whether JSON data nests objects and arrays deeper
// than limit (as the go-sdk's decoder counts), by the one depth check of
// fleetgate (mcpwire).
func deeperThan(data []byte, limit int) bool {
	return errors.Is(mcpwire.Check(data, limit), mcpwire.ErrTooDeep)
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
