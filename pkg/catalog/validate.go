package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/gowebpki/jcs"

	"github.com/fleetgate/fleetgate/pkg/naming"
)

// MaxNameLen is the longest tool name, in bytes, that MCP allows.
const MaxNameLen = naming.MaxNameLen

// MaxDefinitionSize is the largest tool, resource or prompt definition, in
// bytes of JSON as received, that this package accepts.
const MaxDefinitionSize = 256 << 10

// Sentinel errors matched with errors.Is by the typed errors below.
var (
	ErrInvalidTool     = errors.New("invalid tool definition")
	ErrInvalidResource = errors.New("invalid resource definition")
	ErrInvalidPrompt   = errors.New("invalid prompt definition")
)

// InvalidToolError reports why a tool definition is unusable. Name is the
// tool's name when one could be read.
type InvalidToolError struct {
	Name   string
	Reason string
}

func (e *InvalidToolError) Error() string {
	return fmt.Sprintf("validate tool %q: %s", e.Name, e.Reason)
}

// Is reports whether target is ErrInvalidTool.
func (e *InvalidToolError) Is(target error) bool { return target == ErrInvalidTool }

// InvalidResourceError reports why a resource definition is unusable. URI
// is the resource's URI when one could be read.
type InvalidResourceError struct {
	URI    string
	Reason string
}

func (e *InvalidResourceError) Error() string {
	return fmt.Sprintf("validate resource %q: %s", e.URI, e.Reason)
}

// Is reports whether target is ErrInvalidResource.
func (e *InvalidResourceError) Is(target error) bool { return target == ErrInvalidResource }

// InvalidPromptError reports why a prompt definition is unusable. Name is
// the prompt's name when one could be read.
type InvalidPromptError struct {
	Name   string
	Reason string
}

func (e *InvalidPromptError) Error() string {
	return fmt.Sprintf("validate prompt %q: %s", e.Name, e.Reason)
}

// Is reports whether target is ErrInvalidPrompt.
func (e *InvalidPromptError) Is(target error) bool { return target == ErrInvalidPrompt }

// ValidateName reports whether name is a valid MCP tool name: 1 to
// MaxNameLen bytes of [A-Za-z0-9_.-].
func ValidateName(name string) error { return naming.CheckName(name) }

// ValidateTool checks that raw is a tool definition a go-sdk Server can
// serve without panicking and that Digest can project: a JSON object of at
// most MaxDefinitionSize bytes, whose name passes ValidateName, whose
// inputSchema is an object with "type": "object", whose outputSchema, when
// present and not null, is likewise, whose x-mcp-header parameter
// annotations pass the go-sdk's checks, and whose projected members are
// canonicalizable. It returns the tool's name, or an *InvalidToolError.
func ValidateTool(raw json.RawMessage) (name string, err error) {
	t, err := parseTool(raw)
	if err != nil {
		return t.proj.name, err
	}
	return t.proj.name, nil
}

// tool is a validated tool definition.
type tool struct {
	obj      object
	proj     projection
	bindings []ParamBinding // of its input schema's arguments to headers
}

func parseTool(raw []byte) (tool, error) {
	var t tool
	invalid := func(format string, args ...any) error {
		return &InvalidToolError{Name: t.proj.name, Reason: fmt.Sprintf(format, args...)}
	}
	if len(raw) > MaxDefinitionSize {
		return t, invalid("definition is %d bytes, limit %d", len(raw), MaxDefinitionSize)
	}
	obj, err := parseObject(raw)
	if err != nil {
		return t, invalid("%v", err)
	}
	t.obj = obj
	if name, ok, _ := obj.stringMember("name"); ok {
		t.proj.name = name
	}
	p, err := project(obj)
	if err != nil {
		return t, invalid("%v", err)
	}
	t.proj = p
	if err := ValidateName(p.name); err != nil {
		return t, invalid("%v", err)
	}
	in, ok, _ := obj.get("inputSchema")
	if !ok {
		return t, invalid("inputSchema: missing")
	}
	if err := checkObjectSchema(in); err != nil {
		return t, invalid("inputSchema: %v", err)
	}
	if out, ok, _ := obj.get("outputSchema"); ok && string(out) != "null" {
		if err = checkObjectSchema(out); err != nil {
			return t, invalid("outputSchema: %v", err)
		}
	}
	if t.bindings, err = paramHeaders(in); err != nil {
		return t, invalid("inputSchema: %v", err)
	}
	return t, nil
}

// checkObjectSchema requires schema (valid JSON) to be an object whose
// "type" is the string "object", nested no deeper than the go-sdk decodes
// (its AddTool panics otherwise).
func checkObjectSchema(schema []byte) error {
	if deeperThan(schema, maxSchemaDepth) {
		return fmt.Errorf("nests deeper than %d", maxSchemaDepth)
	}
	obj, err := scanObject(schema)
	if err != nil {
		return err
	}
	typ, ok, err := obj.stringMember("type")
	switch {
	case err != nil:
		return err
	case !ok:
		return errors.New(`type: missing, want "object"`)
	case typ != "object":
		return fmt.Errorf(`type is %q, want "object"`, typ)
	}
	return nil
}

// ValidateResource checks that raw is a resource definition: a JSON object
// of at most MaxDefinitionSize bytes, canonicalizable, with a non-empty
// string uri that parses as a URL and a non-empty string name (MCP requires
// both). It returns the URI, or an *InvalidResourceError.
func ValidateResource(raw json.RawMessage) (uri string, err error) {
	r, err := parseResource(raw)
	return r.key, err
}

func parseResource(raw []byte) (entity, error) {
	r, err := parseEntity(raw, "uri")
	if err != nil {
		return r, &InvalidResourceError{URI: r.key, Reason: err.Error()}
	}
	if _, err := url.Parse(r.key); err != nil {
		return r, &InvalidResourceError{URI: r.key, Reason: fmt.Sprintf("uri: %v", err)}
	}
	if r.name == "" {
		return r, &InvalidResourceError{URI: r.key, Reason: "name: missing or empty"}
	}
	return r, nil
}

// ValidatePrompt checks that raw is a prompt definition: a JSON object of
// at most MaxDefinitionSize bytes, canonicalizable, with a non-empty string
// name. It returns the name, or an *InvalidPromptError.
func ValidatePrompt(raw json.RawMessage) (name string, err error) {
	p, err := parseEntity(raw, "name")
	if err != nil {
		return p.key, &InvalidPromptError{Name: p.key, Reason: err.Error()}
	}
	return p.key, nil
}

// entity is a scanned resource or prompt definition, identified by the
// string member key ("uri" or "name").
type entity struct {
	obj  object
	key  string
	name string
}

func parseEntity(raw []byte, keyMember string) (entity, error) {
	var e entity
	if len(raw) > MaxDefinitionSize {
		return e, fmt.Errorf("definition is %d bytes, limit %d", len(raw), MaxDefinitionSize)
	}
	obj, err := parseObject(raw)
	if err != nil {
		return e, err
	}
	e.obj = obj
	key, ok, err := obj.stringMember(keyMember)
	if err != nil {
		return e, err
	}
	e.key = key
	if !ok || key == "" {
		return e, fmt.Errorf("%s: missing or empty", keyMember)
	}
	if e.name, _, err = obj.stringMember("name"); err != nil {
		return e, err
	}
	if _, err := jcs.Transform(raw); err != nil {
		return e, fmt.Errorf("canonicalize: %w", err)
	}
	return e, nil
}

// FilterTools returns the valid definitions of one backend's tools, in
// their order, and why the others were dropped. Of several definitions
// sharing a name the first is kept and the later ones are reported.
func FilterTools(raw []json.RawMessage) (valid []json.RawMessage, invalid []InvalidToolError) {
	return filter(raw, ValidateTool, func(err error) InvalidToolError {
		return *err.(*InvalidToolError)
	}, func(name string) InvalidToolError {
		return InvalidToolError{Name: name, Reason: "duplicate name, first definition kept"}
	})
}

// FilterResources is FilterTools for resources, identified by URI.
func FilterResources(raw []json.RawMessage) (valid []json.RawMessage, invalid []InvalidResourceError) {
	return filter(raw, ValidateResource, func(err error) InvalidResourceError {
		return *err.(*InvalidResourceError)
	}, func(uri string) InvalidResourceError {
		return InvalidResourceError{URI: uri, Reason: "duplicate uri, first definition kept"}
	})
}

// FilterPrompts is FilterTools for prompts.
func FilterPrompts(raw []json.RawMessage) (valid []json.RawMessage, invalid []InvalidPromptError) {
	return filter(raw, ValidatePrompt, func(err error) InvalidPromptError {
		return *err.(*InvalidPromptError)
	}, func(name string) InvalidPromptError {
		return InvalidPromptError{Name: name, Reason: "duplicate name, first definition kept"}
	})
}

func filter[E any](raw []json.RawMessage, validate func(json.RawMessage) (string, error),
	asE func(error) E, dup func(string) E) (valid []json.RawMessage, invalid []E) {
	seen := make(map[string]bool, len(raw))
	valid = make([]json.RawMessage, 0, len(raw))
	for _, r := range raw {
		id, err := validate(r)
		switch {
		case err != nil:
			invalid = append(invalid, asE(err))
		case seen[id]:
			invalid = append(invalid, dup(id))
		default:
			seen[id] = true
			valid = append(valid, r)
		}
	}
	return valid, invalid
}
