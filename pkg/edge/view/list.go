package view

import (
	"encoding/base64"
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pageSize is the most items in one list page (the go-sdk's default).
const pageSize = 1000

func ListTools(sv *Served, r *mcp.ListToolsRequest) (*mcp.ListToolsResult, error) {
	var cursor string
	if r.Params != nil {
		cursor = r.Params.Cursor
	}
	page, nextCursor, err := Paginate(sv.ToolList, cursor, func(t *mcp.Tool) string { return t.Name })
	if err != nil {
		return nil, err
	}
	return &mcp.ListToolsResult{Tools: page, NextCursor: nextCursor}, nil
}

func ListPrompts(sv *Served, r *mcp.ListPromptsRequest) (*mcp.ListPromptsResult, error) {
	var cursor string
	if r.Params != nil {
		cursor = r.Params.Cursor
	}
	page, nextCursor, err := Paginate(sv.PromptList, cursor, func(p *mcp.Prompt) string { return p.Name })
	if err != nil {
		return nil, err
	}
	return &mcp.ListPromptsResult{Prompts: page, NextCursor: nextCursor}, nil
}

func ListResources(sv *Served, r *mcp.ListResourcesRequest) (*mcp.ListResourcesResult, error) {
	var cursor string
	if r.Params != nil {
		cursor = r.Params.Cursor
	}
	page, nextCursor, err := Paginate(sv.ResourceList, cursor, func(r *mcp.Resource) string { return r.URI })
	if err != nil {
		return nil, err
	}
	return &mcp.ListResourcesResult{Resources: page, NextCursor: nextCursor}, nil
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
