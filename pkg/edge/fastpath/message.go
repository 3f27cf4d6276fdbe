package fastpath

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/valyala/fastjson"

	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// Message is a message fastCall handles: a tools/call request, or a
// notifications/cancelled.
type Message struct {
	Method   string
	ID       json.RawMessage // the request's id, as sent
	Name     string
	Args     json.RawMessage
	CancelID json.RawMessage // the requestId a cancellation names
}

// ParseMessage parses data as a single tools/call request or
// notifications/cancelled with nothing beyond the members fastCall
// handles (member names matched exactly, none twice). It parses with
// fastjson, which allocates next to nothing: encoding/json's decoding of
// the two objects cost more than the rest of the edge's work on a call.
func ParseMessage(data []byte) (Message, bool) {
	var m Message
	if !bytes.Contains(data, []byte(`"tools/call"`)) && !bytes.Contains(data, []byte(`"notifications/cancelled"`)) {
		return m, false
	}
	// fastjson's parser takes some invalid JSON (NaN, 007, raw control
	// characters); its validator does not.
	if !mcpwire.FastJSONValid(data) { // bounded, linear, and what encoding/json takes
		return m, false
	}
	p := parsers.Get()
	defer parsers.Put(p)
	v, err := p.ParseBytes(data)
	if err != nil {
		return m, false
	}
	top, err := v.Object()
	if err != nil {
		return m, false
	}
	var id, params *fastjson.Value
	ok := true
	seen := 0
	top.Visit(func(k []byte, v *fastjson.Value) {
		var bit int
		switch string(k) {
		case "jsonrpc":
			bit, ok = 1, ok && string(v.GetStringBytes()) == "2.0" && v.Type() == fastjson.TypeString
		case "method":
			bit, m.Method = 2, string(v.GetStringBytes())
		case "id":
			bit, id = 4, v
		case "params":
			bit, params = 8, v
		default:
			ok = false
		}
		ok = ok && seen&bit == 0
		seen |= bit
	})
	if !ok || seen&(1|2|8) != 1|2|8 || params.Type() != fastjson.TypeObject {
		return m, false
	}
	switch m.Method {
	case "notifications/cancelled":
		var reqID *fastjson.Value
		params.GetObject().Visit(func(k []byte, v *fastjson.Value) {
			if string(k) == "requestId" { // the last, as encoding/json reads it
				reqID = v
			}
		})
		if id != nil || reqID == nil {
			return m, false
		}
		m.CancelID = reqID.MarshalTo(nil)
		return m, ValidID(m.CancelID)
	case "tools/call":
		if id == nil {
			return m, false
		}
		m.ID = id.MarshalTo(nil)
		var name, args *fastjson.Value
		params.GetObject().Visit(func(k []byte, v *fastjson.Value) {
			switch {
			case string(k) == "name" && name == nil:
				name = v
			case string(k) == "arguments" && args == nil:
				args = v
			default:
				ok = false
			}
		})
		if !ok || !ValidID(m.ID) || name == nil || name.Type() != fastjson.TypeString {
			return m, false
		}
		// A name of other bytes (fastjson keeps invalid UTF-8 and lone
		// surrogates that encoding/json replaces) is the go-sdk's.
		if m.Name = string(name.GetStringBytes()); m.Name == "" || !mcpwire.PlainString(m.Name) {
			return m, false
		}
		if args != nil {
			if args.Type() != fastjson.TypeObject {
				return m, false
			}
			m.Args = args.MarshalTo(nil)
		}
		return m, true
	}
	return m, false
}

// parsers are the parsers of parseFastMessage and parseListen.
var parsers fastjson.ParserPool

// ValidID reports whether id is a JSON-RPC request id the edge echoes
// as the go-sdk would write it: a string of printable ASCII without
// escapes, or an integer as JSON writes it (no leading zeros, no fraction
// or exponent) of at most 15 digits (the go-sdk reads ids as float64).
// Any other id is left to the go-sdk.
func ValidID(id json.RawMessage) bool {
	if len(id) < 2 && (len(id) == 0 || id[0] == '"') {
		return false
	}
	if id[0] == '"' {
		if id[len(id)-1] != '"' {
			return false
		}
		for _, c := range id[1 : len(id)-1] {
			if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
				return false
			}
		}
		return true
	}
	digits := strings.TrimPrefix(string(id), "-")
	if digits == "" || len(digits) > 15 || len(digits) > 1 && digits[0] == '0' || string(id) == "-0" {
		return false
	}
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// ServerInfoKey is the _meta key of the server's info in a result.
const ServerInfoKey = "io.modelcontextprotocol/serverInfo"

// ParseStatelessCall parses body as a tools/call of the new protocol with
// exactly jsonrpc, id, method and params, and params of _meta (checked as
// the go-sdk checks it), name and, optionally, arguments (an object).
func ParseStatelessCall(body []byte) (Message, bool) {
	var m Message
	ok := parseNewRequest(body, "tools/call", admission.FirstNewProtocol, func(id json.RawMessage, params *fastjson.Value) bool {
		m.ID = id
		ok := true
		params.GetObject().Visit(func(k []byte, v *fastjson.Value) {
			switch string(k) {
			case "_meta":
			case "name":
				ok = ok && v.Type() == fastjson.TypeString
				m.Name = string(v.GetStringBytes())
			case "arguments":
				ok = ok && v.Type() == fastjson.TypeObject
				m.Args = v.MarshalTo(nil)
			default:
				ok = false
			}
		})
		return ok
	})
	m.Method = "tools/call"
	return m, ok && m.Name != "" && mcpwire.PlainString(m.Name) // another name is the go-sdk's, as in parseFastMessage
}
