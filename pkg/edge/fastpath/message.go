package fastpath

import (
	"bytes"
	"encoding/json"

	"github.com/valyala/fastjson"

	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// Message is a message direct.Answers.SessionCall handles: a tools/call request, or a
// notifications/cancelled.
type Message struct {
	Method   string
	ID       json.RawMessage // the request's id, as sent
	Name     string
	Args     json.RawMessage
	CancelID json.RawMessage // the requestId a cancellation names
	// Asks: a stateless call whose client declared sampling or
	// elicitation, which a backend's request during the call may need: the
	// go-sdk's path holds such calls for their input requests. (Roots are
	// not counted: the go-sdk's client declares them always, and backends
	// seldom ask for them during a call; a client of the fast path is
	// answered for them at once.)
	Asks bool
}

// ParseMessage parses data as a single tools/call request or
// notifications/cancelled with nothing beyond the members SessionCall
// handles (member names matched exactly, none twice): the gate's parse
// (admission.ParseBody), the one every decision about a request reads,
// of a body whose one message is Plain.
func ParseMessage(data []byte) (Message, bool) {
	var m Message
	if !bytes.Contains(data, []byte(`"tools/call"`)) && !bytes.Contains(data, []byte(`"notifications/cancelled"`)) {
		return m, false
	}
	if mcpwire.Check(data, mcpwire.MaxDepth) != nil {
		return m, false
	}
	b, err := admission.ParseBody(data, 1, "")
	if err != nil {
		return m, false
	}
	msg, ok := b.Single()
	if !ok || !msg.Plain {
		return m, false
	}
	return Message{Method: msg.Method, ID: msg.ID, Name: msg.Tool, Args: msg.Args, CancelID: msg.CancelID}, true
}

// parsers are the parsers of parseFastMessage and parseListen.
var parsers fastjson.ParserPool

// ValidID reports whether id is a JSON-RPC request id the edge echoes
// as the go-sdk would write it (admission.ValidID).
func ValidID(id json.RawMessage) bool { return admission.ValidID(id) }

// ServerInfoKey is the _meta key of the server's info in a result.
const ServerInfoKey = "io.modelcontextprotocol/serverInfo"

// ParseStatelessCall parses body as a tools/call of the new protocol with
// exactly jsonrpc, id, method and params, and params of _meta (checked as
// the go-sdk checks it, with only the protocol's own members: a
// progressToken or any other member for the backend takes the go-sdk's
// path, which passes it on and relays progress), name and, optionally,
// arguments (an object).
func ParseStatelessCall(body []byte) (Message, bool) {
	var m Message
	ok := parseNewRequest(body, "tools/call", admission.FirstNewProtocol, func(id json.RawMessage, params *fastjson.Value) bool {
		m.ID = id
		ok := true
		params.GetObject().Visit(func(k []byte, v *fastjson.Value) {
			switch string(k) {
			case "_meta":
				ok = ok && protocolMetaOnly(v)
				m.Asks = asks(v)
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

// asks reports whether meta, a stateless request's _meta, declares
// sampling or elicitation (Message.Asks).
func asks(meta *fastjson.Value) bool {
	caps := meta.Get("io.modelcontextprotocol/clientCapabilities")
	if caps == nil || caps.Type() != fastjson.TypeObject {
		return false
	}
	for _, k := range []string{"sampling", "elicitation"} {
		if v := caps.Get(k); v != nil && v.Type() != fastjson.TypeNull {
			return true
		}
	}
	return false
}

// protocolMetaOnly reports whether meta, a request's _meta, has only
// members of the protocol's own namespace (io.modelcontextprotocol/...),
// which belong to the client's hop.
func protocolMetaOnly(meta *fastjson.Value) bool {
	o, err := meta.Object()
	if err != nil {
		return true // the go-sdk's checks (listenMeta) refuse it
	}
	ok := true
	o.Visit(func(k []byte, _ *fastjson.Value) {
		ok = ok && bytes.HasPrefix(k, []byte("io.modelcontextprotocol/"))
	})
	return ok
}
