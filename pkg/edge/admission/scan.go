package admission

import (
	"bytes"

	segjson "github.com/segmentio/encoding/json"

	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// scanner reads a body already validated as JSON (mcpwire.FastJSONValid)
// in one pass, building no tree: the members a decision reads are sliced
// out of the bytes and every other value is skipped, so a body of millions
// of values costs its length, not a value per element (fastjson's tree of
// a 4 MiB array of zeros took a gigabyte).
type scanner struct {
	data []byte
	pos  int
}

func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\r', '\n':
			s.pos++
		default:
			return
		}
	}
}

// peek is the next byte after white space; 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// value skips the value at pos and returns its bytes.
func (s *scanner) value() []byte {
	s.ws()
	start := s.pos
	if s.pos >= len(s.data) {
		return nil
	}
	switch s.data[s.pos] {
	case '"':
		s.pos = stringEnd(s.data, s.pos)
	case '{', '[':
		depth := 0
		for s.pos < len(s.data) {
			switch s.data[s.pos] {
			case '"':
				s.pos = stringEnd(s.data, s.pos)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.pos++
			if depth == 0 {
				break
			}
		}
	default: // a number, true, false or null
		for s.pos < len(s.data) {
			switch s.data[s.pos] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return s.data[start:s.pos]
			}
			s.pos++
		}
	}
	return s.data[start:s.pos]
}

// stringEnd is the index after the string that opens at i.
func stringEnd(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(data)
}

// members calls fn for each member of the object at pos (its key decoded,
// its value's bytes), skipping each value fn does not take.
func (s *scanner) members(fn func(key string, raw []byte)) {
	if s.peek() != '{' {
		s.value()
		return
	}
	s.pos++
	for {
		switch s.peek() {
		case '}':
			s.pos++
			return
		case ',':
			s.pos++
			continue
		case 0:
			return
		}
		k := s.value()
		if s.peek() == ':' {
			s.pos++
		}
		fn(decodeString(k), s.value())
	}
}

// elements calls fn for each element of the array at pos; it stops (and
// reports false) past max elements.
func (s *scanner) elements(max int, fn func(raw []byte)) bool {
	s.pos++ // '['
	n := 0
	for {
		switch s.peek() {
		case ']':
			s.pos++
			return true
		case ',':
			s.pos++
			continue
		case 0:
			return true
		}
		if n++; n > max {
			return false
		}
		fn(s.value())
	}
}

// decodeString is the JSON string raw (with its quotes) as the go-sdk's
// decoder reads it: escapes resolved, invalid UTF-8 and lone surrogates
// replaced as it replaces them. raw of another type is "".
func decodeString(raw []byte) string {
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	inner := raw[1 : len(raw)-1]
	if s, ok := wellKnown(inner); ok {
		return s
	}
	if mcpwire.PlainString(string(inner)) {
		return string(inner)
	}
	var v string
	dec := segjson.NewDecoder(bytes.NewReader(raw))
	dec.DontMatchCaseInsensitiveStructFields()
	if dec.Decode(&v) != nil {
		return ""
	}
	return v
}

// wellKnown is the string of b, the content of a JSON string without
// escapes, when it is one that every call carries (the member names the
// gate reads, the methods of a call and its cancellation): the same
// string, without a copy of b per request.
func wellKnown(b []byte) (string, bool) {
	switch string(b) { // (compared, not converted)
	case "jsonrpc":
		return "jsonrpc", true
	case "id":
		return "id", true
	case "method":
		return "method", true
	case "params":
		return "params", true
	case "name":
		return "name", true
	case "arguments":
		return "arguments", true
	case "_meta":
		return "_meta", true
	case "requestId":
		return "requestId", true
	case "tools/call":
		return "tools/call", true
	case "notifications/cancelled":
		return "notifications/cancelled", true
	}
	return "", false
}

// kind is the JSON type of a value's bytes: its first byte ('"', '{',
// '[', 'n' for null, 't'/'f', or a digit/'-').
func kind(raw []byte) byte {
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}
