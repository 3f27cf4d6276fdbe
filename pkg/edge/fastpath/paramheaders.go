package fastpath

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/fleetgate/fleetgate/pkg/catalog"
)

// ErrHeaderMismatch marks a refusal by checkParamHeaders.
var ErrHeaderMismatch = errors.New("header mismatch")

// CheckParamHeaders checks the Mcp-Param-* headers of a 2026-07-28
// tools/call of a tool with bindings against its arguments, as the go-sdk
// checks them: a bound argument present and not null needs its header,
// equal to its value (a string, a boolean or an integer, a string
// possibly in =?base64?...?= form); an absent or null one must have none.
func CheckParamHeaders(h http.Header, args json.RawMessage, bindings []catalog.ParamBinding) error {
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
				return fmt.Errorf("%w: unexpected %s header for absent or null parameter %q", ErrHeaderMismatch, full, strings.Join(b.Path, "."))
			}
			continue
		}
		if got == "" {
			return fmt.Errorf("%w: missing %s header for parameter %q", ErrHeaderMismatch, full, strings.Join(b.Path, "."))
		}
		decoded, ok := decodeHeaderValue(got)
		if !ok {
			return fmt.Errorf("%w: %s header contains invalid Base64 encoding", ErrHeaderMismatch, full)
		}
		val := primitiveOf(arg)
		if val == nil {
			return fmt.Errorf("%w: %s header present but body parameter %q is not a primitive type", ErrHeaderMismatch, full, strings.Join(b.Path, "."))
		}
		if !headerEquals(decoded, val) {
			return fmt.Errorf("%w: %s header value '%s' does not match body value", ErrHeaderMismatch, full, got)
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
