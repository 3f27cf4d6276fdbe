package calls

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/search"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
)

// errInvalidArguments is wrapped by the errors of meta-tool calls whose
// arguments do not fit the tool's input schema.
var errInvalidArguments = errors.New("invalid arguments")

// optimizer answers, in optimizer mode, the requests that differ from
// passthrough: tools/list (the advertised tools) and calls of find_tool
// and call_tool. handled is false for every other request, and for every
// request in passthrough mode. A tools/call of any other exposed name (a
// pinned tool, or one a client remembers) is routed as in passthrough.
//
// rev is the protocol revision of the session (the definitions it is
// given are of that revision).
func (pl *Plane) Optimizer(ctx context.Context, s *session.Session, req mcp.Request, rev string) (res mcp.Result, handled bool, err error) {
	if !pl.o.Optimizer {
		return nil, false, nil
	}
	switch r := req.(type) {
	case *mcp.ListToolsRequest:
		var cursor string
		if r.Params != nil {
			cursor = r.Params.Cursor
		}
		sv := pl.VisibleTo(s.Served().Era(rev), r.GetExtra())
		page, err := view.ToolsPage(sv, sv.Index.Advertised, cursor, rev)
		if err != nil {
			return nil, true, err
		}
		return page, true, nil
	case *mcp.CallToolRequest:
		switch r.Params.Name {
		case view.FindToolName:
			return pl.findTool(s.Served().Era(rev), r.GetExtra(), r.Params.Arguments, rev), true, nil // findsignin.go
		case view.CallToolName:
			st, err := statelessCall(s, r) // era.go
			if err != nil {
				return nil, true, err
			}
			res, err := pl.callMeta(ctx, s, r.GetExtra(), r.Params.Arguments, st)
			return res, true, err
		}
	}
	return nil, false, nil
}

// findTool answers a find_tool call from sv's index: the snapshot loaded
// here serves the whole call, whatever views are swapped in meanwhile.
// The tools found are their definitions at revision rev.
func (pl *Plane) FindTool(sv *view.Served, args json.RawMessage, rev string) *mcp.CallToolResult {
	start := time.Now()
	query, limit, err := parseFindArgs(args)
	if err != nil {
		return toolError(err)
	}
	body, err := sv.Index.FindAt(query, limit, rev)
	if err != nil {
		return toolError(fmt.Errorf("find_tool %q: %w", query, err))
	}
	pl.findSeconds.Observe(time.Since(start).Seconds())
	return &mcp.CallToolResult{StructuredContent: json.RawMessage(body),
		Content: []mcp.Content{&mcp.TextContent{Text: string(body)}}}
}

// parseFindArgs validates find_tool's arguments: "query" a string with
// more than white space; "limit" absent or null (search.DefaultLimit),
// or an integer of at least 1, clamped to search.MaxLimit.
func parseFindArgs(raw json.RawMessage) (query string, limit int, err error) {
	in, err := objectArgs(view.FindToolName, raw)
	if err != nil {
		return "", 0, err
	}
	q, ok := in["query"]
	if !ok || string(q) == "null" {
		return "", 0, fmt.Errorf(`find_tool: %w: "query" is required: a string saying what the tool should do`, errInvalidArguments)
	}
	if err := json.Unmarshal(q, &query); err != nil {
		return "", 0, fmt.Errorf(`find_tool: %w: "query" must be a string, got %s`, errInvalidArguments, q)
	}
	if strings.TrimSpace(query) == "" {
		return "", 0, fmt.Errorf(`find_tool: %w: "query" must not be empty`, errInvalidArguments)
	}
	limit = search.DefaultLimit
	if l, ok := in["limit"]; ok && string(l) != "null" {
		var f float64
		if json.Unmarshal(l, &f) != nil || f != math.Trunc(f) || f < 1 {
			return "", 0, fmt.Errorf(`find_tool: %w: "limit" must be an integer from 1 to %d, got %s`,
				errInvalidArguments, search.MaxLimit, l)
		}
		limit = int(min(f, search.MaxLimit))
	}
	return query, limit, nil
}

// objectArgs decodes a meta-tool's arguments, which must be a JSON object
// (absent arguments are an empty one).
func objectArgs(tool string, raw json.RawMessage) (map[string]json.RawMessage, error) {
	in := map[string]json.RawMessage{}
	if len(raw) == 0 || string(raw) == "null" {
		return in, nil
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("%s: %w: the arguments must be a JSON object: %v", tool, errInvalidArguments, err)
	}
	return in, nil
}

// parseCallArgs validates call_tool's arguments: "tool_name" a non-empty
// string, "arguments" absent, null or an object.
func parseCallArgs(raw json.RawMessage) (name string, args json.RawMessage, err error) {
	in, err := objectArgs(view.CallToolName, raw)
	if err != nil {
		return "", nil, err
	}
	if json.Unmarshal(in["tool_name"], &name) != nil || name == "" {
		return "", nil, fmt.Errorf(`call_tool: %w: "tool_name" is required: the name of a tool find_tool returned`, errInvalidArguments)
	}
	args = in["arguments"]
	if string(args) == "null" {
		args = nil
	}
	if len(args) > 0 {
		var obj map[string]json.RawMessage
		if json.Unmarshal(args, &obj) != nil {
			return "", nil, fmt.Errorf(`call_tool %q: %w: "arguments" must be a JSON object, got %s`, name, errInvalidArguments, args)
		}
	}
	return name, args, nil
}

// callMeta answers a call_tool call: the named tool is called exactly as a
// passthrough tools/call of it would be (Plane.Run: same routing by the
// current view, pool, timeout and metrics). A tool the current view does
// not hold gets an isError result naming it.
func (pl *Plane) callMeta(ctx context.Context, s *session.Session, x *mcp.RequestExtra, raw json.RawMessage, st *backend.Stateless) (*mcp.CallToolResult, error) {
	ident, ti := pl.IdentityOf(x), TokenInfoOf(x)
	name, args, err := parseCallArgs(raw)
	if err != nil {
		return toolError(err), nil
	}
	c := Call{Session: s, Ident: ident, TokenInfo: ti, Name: name, Args: args, Stateless: st}
	pl.Begin()
	defer pl.End()
	start := time.Now()
	if reply, ok := pl.signInCall(ctx, pl.o.View(), c, start); ok { // a sign-in tool (signin.go)
		return reply.Decoded(), nil
	}
	rt, err := pl.Resolve(c)
	if err == nil && rt.Config.Auth.SignIn() && pl.o.SignIns != nil { // not signed in: the sign-in URL
		if reply, need := pl.needSignIn(ctx, c, rt.Tool.Backend, rt.Config.URL, rt.Config.Auth, true); need {
			if pl.o.Trail != nil {
				pl.Audit(c, rt, start, &reply, fmt.Errorf("tool %q: backend %q: %w", c.Name, rt.Tool.Backend, errSignInNeeded))
			}
			return reply.Decoded(), nil
		}
	}
	if err != nil { // unknown, gone, or hidden by the policy: the same answer
		pl.Unknown() // counted, not logged: a client looping on it would flood the log
		pl.o.Log.Debug().Str("tool", name).Msg("call_tool of a tool not in the served view")
		reply := backend.Reply{Res: &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
			Text: fmt.Sprintf("tool %q is not available: no advertisable backend of group %q serves it now (it may have been removed or its backend is unhealthy); use find_tool to search again",
				name, pl.o.Group)}}}}
		if pl.record != nil {
			pl.Audit(c, rt, start, &reply, err)
		}
		return reply.Decoded(), nil
	}
	reply := pl.Forward(ctx, c, rt, nil, start)
	return reply.Decoded(), nil
}

// toolError is the isError result of a meta-tool call that failed.
func toolError(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
}
