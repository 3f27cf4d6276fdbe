package fastpath

import (
	"encoding/json"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fastjson"

	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// ListenRequest is a subscriptions/listen request the edge takes over.
type ListenRequest struct {
	ID   json.RawMessage // the request's id, as sent
	Subs uint8           // ListTools, ListPrompts, ListResources
}

// ParseListen parses body as a listen request for protocol version.
func ParseListen(body []byte, version string) (ListenRequest, bool) {
	var lr ListenRequest
	ok := parseNewRequest(body, "subscriptions/listen", version, func(id json.RawMessage, params *fastjson.Value) bool {
		lr.ID = id
		if params.GetObject().Len() != 2 {
			return false
		}
		subs := params.Get("notifications")
		if subs == nil || subs.Type() != fastjson.TypeObject || mcpwire.DuplicateMember(subs.GetObject()) != "" {
			return false
		}
		ok := true
		subs.GetObject().Visit(func(k []byte, v *fastjson.Value) {
			var bit uint8
			switch string(k) {
			case "toolsListChanged":
				bit = ListTools
			case "promptsListChanged":
				bit = ListPrompts
			case "resourcesListChanged":
				bit = ListResources
			default: // resourceSubscriptions and anything else: the go-sdk's
				ok = false
				return
			}
			switch v.Type() {
			case fastjson.TypeTrue:
				lr.Subs |= bit
			case fastjson.TypeFalse:
			default:
				ok = false
			}
		})
		return ok && lr.Subs != 0 // no subscription: the go-sdk answers at once
	})
	return lr, ok
}

// parseNewRequest parses body as one request of the new protocol: exactly
// jsonrpc "2.0", an id the edge echoes as sent (validID), method and
// params, params an object without a member twice whose _meta listenMeta
// takes for version. check sees the id and params (valid only during the
// call) and judges the rest.
func parseNewRequest(body []byte, method, version string, check func(id json.RawMessage, params *fastjson.Value) bool) bool {
	if !mcpwire.FastJSONValid(body) { // bounded, linear, and what encoding/json takes
		return false
	}
	p := parsers.Get()
	defer parsers.Put(p)
	v, err := p.ParseBytes(body)
	if err != nil || v.Type() != fastjson.TypeObject {
		return false
	}
	top := v.GetObject()
	if jv := v.Get("jsonrpc"); mcpwire.DuplicateMember(top) != "" || top.Len() != 4 || jv == nil || jv.Type() != fastjson.TypeString ||
		string(jv.GetStringBytes()) != "2.0" || string(v.GetStringBytes("method")) != method || v.Get("id") == nil {
		return false
	}
	id := v.Get("id").MarshalTo(nil)
	params := v.Get("params")
	if !ValidID(id) || params == nil || params.Type() != fastjson.TypeObject || mcpwire.DuplicateMember(params.GetObject()) != "" ||
		!listenMeta(params.Get("_meta"), version) {
		return false
	}
	return check(id, params)
}

// listenMeta checks a listen request's _meta as the go-sdk does: the
// protocol version of the header, client capabilities, and client info and
// log level when present.
func listenMeta(meta *fastjson.Value, version string) bool {
	if meta == nil || meta.Type() != fastjson.TypeObject {
		return false
	}
	// A client sends the same _meta with every request: one already found
	// good is not decoded again.
	key := append(append([]byte(version), 0), meta.MarshalTo(nil)...)
	if good, ok := goodMetas.get(key); ok && good {
		return true
	}
	if !checkMeta(meta, version) {
		return false
	}
	goodMetas.put(key, true)
	return true
}

// checkMeta is listenMeta without its memory.
func checkMeta(meta *fastjson.Value, version string) bool {
	if pv := meta.Get("io.modelcontextprotocol/protocolVersion"); mcpwire.DuplicateMember(meta.GetObject()) != "" ||
		pv == nil || pv.Type() != fastjson.TypeString || string(pv.GetStringBytes()) != version {
		return false
	}
	// The go-sdk decodes the whole of _meta: a number out of float64's
	// range makes it refuse the request.
	if !float64Numbers(meta) {
		return false
	}
	var caps mcp.ClientCapabilities
	c := meta.Get("io.modelcontextprotocol/clientCapabilities")
	if c == nil || c.Type() != fastjson.TypeObject || json.Unmarshal(c.MarshalTo(nil), &caps) != nil {
		return false
	}
	if info := meta.Get("io.modelcontextprotocol/clientInfo"); info != nil {
		var impl mcp.Implementation
		if info.Type() != fastjson.TypeObject || json.Unmarshal(info.MarshalTo(nil), &impl) != nil {
			return false
		}
	}
	if level := meta.Get("io.modelcontextprotocol/logLevel"); level != nil && level.Type() != fastjson.TypeString {
		return false
	}
	return true
}

// goodMetas are the _meta values (with their protocol version) that
// listenMeta found good.
var goodMetas = &memo{}

// memo remembers a bool per key, within maxMemo and maxMemoKey.
type memo struct {
	mu sync.Mutex
	m  map[string]bool
}

func (s *memo) get(key []byte) (v, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok = s.m[string(key)]
	return v, ok
}

func (s *memo) put(key []byte, v bool) {
	if len(key) > maxMemoKey {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil || len(s.m) >= maxMemo {
		s.m = map[string]bool{}
	}
	s.m[string(key)] = v
}

// float64Numbers reports whether every number in v is within float64's
// range, as decoding it into an any requires.
func float64Numbers(v *fastjson.Value) bool {
	switch v.Type() {
	case fastjson.TypeNumber:
		_, err := strconv.ParseFloat(v.String(), 64)
		return err == nil
	case fastjson.TypeArray:
		for _, x := range v.GetArray() {
			if !float64Numbers(x) {
				return false
			}
		}
	case fastjson.TypeObject:
		ok := true
		v.GetObject().Visit(func(_ []byte, x *fastjson.Value) { ok = ok && float64Numbers(x) })
		return ok
	}
	return true
}

// maxMemo bounds the entries of a memo (it forgets them all past it) and
// maxMemoKey the keys it keeps: a few KiB each at most.
const (
	maxMemo    = 1024
	maxMemoKey = 4 << 10
)
