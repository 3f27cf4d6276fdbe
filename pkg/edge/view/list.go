package view

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/catalog"
)

// pageSize is the most items in one list page (the go-sdk's default).
const pageSize = 1000

// The list results of the edge: the go-sdk's (an mcp.Result, whose items
// are the page's go-sdk values) with the page's definitions as the view
// holds them, Defs[i] that of item i, and the protocol revision they are
// served at. They are encoded from Defs (see defs.go); a nil Defs[i] (an
// edge's own tool: the optimizer's meta-tools) is encoded from the go-sdk
// value.

// ListToolsResult is a tools/list result.
type ListToolsResult struct {
	*mcp.ListToolsResult
	Defs []json.RawMessage
	Rev  string
}

func (r *ListToolsResult) MarshalJSON() ([]byte, error) {
	env := *r.ListToolsResult
	env.Tools = nil
	return encodeList(&env, "tools", KindTool, r.Rev, r.Defs, func(i int) any { return r.Tools[i] })
}

// ListPromptsResult is a prompts/list result.
type ListPromptsResult struct {
	*mcp.ListPromptsResult
	Defs []json.RawMessage
	Rev  string
}

func (r *ListPromptsResult) MarshalJSON() ([]byte, error) {
	env := *r.ListPromptsResult
	env.Prompts = nil
	return encodeList(&env, "prompts", KindPrompt, r.Rev, r.Defs, func(i int) any { return r.Prompts[i] })
}

// ListResourcesResult is a resources/list result.
type ListResourcesResult struct {
	*mcp.ListResourcesResult
	Defs []json.RawMessage
	Rev  string
}

func (r *ListResourcesResult) MarshalJSON() ([]byte, error) {
	env := *r.ListResourcesResult
	env.Resources = nil
	return encodeList(&env, "resources", KindResource, r.Rev, r.Defs, func(i int) any { return r.Resources[i] })
}

// ListResourceTemplatesResult is a resources/templates/list result. Its
// ResourceTemplates are left empty: the templates are Defs.
type ListResourceTemplatesResult struct {
	*mcp.ListResourceTemplatesResult
	Defs []json.RawMessage
	Rev  string
}

func (r *ListResourceTemplatesResult) MarshalJSON() ([]byte, error) {
	env := *r.ListResourceTemplatesResult
	env.ResourceTemplates = nil
	return encodeList(&env, "resourceTemplates", KindTemplate, r.Rev, r.Defs, func(int) any { return nil })
}

// ListTools is the page of sv's tools r asks for, served at revision rev.
func ListTools(sv *Served, r *mcp.ListToolsRequest, rev string) (*ListToolsResult, error) {
	var cursor string
	if r.Params != nil {
		cursor = r.Params.Cursor
	}
	return ToolsPage(sv, sv.ToolList, cursor, rev)
}

// ToolsPage is the page of list (sorted by name, tools of sv) after
// cursor, served at revision rev.
func ToolsPage(sv *Served, list []*mcp.Tool, cursor, rev string) (*ListToolsResult, error) {
	page, nextCursor, err := Paginate(list, cursor, func(t *mcp.Tool) string { return t.Name })
	if err != nil {
		return nil, err
	}
	defs := make([]json.RawMessage, len(page))
	for i, t := range page {
		defs[i] = sv.ToolDef(t)
	}
	return &ListToolsResult{ListToolsResult: &mcp.ListToolsResult{Tools: page, NextCursor: nextCursor}, Defs: defs, Rev: rev}, nil
}

// ToolDef is the definition of t, a tool of sv, as the view holds it; nil
// for a tool the view does not hold (the meta-tools).
func (sv *Served) ToolDef(t *mcp.Tool) json.RawMessage {
	if t == FindToolDef || t == CallToolDef {
		return nil
	}
	if te, ok := sv.Catalog.Tool(t.Name); ok {
		return te.Def
	}
	return nil
}

func ListPrompts(sv *Served, r *mcp.ListPromptsRequest, rev string) (*ListPromptsResult, error) {
	var cursor string
	if r.Params != nil {
		cursor = r.Params.Cursor
	}
	page, nextCursor, err := Paginate(sv.PromptList, cursor, func(p *mcp.Prompt) string { return p.Name })
	if err != nil {
		return nil, err
	}
	defs := make([]json.RawMessage, len(page))
	for i, p := range page {
		if pe, ok := sv.Catalog.Prompt(p.Name); ok {
			defs[i] = pe.Def
		}
	}
	return &ListPromptsResult{ListPromptsResult: &mcp.ListPromptsResult{Prompts: page, NextCursor: nextCursor}, Defs: defs, Rev: rev}, nil
}

func ListResources(sv *Served, r *mcp.ListResourcesRequest, rev string) (*ListResourcesResult, error) {
	var cursor string
	if r.Params != nil {
		cursor = r.Params.Cursor
	}
	page, nextCursor, err := Paginate(sv.ResourceList, cursor, func(r *mcp.Resource) string { return r.URI })
	if err != nil {
		return nil, err
	}
	defs := make([]json.RawMessage, len(page))
	for i, res := range page {
		if re, ok := sv.Catalog.Resource(res.URI); ok {
			defs[i] = re.Def
		}
	}
	return &ListResourcesResult{ListResourcesResult: &mcp.ListResourcesResult{Resources: page, NextCursor: nextCursor}, Defs: defs, Rev: rev}, nil
}

// ListTemplates is a resources/templates/list result of templates, in
// their order, on one page.
func ListTemplates(templates []catalog.TemplateEntry, rev string) *ListResourceTemplatesResult {
	defs := make([]json.RawMessage, len(templates))
	for i, t := range templates {
		defs[i] = t.Def
	}
	return &ListResourceTemplatesResult{ListResourceTemplatesResult: &mcp.ListResourceTemplatesResult{ResourceTemplates: []*mcp.ResourceTemplate{}},
		Defs: defs, Rev: rev}
}

// Paginate returns the page of the sorted list after cursor. A cursor is
// the base64url of the last key of the previous page (keyset pagination:
// stable while the list changes, like the go-sdk's).
func Paginate[T any](list []T, cursor string, key func(T) string) ([]T, string, error) {
	start := 0
	if cursor != "" {
		last, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil {
			return nil, "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid cursor %q", cursor)}
		}
		start = sort.Search(len(list), func(i int) bool { return key(list[i]) > string(last) })
	}
	end := min(len(list), start+pageSize)
	page := make([]T, end-start) // never nil: lists are arrays on the wire
	copy(page, list[start:end])
	next := ""
	if end < len(list) {
		next = base64.RawURLEncoding.EncodeToString([]byte(key(list[end-1])))
	}
	return page, next, nil
}
