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
	"github.com/valyala/fastjson"
)

// A 2026-07-28 client sends each request on its own, with its protocol
// version, capabilities and info in the request's _meta. The go-sdk's
// stateless handler makes a server session for each and decodes _meta
// with its decoder, which made a tools/call through the edge cost 2.5
// times a direct one. statelessCall answers the plain form itself, as the
// go-sdk would: the header checks of the go-sdk (Mcp-Method, Mcp-Name
// equal to the body's), _meta checked as for a listen request, the call
// run as the shared session's middleware runs it, and the result marked
// with the server's info in its _meta unless it has some, as the go-sdk
// marks results of the new protocol. Anything else goes to the go-sdk:
// other methods, batches, members beyond name and arguments. A call's
// Mcp-Param-* headers are checked against its arguments, as the go-sdk
// checks them for its own tools (paramheaders.go).

// serverInfoKey is the _meta key of the server's info in a result.
const serverInfoKey = "io.modelcontextprotocol/serverInfo"

// statelessCall answers body, a POST of the new protocol, when it is a
// plain tools/call; it reports false, having written nothing, otherwise.
func (e *Edge) statelessCall(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if e.opts.Mode != ModePassthrough || e.goSDKStateless.Load() || !statelessCallHeaders(r) {
		return false
	}
	msg, ok := parseStatelessCall(body)
	if !ok || r.Header.Get("Mcp-Name") != msg.name {
		return false
	}
	if e.refuseParamHeaders(w, r, msg.name, msg.id, msg.args) {
		return true
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: msg.name, Arguments: msg.args},
		Extra: &mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header}}
	reply, err := e.answerCall(ctx, e.shared, req)
	out := make([]byte, 0, 256+len(reply.raw))
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, msg.id...)
	switch {
	case err != nil:
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) {
			werr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		enc, _ := json.Marshal(werr)
		out = append(append(append(out, `,"error":`...), enc...), '}')
	case reply.raw != nil && !reply.hasMeta && len(reply.raw) > 1 && reply.raw[0] == '{':
		// The backend's result as it came, its _meta the server's info.
		out = append(out, `,"result":{"_meta":{"`+serverInfoKey+`":`...)
		out = append(out, e.implJSON...)
		out = append(out, '}')
		if rest := bytes.TrimSpace(reply.raw[1:]); len(rest) > 0 && rest[0] != '}' {
			out = append(out, ',')
		}
		out = append(append(out, reply.raw[1:]...), '}')
	default:
		res := reply.decoded()
		if res.Meta == nil {
			res.Meta = mcp.Meta{}
		}
		if _, ok := res.Meta[serverInfoKey]; !ok {
			res.Meta[serverInfoKey] = e.impl
		}
		enc, err := json.Marshal(res)
		if err != nil {
			enc, _ = json.Marshal(&jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encode result: " + err.Error()})
			out = append(append(append(out, `,"error":`...), enc...), '}')
			break
		}
		out = append(append(append(out, `,"result":`...), enc...), '}')
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
	return true
}

// statelessCallHeaders reports whether the go-sdk would take r's headers
// for a tools/call of the new protocol (as listenHeaders, for another
// method).
func statelessCallHeaders(r *http.Request) bool {
	if r.Header.Get("Mcp-Protocol-Version") != newProtocol || r.Header.Get("Mcp-Method") != "tools/call" ||
		len(r.Header.Values("Last-Event-ID")) > 0 || r.ProtoMajor != 1 {
		return false
	}
	return jsonPostHeaders(r)
}

// parseStatelessCall parses body as a tools/call of the new protocol with
// exactly jsonrpc, id, method and params, and params of _meta (checked as
// the go-sdk checks it), name and, optionally, arguments (an object).
func parseStatelessCall(body []byte) (fastMessage, bool) {
	var m fastMessage
	ok := parseNewRequest(body, "tools/call", newProtocol, func(id json.RawMessage, params *fastjson.Value) bool {
		m.id = id
		ok := true
		params.GetObject().Visit(func(k []byte, v *fastjson.Value) {
			switch string(k) {
			case "_meta":
			case "name":
				ok = ok && v.Type() == fastjson.TypeString
				m.name = string(v.GetStringBytes())
			case "arguments":
				ok = ok && v.Type() == fastjson.TypeObject
				m.args = v.MarshalTo(nil)
			default:
				ok = false
			}
		})
		return ok
	})
	m.method = "tools/call"
	return m, ok && m.name != "" && plainName(m.name) // another name is the go-sdk's, as in parseFastMessage
}
