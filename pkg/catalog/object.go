package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// This file holds the one JSON primitive the package builds on: a scan of
// the top level of an object that records where each member's value lies
// in the original bytes. Everything else (projection, validation, renaming)
// reads values by offset, so a definition is never decoded into Go maps and
// its unknown fields pass through untouched.

var (
	errNotJSON   = errors.New("not valid JSON")
	errNotObject = errors.New("not a JSON object")
)

// member is one top-level member of a JSON object: its decoded key and the
// byte range of its value in object.raw (no surrounding whitespace).
type member struct {
	key              string
	valStart, valEnd int
}

// object is a JSON object scanned at its top level.
type object struct {
	raw     []byte
	members []member
}

// parseObject validates raw as JSON and scans it as an object.
func parseObject(raw []byte) (object, error) {
	if !json.Valid(raw) {
		return object{}, errNotJSON
	}
	return scanObject(raw)
}

// scanObject scans raw, which must already be valid JSON (for example a
// value taken from a validated document), as an object.
func scanObject(raw []byte) (object, error) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return object{}, errNotObject
	}
	obj := object{raw: raw, members: make([]member, 0, 8)}
	i++
	for {
		i = skipSpace(raw, i)
		switch raw[i] {
		case '}':
			return obj, nil
		case ',':
			i = skipSpace(raw, i+1)
		}
		keyEnd := skipString(raw, i)
		key, err := decodeString(raw[i:keyEnd])
		if err != nil {
			return object{}, fmt.Errorf("key at offset %d: %w", i, err)
		}
		i = skipSpace(raw, keyEnd) + 1 // the colon
		i = skipSpace(raw, i)
		end := skipValue(raw, i)
		obj.members = append(obj.members, member{key: key, valStart: i, valEnd: end})
		i = end
	}
}

// get returns the raw value of the member named key. It reports an error
// when the key occurs more than once, since which one a reader honours is
// then a matter of implementation.
func (o object) get(key string) (val []byte, ok bool, err error) {
	for _, m := range o.members {
		if m.key != key {
			continue
		}
		if ok {
			return nil, false, fmt.Errorf("duplicate member %q", key)
		}
		val, ok = o.raw[m.valStart:m.valEnd], true
	}
	return val, ok, nil
}

// stringMember returns the string value of the member named key.
// present is false when the member is absent; a present member that is not
// a string is an error.
func (o object) stringMember(key string) (s string, present bool, err error) {
	val, ok, err := o.get(key)
	if err != nil || !ok {
		return "", false, err
	}
	if val[0] != '"' {
		return "", true, fmt.Errorf("%s: not a string", key)
	}
	s, err = decodeString(val)
	if err != nil {
		return "", true, fmt.Errorf("%s: %w", key, err)
	}
	return s, true, nil
}

// withString returns a copy of the object's bytes in which the value of
// member key is replaced by the JSON string s, or in which that member is
// added first when absent. All other bytes are copied unchanged.
func (o object) withString(key, s string) ([]byte, error) {
	at := -1
	for i, m := range o.members {
		if m.key == key {
			if at >= 0 {
				return nil, fmt.Errorf("duplicate member %q", key)
			}
			at = i
		}
	}
	enc := appendCanonicalString(nil, s)
	if at >= 0 {
		m := o.members[at]
		out := make([]byte, 0, len(o.raw)-(m.valEnd-m.valStart)+len(enc))
		out = append(out, o.raw[:m.valStart]...)
		out = append(out, enc...)
		return append(out, o.raw[m.valEnd:]...), nil
	}
	open := skipSpace(o.raw, 0) + 1
	out := make([]byte, 0, len(o.raw)+len(key)+len(enc)+4)
	out = append(out, o.raw[:open]...)
	out = appendCanonicalString(out, key)
	out = append(out, ':')
	out = append(out, enc...)
	if len(o.members) > 0 {
		out = append(out, ',')
	}
	return append(out, o.raw[open:]...), nil
}

// Rename returns the definition raw with its top-level "name" replaced by
// name (added if absent). Every other byte, including unknown fields, key
// order and whitespace, is preserved.
func Rename(raw json.RawMessage, name string) (json.RawMessage, error) {
	obj, err := parseObject(raw)
	if err != nil {
		return nil, fmt.Errorf("rename to %q: %w", name, err)
	}
	out, err := obj.withString("name", name)
	if err != nil {
		return nil, fmt.Errorf("rename to %q: %w", name, err)
	}
	return out, nil
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) {
		switch raw[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the offset just past the string starting at raw[i].
func skipString(raw []byte, i int) int {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(raw)
}

// skipValue returns the offset just past the valid JSON value at raw[i].
func skipValue(raw []byte, i int) int {
	switch raw[i] {
	case '"':
		return skipString(raw, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(raw); j++ {
			switch raw[j] {
			case '"':
				j = skipString(raw, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(raw)
	default:
		j := i
		for j < len(raw) {
			switch raw[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return j
			}
			j++
		}
		return j
	}
}

// decodeString decodes a JSON string literal. The common case, without
// escapes, costs one allocation.
func decodeString(lit []byte) (string, error) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return "", errors.New("not a string")
	}
	body := lit[1 : len(lit)-1]
	simple := utf8.Valid(body)
	for _, c := range body {
		if c == '\\' {
			simple = false
			break
		}
	}
	if simple {
		return string(body), nil
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return "", err
	}
	return s, nil
}

// appendCanonicalString appends s as an RFC 8785 string: only '"', '\\'
// and control characters are escaped, the latter in their short form when
// one exists and as lower-case \u00xx otherwise. Invalid UTF-8 is replaced
// by U+FFFD, as encoding/json does.
func appendCanonicalString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
		i++
	}
	return append(dst, '"')
}

// WithoutMembers returns the object raw without its top-level members
// whose keys drop reports, every other member's bytes unchanged; raw
// itself (not a copy) when it has none of them.
func WithoutMembers(raw json.RawMessage, drop func(key string) bool) (json.RawMessage, error) {
	obj, err := parseObject(raw)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, m := range obj.members {
		if drop(m.key) {
			n++
		}
	}
	if n == 0 {
		return raw, nil
	}
	out := make([]byte, 0, len(raw))
	out = append(out, '{')
	for _, m := range obj.members {
		if drop(m.key) {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = appendCanonicalString(out, m.key)
		out = append(out, ':')
		out = append(out, obj.raw[m.valStart:m.valEnd]...)
	}
	return append(out, '}'), nil
}
