package mcpwire

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
)

// Errors of reading JSON-RPC messages, matched with errors.Is.
var (
	// ErrNoResponse: the data holds no response to the id sought.
	ErrNoResponse = errors.New("mcpwire: no JSON-RPC response to the request")
	// ErrInvalidMessage: the data is JSON but not JSON-RPC messages (a
	// member of the wrong type, an id neither a string nor a number, a
	// response with neither result nor error).
	ErrInvalidMessage = errors.New("mcpwire: not a JSON-RPC message")
)

// ID is a JSON-RPC request id, a string or a number, comparable with ==:
// a string by its value (escapes decoded), a number by its literal, so 7
// and "7" are different ids, as are 7 and 7.0. The zero ID is no id (the
// member absent, or null).
type ID struct {
	v     string // the string, or the number's literal
	isStr bool
}

// IntID is the number id n.
func IntID(n int64) ID { return ID{v: strconv.FormatInt(n, 10)} }

// StringID is the string id s.
func StringID(s string) ID { return ID{v: s, isStr: true} }

// ParseID is the id written as raw, the JSON of a string or a number.
func ParseID(raw []byte) (ID, error) {
	var id ID
	if !json.Valid(raw) {
		return id, fmt.Errorf("%w: id %.40q is not JSON", ErrInvalidMessage, raw)
	}
	err := id.UnmarshalJSON(trimSpace(raw))
	return id, err
}

// IsZero reports whether id is no id.
func (id ID) IsZero() bool { return id == ID{} }

// String is the JSON of id ("null" for no id).
func (id ID) String() string {
	b, _ := id.MarshalJSON()
	return string(b)
}

// MarshalJSON implements json.Marshaler.
func (id ID) MarshalJSON() ([]byte, error) {
	switch {
	case id.isStr:
		return json.Marshal(id.v)
	case id.v == "":
		return []byte("null"), nil
	}
	return []byte(id.v), nil
}

// UnmarshalJSON implements json.Unmarshaler; b is one JSON value.
func (id *ID) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) == 0:
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("%w: id: %w", ErrInvalidMessage, err)
		}
		*id = StringID(s)
		return nil
	case b[0] == '-' || b[0] >= '0' && b[0] <= '9':
		*id = ID{v: string(b)}
		return nil
	case string(b) == "null":
		*id = ID{}
		return nil
	}
	return fmt.Errorf("%w: id %.40q is neither a string nor a number", ErrInvalidMessage, b)
}

// Message is one JSON-RPC 2.0 message: a request (Method and ID), a
// notification (Method, no ID) or a response (ID, and Result or Error).
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      ID              `json:"id,omitzero"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"` // "null" for a null result
	Error   *Error          `json:"error,omitempty"`
}

// Error is the error of a JSON-RPC response.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// Messages decodes data, one JSON-RPC message or a batch of them, a
// message at a time (a batch is never decoded whole, so a batch of many
// small messages costs one message's memory). data is first checked with
// Check(data, MaxDepth) and json.Valid: a failure yields one error, which
// wraps ErrTooDeep, ErrUnbalanced or ErrInvalidMessage. A message that
// does not decode yields an error wrapping ErrInvalidMessage and ends the
// sequence. Each yielded *Message is the caller's.
func Messages(data []byte) iter.Seq2[*Message, error] {
	return func(yield func(*Message, error) bool) {
		if err := Check(data, MaxDepth); err != nil {
			yield(nil, fmt.Errorf("decode JSON-RPC: %w", err))
			return
		}
		if !json.Valid(data) {
			yield(nil, fmt.Errorf("decode JSON-RPC: %w: invalid JSON", ErrInvalidMessage))
			return
		}
		data = trimSpace(data)
		if len(data) == 0 || data[0] != '[' {
			decodeMessage(data, yield)
			return
		}
		for rest := data[1:]; ; {
			elem, more := nextElement(rest)
			if len(elem) == 0 || !decodeMessage(elem, yield) {
				return
			}
			rest = more
		}
	}
}

// decodeMessage yields the message of the JSON value b; false to stop.
func decodeMessage(b []byte, yield func(*Message, error) bool) bool {
	m := new(Message)
	if err := json.Unmarshal(b, m); err != nil {
		if !errors.Is(err, ErrInvalidMessage) {
			err = fmt.Errorf("%w: %w", ErrInvalidMessage, err)
		}
		yield(nil, fmt.Errorf("decode JSON-RPC: %w", err))
		return false
	}
	return yield(m, nil)
}

// nextElement splits the next element off the rest of a valid JSON array
// (after its '[' or a ','): the element, and what follows its ','; an
// empty element at the array's end.
func nextElement(b []byte) (elem, rest []byte) {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; b[i] != '"'; i++ { // valid JSON: the string ends
				if b[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			depth++
		case '}':
			depth--
		case ']':
			if depth == 0 {
				return trimSpace(b[:i]), nil
			}
			depth--
		case ',':
			if depth == 0 {
				return trimSpace(b[:i]), b[i+1:]
			}
		}
	}
	return nil, nil
}

// trimSpace trims JSON's white space.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// FindResponse returns the response to id among the messages of data
// (one message or a batch; requests and notifications are passed over),
// decoded with Messages. It returns ErrNoResponse when data holds none,
// and an error wrapping ErrInvalidMessage for a response to id with
// neither result nor error, or for a message before it that does not
// decode.
func FindResponse(data []byte, id ID) (*Message, error) {
	if id.IsZero() {
		return nil, fmt.Errorf("find response to no id: %w", ErrNoResponse)
	}
	for m, err := range Messages(data) {
		if err != nil {
			return nil, err
		}
		if m.Method != "" || m.ID != id {
			continue
		}
		if m.Result == nil && m.Error == nil {
			return nil, fmt.Errorf("find response to %s: %w: neither result nor error", id, ErrInvalidMessage)
		}
		return m, nil
	}
	return nil, ErrNoResponse
}
