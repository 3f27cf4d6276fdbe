package edge

import (
	"context"
	"encoding/base64"
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pageSize is the most items in one list page (the go-sdk's default).
const pageSize = 1000

// receiving answers a session's lists from its applied served value and
// routes its calls by the edge's current view; it records the negotiated
// protocol version. Everything else goes to the go-sdk.
func (e *Edge) receiving(s *session) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if res, handled, err := e.optimizer(ctx, s, req); handled {
				return res, err
			}
			switch r := req.(type) {
			case *mcp.ListToolsRequest:
				return listTools(s.served(), r)
			case *mcp.ListPromptsRequest:
				return listPrompts(s.served(), r)
			case *mcp.ListResourcesRequest:
				return listResources(s.served(), r)
			case *mcp.CallToolRequest:
				return result(e.callTool(ctx, r))
			case *mcp.GetPromptRequest:
				return result(e.getPrompt(ctx, r))
			case *mcp.ReadResourceRequest:
				return result(e.readResource(ctx, r))
			}
			res, err := next(ctx, method, req)
			if ir, ok := res.(*mcp.InitializeResult); ok && err == nil {
				v := ir.ProtocolVersion
				s.protocol.Store(&v)
			}
			if method == "notifications/initialized" && err == nil {
				s.flags.Or(flagInitialized) // calls may take Edge.fastCall now
			}
			return res, err
		}
	}
}

func listTools(sv *served, r *mcp.ListToolsRequest) (*mcp.ListToolsResult, error) {
	var cursor string
	if r.Params != nil {
		cursor = r.Params.Cursor
	}
	page, nextCursor, err := paginate(sv.toolList, cursor, func(t *mcp.Tool) string { return t.Name })
	if err != nil {
		return nil, err
	}
	return &mcp.ListToolsResult{Tools: page, NextCursor: nextCursor}, nil
}

func listPrompts(sv *served, r *mcp.ListPromptsRequest) (*mcp.ListPromptsResult, error) {
	var cursor string
	if r.Params != nil {
		cursor = r.Params.Cursor
	}
	page, nextCursor, err := paginate(sv.promptList, cursor, func(p *mcp.Prompt) string { return p.Name })
	if err != nil {
		return nil, err
	}
	return &mcp.ListPromptsResult{Prompts: page, NextCursor: nextCursor}, nil
}

func listResources(sv *served, r *mcp.ListResourcesRequest) (*mcp.ListResourcesResult, error) {
	var cursor string
	if r.Params != nil {
		cursor = r.Params.Cursor
	}
	page, nextCursor, err := paginate(sv.resList, cursor, func(r *mcp.Resource) string { return r.URI })
	if err != nil {
		return nil, err
	}
	return &mcp.ListResourcesResult{Resources: page, NextCursor: nextCursor}, nil
}

// paginate returns the page of the sorted list after cursor. A cursor is
// the base64url of the last key of the previous page (keyset pagination:
// stable while the list changes, like the go-sdk's).
func paginate[T any](list []T, cursor string, key func(T) string) ([]T, string, error) {
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

// result turns a typed result into an mcp.Result that is nil on error.
func result[R mcp.Result](res R, err error) (mcp.Result, error) {
	if err != nil {
		return nil, err
	}
	return res, nil
}
