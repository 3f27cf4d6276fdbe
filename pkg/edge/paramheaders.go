package edge

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/fleetgate/fleetgate/pkg/edge/calls"

	goauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/edge/fastpath"
	"github.com/fleetgate/fleetgate/pkg/policy"
)

// A tool's input schema may bind arguments to headers: a property with an
// x-mcp-header member names the header Mcp-Param-<name> that a 2026-07-28
// client sets to the argument's value, so that intermediaries can route on
// it (the catalog finds the bindings: catalog.View.ToolBindings). A go-sdk
// server refuses a tools/call whose headers do not match its body (HTTP
// 400, CodeHeaderMismatch) for the tools it has; the edge's tools are not
// on a go-sdk server, so the edge checks them itself, the same way
// (checkParamHeaders): on its fast path (refuseParamHeaders, with the
// go-sdk's answer), and, for a call the go-sdk decoded, in the session
// servers' outermost middleware (checkingParamHeaders, a JSON-RPC error),
// on the name and arguments the call runs with.

// refuseParamHeaders checks a 2026-07-28 tools/call (body, of JSON-RPC
// id id) against the Mcp-Param-* headers of r when its tool binds
// arguments to headers; on a mismatch it answers as the go-sdk does (400,
// CodeHeaderMismatch) and reports true.
func (e *Edge) refuseParamHeaders(w http.ResponseWriter, r *http.Request, name string, id, args json.RawMessage) bool {
	ident, _ := e.identity(r)
	bindings := e.bindings(goauth.TokenInfoFromContext(r.Context()), ident, name)
	if len(bindings) == 0 {
		return false
	}
	err := fastpath.CheckParamHeaders(r.Header, args, bindings)
	if err == nil {
		return false
	}
	enc, _ := json.Marshal(&jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: err.Error()})
	out := append([]byte(`{"jsonrpc":"2.0"`), `,"id":`...)
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	out = append(append(append(append(out, id...), `,"error":`...), enc...), '}')
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(out)
	return true
}

// checkingParamHeaders is the session servers' outermost middleware: it
// refuses a 2026-07-28 tools/call the go-sdk decoded whose Mcp-Param-*
// headers do not match the name and arguments it would run with. A
// refused call is not a call: the call trail and the evidence do not see
// it, as they do not see one refused on the fast path.
func (e *Edge) checkingParamHeaders(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if r, ok := req.(*mcp.CallToolRequest); ok {
			if err := e.paramHeaderMismatch(r); err != nil {
				return nil, err
			}
		}
		return next(ctx, method, req)
	}
}

// paramHeaderMismatch is checkParamHeaders for a call the go-sdk decoded
// (nil for a call of an older protocol), as a JSON-RPC error. A call
// without the request's headers is refused: it cannot be checked.
func (e *Edge) paramHeaderMismatch(r *mcp.CallToolRequest) error {
	if r.Params == nil {
		return nil
	}
	bindings := e.bindings(calls.TokenInfoOf(r.Extra), e.calls.IdentityOf(r.Extra), r.Params.Name)
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

// bindings are the Mcp-Param-* bindings of the exposed tool name for the
// caller (ti, ident): none for a tool the policy hides from the caller,
// whose call must look like one of an unknown tool, not be checked
// against headers that would name its parameters.
func (e *Edge) bindings(ti *goauth.TokenInfo, ident, name string) []catalog.ParamBinding {
	cur := e.current()
	b := cur.Catalog.ToolBindings(name)
	if len(b) == 0 {
		return nil
	}
	if ok, _ := e.calls.Allowed(cur, ti, ident, policy.KindTool, name); !ok {
		return nil
	}
	return b
}
