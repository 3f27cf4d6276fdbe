package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/events"
)

// ErrUnavailable is wrapped by the errors of prompts and resources the
// served view does not hold (tool calls get an isError result instead).
var ErrUnavailable = errors.New("not available on this edge")

// unavailable is the result of a call to a tool the view does not hold.
func (e *Edge) unavailable(name string) *mcp.CallToolResult {
	e.m.unknownCalls.Inc() // counted, not logged: a client looping on it would flood the log
	e.log.Debug().Str("tool", name).Msg("call to a tool not in the served view")
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
		Text: fmt.Sprintf("tool %q is not available: no advertisable backend of group %q serves it now (it may have been removed or its backend is unhealthy); list the tools again",
			name, e.opts.Group)}}}
}

// backendConfig returns the configuration (URL and transport) of an
// advertisable backend.
func (e *Edge) backendConfig(name string) (events.BackendConfig, bool) {
	cfg, ok := (*e.backends.Load())[name]
	return cfg, ok
}

// callTool routes a tools/call to the owning backend under the tool's
// original name.
func (e *Edge) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	r := e.forwardTool(ctx, req.Params.Name, req.Params.Arguments)
	return r.decoded(), nil
}

// forwardTool is callTool for the tool name and raw arguments. A failure
// is an isError result naming the tool.
func (e *Edge) forwardTool(ctx context.Context, name string, args json.RawMessage) toolReply {
	e.inflight.Add(1)
	defer e.inflight.Add(-1)
	entry, ok := e.current().view.Tool(name)
	if !ok {
		noteCallError(ctx, fmt.Errorf("tool %q: %w", name, ErrUnavailable))
		return toolReply{res: e.unavailable(name)}
	}
	cfg, ok := e.backendConfig(entry.Backend)
	if !ok {
		noteCallError(ctx, fmt.Errorf("tool %q: backend %q: %w", name, entry.Backend, ErrUnavailable))
		return toolReply{res: e.unavailable(name)}
	}
	r, err := e.pool.callBackendTool(ctx, entry.Backend, cfg, entry.Original, args)
	if err != nil {
		// err is a *BackendError: its text names the backend and the kind
		// of failure only (never the backend's URL or error body).
		e.log.Warn().Str("tool", name).Str("backend", entry.Backend).Err(err).Msg("tool call failed")
		noteCallError(ctx, err)
		return toolReply{res: &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
			Text: fmt.Sprintf("tool %q: %v", name, err)}}}}
	}
	return r
}

// getPrompt routes prompts/get to the owning backend.
func (e *Edge) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	e.inflight.Add(1)
	defer e.inflight.Add(-1)
	name := req.Params.Name
	entry, ok := e.current().view.Prompt(name)
	cfg, ok2 := e.backendConfig(entry.Backend)
	if !ok || !ok2 {
		e.m.unknownCalls.Inc()
		return nil, fmt.Errorf("prompt %q: %w", name, ErrUnavailable)
	}
	params := &mcp.GetPromptParams{Name: entry.Original, Arguments: req.Params.Arguments}
	return doOn(ctx, e.pool, entry.Backend, cfg, "prompts/get", func(ctx context.Context, cs *mcp.ClientSession) (*mcp.GetPromptResult, error) {
		return cs.GetPrompt(ctx, params)
	})
}

// readResource routes resources/read to the backend owning the URI.
func (e *Edge) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	e.inflight.Add(1)
	defer e.inflight.Add(-1)
	uri := req.Params.URI
	entry, ok := e.current().view.Resource(uri)
	cfg, ok2 := e.backendConfig(entry.Backend)
	if !ok || !ok2 {
		e.m.unknownCalls.Inc()
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return doOn(ctx, e.pool, entry.Backend, cfg, "resources/read", func(ctx context.Context, cs *mcp.ClientSession) (*mcp.ReadResourceResult, error) {
		return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	})
}
