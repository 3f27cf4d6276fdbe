package admission

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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
	// Request reports a method member (a request or notification, even of
	// the method ""); Method is its value.
	Request bool
	Method  string
	ID      json.RawMessage // as sent; nil for a notification
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

// ParseBody parses data (bounded and balanced: mcpwire.Check passed) as
// the edge decides on it. metaTool names the optimizer's meta-tool whose
// arguments.tool_name is the tool called ("" for none). It builds no tree
// of the body: its cost is the body's length (scan.go).
func ParseBody(data []byte, maxBatch int, metaTool string) (*Body, error) {
	if !mcpwire.FastJSONValid(data) {
		return nil, &bodyError{ReasonMalformedBody, codeParseError, fmt.Errorf("%w: not valid JSON", ErrBadRequest)}
	}
	sc := &scanner{data: data}
	b := &Body{}
	var items [][]byte
	switch sc.peek() {
	case '[':
		b.Batch = true
		if !sc.elements(maxBatch, func(raw []byte) { items = append(items, raw) }) {
			return nil, &bodyError{ReasonBatchTooLarge, codeInvalidRequest,
				fmt.Errorf("%w: batch of more than %d messages", ErrTooLarge, maxBatch)}
		}
		if len(items) == 0 {
			return nil, &bodyError{ReasonMalformedBody, codeInvalidRequest, fmt.Errorf("%w: empty batch", ErrBadRequest)}
		}
	default:
		items = [][]byte{data}
	}
	b.Messages = make([]Message, len(items))
	for i, it := range items {
		if err := parseMessage(it, &b.Messages[i], metaTool); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// envelope are the members of a JSON-RPC message.
var envelope = [...]string{"jsonrpc", "id", "method", "params", "result", "error"}

// callParams are the members of a tools/call's params the edge reads.
var callParams = [...]string{"name", "arguments", "_meta", "task"}

// members visits the members of the object raw, refusing one of names
// sent twice or under another case (as Unicode folds it: encoding/json
// matches "paramſ" to params); fn sees each member with its index in names
// (-1 for any other).
func members(raw []byte, where string, names []string, fn func(i int, v []byte)) error {
	var seen uint32
	var err error
	(&scanner{data: raw}).members(func(k string, v []byte) {
		idx := -1
		for i, n := range names {
			if k == n {
				idx = i
				break
			}
			if err == nil && strings.EqualFold(k, n) {
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
		fn(idx, v)
	})
	return err
}

// parseMessage reads one message of a body into m.
func parseMessage(raw []byte, m *Message, metaTool string) error {
	if kind(raw) != '{' {
		return &bodyError{ReasonMalformedBody, codeInvalidRequest, fmt.Errorf("%w: a message is not an object", ErrBadRequest)}
	}
	var id, method, params, version []byte
	extra := false
	err := members(raw, "the message", envelope[:], func(i int, v []byte) {
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
	if m.Request = method != nil; m.Request {
		if kind(method) != '"' {
			return &bodyError{ReasonMalformedBody, codeInvalidRequest, fmt.Errorf("%w: method is not a string", ErrBadRequest)}
		}
		m.Method = decodeString(method)
	}
	if id != nil && kind(id) != 'n' {
		m.ID = id
	}
	m.Plain = !extra && string(version) == `"2.0"` && method != nil && kind(params) == '{'
	switch m.Method {
	case "tools/call":
		return parseCall(params, m, metaTool)
	case "notifications/cancelled":
		m.Plain = m.Plain && id == nil
		if kind(params) == '{' {
			(&scanner{data: params}).members(func(k string, v []byte) {
				if k == "requestId" { // the last, as the go-sdk reads it
					m.CancelID = v
				}
			})
		}
		m.Plain = m.Plain && ValidID(m.CancelID)
	default:
		m.Plain = false
	}
	return nil
}

// parseCall reads a tools/call's params into m.
func parseCall(params []byte, m *Message, metaTool string) error {
	m.Plain = m.Plain && m.ID != nil && ValidID(m.ID)
	if kind(params) != '{' {
		m.Plain = false
		return nil // the go-sdk refuses it: nothing is called
	}
	var name, args []byte
	err := members(params, "tools/call params", callParams[:], func(i int, v []byte) {
		switch i {
		case 0:
			name = v
		case 1:
			args = v
		case 3:
			m.Task = kind(v) != 'n'
			m.Plain = false
		default:
			m.Plain = false
		}
	})
	if err != nil {
		return err
	}
	if kind(name) == '"' {
		m.Tool = decodeString(name)
	}
	m.Plain = m.Plain && kind(name) == '"' && m.Tool != "" && mcpwire.PlainString(m.Tool) &&
		string(name[1:len(name)-1]) == m.Tool
	if args != nil {
		m.Plain = m.Plain && kind(args) == '{'
		m.Args = args
	}
	if metaTool == "" || m.Tool != metaTool || kind(args) != '{' {
		return nil
	}
	return members(args, metaTool+" arguments", []string{"tool_name"}, func(i int, v []byte) {
		if i == 0 && kind(v) == '"' {
			m.MetaTool = decodeString(v)
		}
	})
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
