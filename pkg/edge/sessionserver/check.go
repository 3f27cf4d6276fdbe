package sessionserver

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/edge/calls"
	"github.com/fleetgate/fleetgate/pkg/edge/fastpath"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
)

// evidence is the receiving middleware, outside receiving, that tells the
// session's evidence and record (Options.Evidence) the initialize it
// accepted and every tools/list page it served (convergence evidence).
func (sv *Servers) evidence(s *session.Session) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "initialize" { // the go-sdk's own params type: match the method
				res, err := next(ctx, method, req)
				if ir, ok := res.(*mcp.InitializeResult); ok && err == nil && s.Kind() == session.KindSession {
					sv.o.Evidence.Initialized(s, req, ir)
				}
				return res, err
			}
			switch r := req.(type) {
			case *mcp.ListToolsRequest:
				res, err := next(ctx, method, req)
				if lr, ok := res.(*view.ListToolsResult); ok && err == nil && s.Kind() != session.KindStateless {
					cursor := ""
					if r.Params != nil {
						cursor = r.Params.Cursor
					}
					sv.o.Evidence.Listed(s, cursor, lr, time.Now())
				}
				return res, err
			}
			return next(ctx, method, req)
		}
	}
}

// A tool's input schema may bind arguments to headers: a property with an
// x-mcp-header member names the header Mcp-Param-<name> that a 2026-07-28
// client sets to the argument's value, so that intermediaries can route on
// it (the catalog finds the bindings: catalog.View.ToolBindings). A go-sdk
// server refuses a tools/call whose headers do not match its body (HTTP
// 400, CodeHeaderMismatch) for the tools it has; the edge's tools are not
// on a go-sdk server, so the edge checks them itself, the same way
// (fastpath.CheckParamHeaders): on its own answers (package direct, with
// the go-sdk's answer), and, for a call the go-sdk decoded, here, on the
// name and arguments the call runs with.

// checkingParamHeaders is the session servers' middleware that refuses a
// 2026-07-28 tools/call the go-sdk decoded whose Mcp-Param-* headers do
// not match the name and arguments it would run with. A refused call is
// not a call: the call trail and the evidence do not see it, as they do
// not see one refused on the edge's own path.
func (sv *Servers) checkingParamHeaders(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if r, ok := req.(*mcp.CallToolRequest); ok {
			if err := sv.paramHeaderMismatch(r); err != nil {
				return nil, err
			}
		}
		return next(ctx, method, req)
	}
}

// paramHeaderMismatch is the Mcp-Param-* check of a call the go-sdk
// decoded (nil for a call of an older protocol), as a JSON-RPC error. A
// call without the request's headers is refused: it cannot be checked.
func (sv *Servers) paramHeaderMismatch(r *mcp.CallToolRequest) error {
	if r.Params == nil {
		return nil
	}
	bindings := sv.o.Calls.ParamBindings(calls.TokenInfoOf(r.Extra), sv.o.Calls.IdentityOf(r.Extra), r.Params.Name)
	if len(bindings) == 0 {
		return nil
	}
	if r.Extra == nil || r.Extra.Header == nil {
		return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: "header mismatch: no request headers to check"}
	}
	if !admission.NewProtocol(r.Extra.Header.Get("Mcp-Protocol-Version")) {
		return nil
	}
	if err := fastpath.CheckParamHeaders(r.Extra.Header, r.Params.Arguments, bindings); err != nil {
		return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: err.Error()}
	}
	return nil
}
