package admission

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	segjson "github.com/segmentio/encoding/json"
	"github.com/valyala/fastjson"

	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// A POST's body is parsed once, here, and every decision about the request
// (its route, its rate limits and concurrency slots, the policy, the call
// trail) reads that parse. The go-sdk, which serves what the edge does not
// answer itself, reads member names case-sensitively, takes the last of a
// member sent twice, and accepts a JSON-RPC batch from clients of protocol
// versions before 2025-06-18, running its calls concurrently. A body the
// two could read differently is refused: a member of the envelope, of a
// tools/call's params, or of the optimizer's call_tool arguments sent twice
// or under another case. A batch is bounded and each of its calls is
// decided on its own.

// DefaultMaxBatch bounds the messages of a JSON-RPC batch.
const DefaultMaxBatch = 16

// Reasons of refusals of a body (the refusal metric's label).
const (
	ReasonAmbiguousBody = "ambiguous_body"
	ReasonBatchTooLarge = "batch_too_large"
)

// ErrAmbiguous is a body two JSON readers could read differently.
var ErrAmbiguous = errors.New("admission: ambiguous JSON-RPC message")

// Body is a POST body as every decision about it reads it: one JSON-RPC
// message, or a batch of them.
type Body struct {
	Batch    bool
	Messages []Message
}

// Message is one JSON-RPC message of a body.
type Message struct {
	Method string          // "" for a response
	ID     json.RawMessage // as sent; nil for a notification
	// Tool and Args are a tools/call's params.name and params.arguments
	// (Tool "" when its params have no string name); Tool is the name as
	// the go-sdk decodes it.
	Tool string
	Args json.RawMessage
	// MetaTool is the tool an optimizer's meta-tool call names in its
	// arguments (Options.MetaCallTool), "" for none.
	MetaTool string
	// Plain reports exactly the members jsonrpc "2.0", method, id and
	// params, and for a tools/call params of exactly a non-empty name of
	// plain characters and optional object arguments, with an id the edge
	// writes back as the go-sdk would (the form the edge may answer itself).
	Plain bool
	// CancelID is the requestId a notifications/cancelled names.
	CancelID json.RawMessage
	// Task reports a tools/call made a task (params.task, not null).
	Task bool
}

// Calls counts the tools/call requests of b.
func (b *Body) Calls() int {
	n := 0
	for i := range b.Messages {
		if b.Messages[i].Method == "tools/call" && b.Messages[i].ID != nil {
			n++
		}
	}
	return n
}

// Single returns b's message when b is one message (not a batch).
func (b *Body) Single() (*Message, bool) {
	if b == nil || b.Batch || len(b.Messages) != 1 {
		return nil, false
	}
	return &b.Messages[0], true
}

// bodyError is a body refused, with the JSON-RPC code of the answer.
type bodyError struct {
	reason string
	code   int
	err    error
}

func (e *bodyError) Error() string { return e.err.Error() }
func (e *bodyError) Unwrap() error { return e.err }

// JSON-RPC error codes of refused bodies.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

var parsers fastjson.ParserPool

// ParseBody parses data (bounded and balanced: mcpwire.Check passed) as
// the edge decides on it. metaTool names the optimizer's meta-tool whose
// arguments.tool_name is the tool called ("" for none).
func ParseBody(data []byte, maxBatch int, metaTool string) (*Body, error) {
	if !mcpwire.FastJSONValid(data) {
		return nil, &bodyError{ReasonMalformedBody, codeParseError, fmt.Errorf("%w: not valid JSON", ErrBadRequest)}
	}
	p := parsers.Get()
	defer parsers.Put(p)
	v, err := p.ParseBytes(data)
	if err != nil {
		return nil, &bodyError{ReasonMalformedBody, codeParseError, fmt.Errorf("%w: %w", ErrBadRequest, err)}
	}
	b := &Body{}
	items := []*fastjson.Value{v}
	if v.Type() == fastjson.TypeArray {
		b.Batch = true
		items, _ = v.Array()
		if len(items) == 0 {
			return nil, &bodyError{ReasonMalformedBody, codeInvalidRequest, fmt.Errorf("%w: empty batch", ErrBadRequest)}
		}
		if len(items) > maxBatch {
			return nil, &bodyError{ReasonBatchTooLarge, codeInvalidRequest,
				fmt.Errorf("%w: batch of %d messages (at most %d)", ErrTooLarge, len(items), maxBatch)}
		}
	}
	b.Messages = make([]Message, len(items))
	exact := false
	for i, it := range items {
		if err := parseMessage(it, &b.Messages[i], metaTool, &exact); err != nil {
			return nil, err
		}
	}
	if exact {
		if err := exactStrings(data, b, metaTool); err != nil {
			return nil, &bodyError{ReasonMalformedBody, codeParseError, fmt.Errorf("%w: %w", ErrBadRequest, err)}
		}
	}
	return b, nil
}

// exactStrings reads b's methods and tool names again from data, as the
// go-sdk decodes them: one of them has escapes or bytes that fastjson
// unescapes differently (lone surrogates, invalid UTF-8).
func exactStrings(data []byte, b *Body, metaTool string) error {
	decode := func(raw []byte, v any) error {
		dec := segjson.NewDecoder(bytes.NewReader(raw))
		dec.DontMatchCaseInsensitiveStructFields()
		return dec.Decode(v)
	}
	raws := []json.RawMessage{data}
	if b.Batch {
		raws = nil
		if err := decode(data, &raws); err != nil || len(raws) != len(b.Messages) {
			return fmt.Errorf("batch: %v", err)
		}
	}
	for i, raw := range raws {
		var msg struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := decode(raw, &msg); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		m := &b.Messages[i]
		m.Method = msg.Method
		if m.Method != "tools/call" || len(msg.Params) == 0 || msg.Params[0] != '{' {
			continue
		}
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := decode(msg.Params, &p); err != nil {
			return fmt.Errorf("message %d params: %w", i, err)
		}
		m.Tool = p.Name
		m.Plain = m.Plain && mcpwire.PlainString(m.Tool)
		if metaTool == "" || m.Tool != metaTool || len(p.Arguments) == 0 || p.Arguments[0] != '{' {
			continue
		}
		var a struct {
			ToolName string `json:"tool_name"`
		}
		if decode(p.Arguments, &a) == nil {
			m.MetaTool = a.ToolName
		}
	}
	return nil
}

// envelope are the members of a JSON-RPC message.
var envelope = [...]string{"jsonrpc", "id", "method", "params", "result", "error"}

// callParams are the members of a tools/call's params the edge reads.
var callParams = [...]string{"name", "arguments", "_meta", "task"}

// members visits o's members, refusing one of names sent twice or under
// another case; fn sees each member with its index in names (-1 for any
// other).
func members(o *fastjson.Object, where string, names []string, fn func(i int, k []byte, v *fastjson.Value)) error {
	var seen uint32
	var err error
	o.Visit(func(k []byte, v *fastjson.Value) {
		idx := -1
		for i, n := range names {
			if string(k) == n {
				idx = i
				break
			}
			if err == nil && len(k) == len(n) && strings.EqualFold(string(k), n) {
				err = &bodyError{ReasonAmbiguousBody, codeInvalidRequest,
					fmt.Errorf("%w: member %q of %s also sent as %q", ErrAmbiguous, k, where, n)}
			}
		}
		if idx >= 0 {
			if seen&(1<<idx) != 0 && err == nil {
				err = &bodyError{ReasonAmbiguousBody, codeInvalidRequest,
					fmt.Errorf("%w: member %q of %s sent twice", ErrAmbiguous, k, where)}
			}
			seen |= 1 << idx
		}
		fn(idx, k, v)
	})
	return err
}

// parseMessage reads one message of a body into m; exact is set when a
// string of it is to be read again as the go-sdk reads it.
func parseMessage(v *fastjson.Value, m *Message, metaTool string, exact *bool) error {
	o, err := v.Object()
	if err != nil {
		return &bodyError{ReasonMalformedBody, codeInvalidRequest, fmt.Errorf("%w: a message is not an object", ErrBadRequest)}
	}
	var id, method, params, version *fastjson.Value
	extra := false
	err = members(o, "the message", envelope[:], func(i int, _ []byte, v *fastjson.Value) {
		switch i {
		case 0:
			version = v
		case 1:
			id = v
		case 2:
			method = v
		case 3:
			params = v
		default:
			extra = true
		}
	})
	if err != nil {
		return err
	}
	if method != nil {
		if method.Type() != fastjson.TypeString {
			return &bodyError{ReasonMalformedBody, codeInvalidRequest, fmt.Errorf("%w: method is not a string", ErrBadRequest)}
		}
		m.Method = plainString(method, exact)
	}
	if id != nil && id.Type() != fastjson.TypeNull {
		m.ID = id.MarshalTo(nil)
	}
	m.Plain = !extra && version != nil && version.Type() == fastjson.TypeString && string(version.GetStringBytes()) == "2.0" &&
		method != nil && params != nil && params.Type() == fastjson.TypeObject
	switch m.Method {
	case "tools/call":
		return parseCall(params, m, metaTool, exact)
	case "notifications/cancelled":
		m.Plain = m.Plain && id == nil
		if params != nil && params.Type() == fastjson.TypeObject {
			var reqID *fastjson.Value
			params.GetObject().Visit(func(k []byte, v *fastjson.Value) {
				if string(k) == "requestId" { // the last, as the go-sdk reads it
					reqID = v
				}
			})
			if reqID != nil {
				m.CancelID = reqID.MarshalTo(nil)
			}
		}
		m.Plain = m.Plain && ValidID(m.CancelID)
	default:
		m.Plain = false
	}
	return nil
}

// parseCall reads a tools/call's params into m.
func parseCall(params *fastjson.Value, m *Message, metaTool string, exact *bool) error {
	m.Plain = m.Plain && m.ID != nil && ValidID(m.ID)
	if params == nil || params.Type() != fastjson.TypeObject {
		m.Plain = false
		return nil // the go-sdk refuses it: nothing is called
	}
	var name, args *fastjson.Value
	err := members(params.GetObject(), "tools/call params", callParams[:], func(i int, _ []byte, v *fastjson.Value) {
		switch i {
		case 0:
			name = v
		case 1:
			args = v
		case 3:
			m.Task = v.Type() != fastjson.TypeNull
			m.Plain = false
		default:
			m.Plain = false
		}
	})
	if err != nil {
		return err
	}
	if name != nil && name.Type() == fastjson.TypeString {
		m.Tool = plainString(name, exact)
	}
	m.Plain = m.Plain && name != nil && name.Type() == fastjson.TypeString && m.Tool != "" &&
		mcpwire.PlainString(m.Tool) && string(name.GetStringBytes()) == m.Tool
	if args != nil {
		m.Plain = m.Plain && args.Type() == fastjson.TypeObject
		m.Args = args.MarshalTo(nil)
	}
	if metaTool == "" || m.Tool != metaTool || args == nil || args.Type() != fastjson.TypeObject {
		return nil
	}
	return members(args.GetObject(), metaTool+" arguments", []string{"tool_name"}, func(i int, _ []byte, v *fastjson.Value) {
		if i == 0 && v.Type() == fastjson.TypeString {
			m.MetaTool = plainString(v, exact)
		}
	})
}

// plainString is a JSON string value, and sets exact when its bytes are
// not plain (fastjson's unescaping differs from the go-sdk's decoder's on
// invalid UTF-8 and lone surrogates: exactStrings reads it again).
func plainString(v *fastjson.Value, exact *bool) string {
	raw := v.GetStringBytes()
	if !mcpwire.PlainString(string(raw)) {
		*exact = true
	}
	return string(raw)
}

// ValidID reports whether id is a JSON-RPC request id the edge echoes
// as the go-sdk would write it: a string of printable ASCII without
// escapes, or an integer as JSON writes it (no leading zeros, no fraction
// or exponent) of at most 15 digits (the go-sdk reads ids as float64).
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

// bodyRefusal is err (of ParseBody) as the gate's refusal: 400 with a
// JSON-RPC error.
func bodyRefusal(err error) *Refusal {
	f := &Refusal{Status: 400, Reason: ReasonMalformedBody, Err: err, RPC: true, Code: codeParseError}
	var be *bodyError
	if errors.As(err, &be) {
		f.Reason, f.Code = be.reason, be.code
	}
	return f
}
