package edge

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/catalog"
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

// errHeaderMismatch marks a refusal by checkParamHeaders.
var errHeaderMismatch = errors.New("header mismatch")

// checkParamHeaders checks the Mcp-Param-* headers of a 2026-07-28
// tools/call of a tool with bindings against its arguments, as the go-sdk
// checks them: a bound argument present and not null needs its header,
// equal to its value (a string, a boolean or an integer, a string
// possibly in =?base64?...?= form); an absent or null one must have none.
func checkParamHeaders(h http.Header, args json.RawMessage, bindings []catalog.ParamBinding) error {
	root := &argNode{}
	if len(args) > 0 && json.Unmarshal(args, &root.obj) != nil {
		return nil // the go-sdk skips the check for arguments it cannot decode
	}
	for _, b := range bindings {
		full := "Mcp-Param-" + b.Header
		got := h.Get(full)
		arg, ok := root.lookup(b.Path)
		if !ok || string(arg) == "null" {
			if got != "" {
				return fmt.Errorf("%w: unexpected %s header for absent or null parameter %q", errHeaderMismatch, full, strings.Join(b.Path, "."))
			}
			continue
		}
		if got == "" {
			return fmt.Errorf("%w: missing %s header for parameter %q", errHeaderMismatch, full, strings.Join(b.Path, "."))
		}
		decoded, ok := decodeHeaderValue(got)
		if !ok {
			return fmt.Errorf("%w: %s header contains invalid Base64 encoding", errHeaderMismatch, full)
		}
		val := primitiveOf(arg)
		if val == nil {
			return fmt.Errorf("%w: %s header present but body parameter %q is not a primitive type", errHeaderMismatch, full, strings.Join(b.Path, "."))
		}
		if !headerEquals(decoded, val) {
			return fmt.Errorf("%w: %s header value '%s' does not match body value", errHeaderMismatch, full, got)
		}
	}
	return nil
}

// argNode is an object of a call's arguments, decoded when a binding
// first looks into it and then kept: each object is decoded once, however
// many bindings look into it (a lookup per binding that decoded each
// object on its path again cost time cubic in the nesting).
type argNode struct {
	obj      map[string]json.RawMessage // nil: not an object
	children map[string]*argNode
}

// newArgNode decodes raw as an object; the node is empty if it is none.
func newArgNode(raw json.RawMessage) *argNode {
	n := &argNode{}
	if json.Unmarshal(raw, &n.obj) != nil {
		n.obj = nil
	}
	return n
}

// lookup returns the value at path (objects nested).
func (n *argNode) lookup(path []string) (json.RawMessage, bool) {
	for i, part := range path {
		raw, ok := n.obj[part]
		if !ok {
			return nil, false
		}
		if i == len(path)-1 {
			return raw, true
		}
		child := n.children[part]
		if child == nil {
			child = newArgNode(raw)
			if n.children == nil {
				n.children = map[string]*argNode{}
			}
			n.children[part] = child
		}
		n = child
	}
	return nil, false
}

// maxSafeInteger bounds the integers a header may carry (exact in a
// float64).
const maxSafeInteger = 1<<53 - 1

// primitiveOf is a bound argument's value: a string, a bool or an int64
// (an integer in the safe range); nil for any other.
func primitiveOf(raw json.RawMessage) any {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	switch v := v.(type) {
	case string, bool:
		return v
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) || v != math.Trunc(v) || math.Abs(v) > maxSafeInteger {
			return nil
		}
		return int64(v)
	}
	return nil
}

// headerEquals reports whether a (decoded) header value equals a bound
// argument's value.
func headerEquals(header string, val any) bool {
	switch v := val.(type) {
	case int64:
		f, err := strconv.ParseFloat(header, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || math.Abs(f) > maxSafeInteger {
			return false
		}
		return int64(f) == v
	case bool:
		return header == strconv.FormatBool(v)
	case string:
		return header == v
	}
	return false
}

// decodeHeaderValue undoes the =?base64?...?= form of a header value.
func decodeHeaderValue(v string) (string, bool) {
	if enc, ok := strings.CutPrefix(v, "=?base64?"); ok {
		if enc, ok = strings.CutSuffix(enc, "?="); ok {
			dec, err := base64.StdEncoding.DecodeString(enc)
			if err != nil {
				return "", false
			}
			return string(dec), true
		}
	}
	return v, true
}

// refuseParamHeaders checks a 2026-07-28 tools/call (body, of JSON-RPC
// id id) against the Mcp-Param-* headers of r when its tool binds
// arguments to headers; on a mismatch it answers as the go-sdk does (400,
// CodeHeaderMismatch) and reports true.
func (e *Edge) refuseParamHeaders(w http.ResponseWriter, r *http.Request, name string, id, args json.RawMessage) bool {
	bindings := e.current().view.ToolBindings(name)
	if len(bindings) == 0 {
		return false
	}
	err := checkParamHeaders(r.Header, args, bindings)
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
	bindings := e.current().view.ToolBindings(r.Params.Name)
	if len(bindings) == 0 {
		return nil
	}
	if r.Extra == nil || r.Extra.Header == nil {
		return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: "header mismatch: no request headers to check"}
	}
	if r.Extra.Header.Get("Mcp-Protocol-Version") < newProtocol {
		return nil
	}
	if err := checkParamHeaders(r.Extra.Header, r.Params.Arguments, bindings); err != nil {
		return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: err.Error()}
	}
	return nil
}
