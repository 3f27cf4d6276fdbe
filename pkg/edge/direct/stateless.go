package direct

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/calls"
	"github.com/fleetgate/fleetgate/pkg/edge/fastpath"
	"github.com/fleetgate/fleetgate/pkg/edge/lane"
)

// A 2026-07-28 client sends each request on its own, with its protocol
// version, capabilities and info in the request's _meta. The go-sdk's
// stateless handler makes a server session for each and decodes _meta
// with its decoder, which made a tools/call through the edge cost 2.5
// times a direct one. StatelessCall answers the plain form itself, as the
// go-sdk would: the header checks of the go-sdk (Mcp-Method, Mcp-Name
// equal to the body's), _meta checked as for a listen request, the call
// run as the shared session's middleware runs it, and the result marked
// with the server's info in its _meta unless it has some and with
// resultType "complete", as the go-sdk marks results of the new protocol. Anything else goes to the go-sdk:
// other methods, batches, members beyond name and arguments. A call's
// Mcp-Param-* headers are checked against its arguments, as the go-sdk
// checks them for its own tools (refuseParamHeaders).

// StatelessCall answers body, a POST of the new protocol, when it is a
// plain tools/call; it reports false, having written nothing, otherwise.
// ident is the caller's identity as the admission gate decided it.
func (a *Answers) StatelessCall(w http.ResponseWriter, r *http.Request, body []byte, ident string) bool {
	if !a.o.Passthrough || a.o.GoSDKStateless || !fastpath.StatelessCallHeaders(r) {
		return false
	}
	msg, ok := fastpath.ParseStatelessCall(body)
	if !ok || r.Header.Get("Mcp-Name") != msg.Name || msg.Asks || a.o.Calls.SpeaksStateless(msg.Name) {
		// A client that may be asked, or a backend of the same revision:
		// the go-sdk's path holds or passes on input requests.
		return false
	}
	if a.refuseParamHeaders(w, r, ident, msg.Name, msg.ID, msg.Args) {
		return true
	}
	ctx := r.Context()
	if lane.CallCancel(w) == nil { // on a lane, the request's context is the call's own already
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
	}
	reply, err := a.answerCall(ctx, calls.Call{Session: a.o.Shared, Ident: ident, TokenInfo: auth.TokenInfoFromContext(r.Context()),
		Name: msg.Name, Args: msg.Args, Later: lane.Closings(w)}, nil)
	if je := calls.ClientError(reply); je != nil && err == nil {
		err = je // the backend's -32021, passed on as the revision says
	}
	status := http.StatusOK
	out := make([]byte, 0, 256+len(reply.Raw))
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, msg.ID...)
	switch {
	case err != nil:
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) {
			werr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		enc, _ := json.Marshal(werr)
		out = append(append(append(out, `,"error":`...), enc...), '}')
		status = errorStatus(werr.Code)
	case reply.Raw != nil && !reply.HasMeta && len(reply.Raw) > 1 && reply.Raw[0] == '{':
		// The backend's result as it came, its _meta the server's info,
		// marked complete (a plain result has no resultType).
		out = append(out, `,"result":{"_meta":{"`+fastpath.ServerInfoKey+`":`...)
		out = append(out, a.implJSON...)
		out = append(append(out, "},"...), fastpath.ResultComplete...)
		if rest := bytes.TrimSpace(reply.Raw[1:]); len(rest) > 0 && rest[0] != '}' {
			out = append(out, ',')
		}
		out = append(append(out, reply.Raw[1:]...), '}')
	default:
		res := reply.Decoded()
		if res.Meta == nil {
			res.Meta = mcp.Meta{}
		}
		if _, ok := res.Meta[fastpath.ServerInfoKey]; !ok {
			res.Meta[fastpath.ServerInfoKey] = a.o.Impl
		}
		enc, err := json.Marshal(res)
		if err != nil {
			enc, _ = json.Marshal(&jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encode result: " + err.Error()})
			out = append(append(append(out, `,"error":`...), enc...), '}')
			break
		}
		if !res.NeedsInput() {
			enc = fastpath.MarkComplete(enc)
		}
		out = append(append(append(out, `,"result":`...), enc...), '}')
	}
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(status)
	_, _ = w.Write(out)
	return true
}

// errorStatus is the HTTP status of a JSON-RPC error answer of the
// 2026-07-28 revision, as the go-sdk's stateless handler sends it: 404 for
// an unknown method, 400 for invalid params, an unsupported protocol
// version or a missing client capability, 200 otherwise.
func errorStatus(code int64) int {
	switch code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// refuseParamHeaders checks a 2026-07-28 tools/call (body, of JSON-RPC
// id id, of the caller of identity ident) against the Mcp-Param-* headers of r when its tool binds
// arguments to headers; on a mismatch it answers as the go-sdk does (400,
// CodeHeaderMismatch) and reports true.
func (a *Answers) refuseParamHeaders(w http.ResponseWriter, r *http.Request, ident, name string, id, args json.RawMessage) bool {
	bindings := a.o.Calls.ParamBindings(auth.TokenInfoFromContext(r.Context()), ident, name)
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
