package jsontest

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// Deep is n opening brackets: past mcpwire.MaxDepth, and (at 100,000) deep
// enough to overflow the stack of a parser that recurses unbounded.
func Deep(n int) []byte { return bytes.Repeat([]byte("["), n) }

// DeepIn is s with a value nested n deep in place of its first "{}".
func DeepIn(s string, n int) []byte {
	deep := strings.Repeat("[", n) + strings.Repeat("]", n)
	return []byte(strings.Replace(s, "{}", "{\"x\":"+deep+"}", 1))
}

// Object decodes data with encoding/json as an object, members by exact
// name (of a repeated name, the last, as encoding/json keeps it).
func Object(t testing.TB, what string, data []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		t.Fatalf("%s: encoding/json does not read an object: %v\n%q", what, err, data)
	}
	return m
}

// String decodes raw with encoding/json as a string.
func String(t testing.TB, what string, raw json.RawMessage) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s: encoding/json does not read a string from %q: %v", what, raw, err)
	}
	return s
}

// Same reports whether a and b are the same JSON value for encoding/json,
// numbers compared by their text.
func Same(a, b []byte) bool {
	decode := func(data []byte) (any, bool) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		return v, dec.Decode(&v) == nil && !dec.More()
	}
	va, oka := decode(a)
	vb, okb := decode(b)
	return oka && okb && reflect.DeepEqual(va, vb)
}

// ListenBody is a 2026-07-28 subscriptions/listen request with request id
// id (JSON) and the notifications object notifications.
func ListenBody(id, notifications string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":{"_meta":{` +
		`"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"raw","version":""},` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"notifications":` + notifications + `}}`
}

// RouteSchema is a tool input schema that binds three arguments, one
// nested, to headers (Mcp-Param-*).
const RouteSchema = `{"type":"object","properties":{
	"region":{"type":"string","x-mcp-header":"Region"},
	"count":{"type":"integer","x-mcp-header":"Count"},
	"opts":{"type":"object","properties":{"fast":{"type":"boolean","x-mcp-header":"Fast"}}},
	"note":{"type":"string"}}}`
