package edge

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
// times a direct one. statelessCall answers the plain form itself, as the
// go-sdk would: the header checks of the go-sdk (Mcp-Method, Mcp-Name
// equal to the body's), _meta checked as for a listen request, the call
// run as the shared session's middleware runs it, and the result marked
// with the server's info in its _meta unless it has some and with
// resultType "complete", as the go-sdk marks results of the new protocol. Anything else goes to the go-sdk:
// other methods, batches, members beyond name and arguments. A call's
// Mcp-Param-* headers are checked against its arguments, as the go-sdk
// checks them for its own tools (paramheaders.go).

// statelessCall answers body, a POST of the new protocol, when it is a
// plain tools/call; it reports false, having written nothing, otherwise.
func (e *Edge) statelessCall(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if e.opts.Mode != ModePassthrough || e.opts.paths.goSDKStateless || !fastpath.StatelessCallHeaders(r) {
		return false
	}
	msg, ok := fastpath.ParseStatelessCall(body)
	if !ok || r.Header.Get("Mcp-Name") != msg.Name || e.calls.SpeaksStateless(msg.Name) {
		return false // a backend of the same revision: the go-sdk's path passes input requests
	}
	if e.refuseParamHeaders(w, r, msg.Name, msg.ID, msg.Args) {
		return true
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: msg.Name, Arguments: msg.Args},
		Extra: &mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header}}
	reply, err := e.answerCall(ctx, e.shared, req, lane.Closings(w))
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
		out = append(out, e.implJSON...)
		out = append(append(out, "},"...), resultComplete...)
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
			res.Meta[fastpath.ServerInfoKey] = e.impl
		}
		enc, err := json.Marshal(res)
		if err != nil {
			enc, _ = json.Marshal(&jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encode result: " + err.Error()})
			out = append(append(append(out, `,"error":`...), enc...), '}')
			break
		}
		if !res.NeedsInput() {
			enc = markComplete(enc)
		}
		out = append(append(append(out, `,"result":`...), enc...), '}')
	}
	w.Header().Set("Content-Type", "application/json")
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
