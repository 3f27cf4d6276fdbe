package fastpath

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestParseFastMessage(t *testing.T) {
	for _, tc := range []struct {
		body string
		ok   bool
		want Message
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a_b","arguments":{"x":1}}}`, true,
			Message{Method: "tools/call", ID: json.RawMessage("1"), Name: "a_b", Args: json.RawMessage(`{"x":1}`)}},
		{`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"a_b"}}`, true,
			Message{Method: "tools/call", ID: json.RawMessage(`"s"`), Name: "a_b"}},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s"}}`, true,
			Message{Method: "notifications/cancelled", CancelID: json.RawMessage(`"s"`)}},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"progressToken":1}}}`, false, Message{}},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"a"}}`, false, Message{}},
		{`{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"a"}}`, false, Message{}},
		{`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"a"}}`, false, Message{}},
		{`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"a"}}`, false, Message{}},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"a"}}`, false, Message{}},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":[1]}}`, false, Message{}},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":""}}`, false, Message{}},
		{`{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"a"}}`, false, Message{}},
		{`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}]`, false, Message{}},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"tools/call"}}`, false, Message{}},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}`, false, Message{}},
	} {
		got, ok := ParseMessage([]byte(tc.body))
		if ok != tc.ok || ok && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v %v, want %+v %v", tc.body, got, ok, tc.want, tc.ok)
		}
	}
}

func TestLoopback(t *testing.T) {
	for host, want := range map[string]bool{"localhost:8080": true, "127.0.0.1": true, "[::1]:80": true,
		"127.0.0.1:9": true, "example.com:80": false, "10.0.0.1": false, "": false} {
		if got := Loopback(host); got != want {
			t.Errorf("loopback(%q) = %v", host, got)
		}
	}
}

// Invalid JSON that fastjson's parser alone would take, ids JSON does not
// write, and results the fast path must not pass through as they came.
func TestFastPathStrictness(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":NaN}}}`,
		`{"jsonrpc":"2.0","id":007,"method":"tools/call","params":{"name":"a"}}`,
		`{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{"name":"a"}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\x01\"}}",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"a"}}`,
	} {
		if _, ok := ParseMessage([]byte(body)); ok {
			t.Errorf("parseFastMessage took %q", body)
		}
	}
}

// parseStatelessCall refuses, without panicking, every body that lacks
// what it needs or has more.
func TestParseStatelessCallRefuses(t *testing.T) {
	meta := `"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	good := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `,"name":"a_b","arguments":{}}}`
	if _, ok := ParseStatelessCall([]byte(good)); !ok {
		t.Fatalf("refused %s", good)
	}
	for _, body := range []string{
		`{"x":"2.0","id":1,"method":"tools/call","params":{` + meta + `,"name":"a_b"}}`,
		`{"jsonrpc":2,"id":1,"method":"tools/call","params":{` + meta + `,"name":"a_b"}}`,
		`{"jsonrpc":"2.0","x":1,"method":"tools/call","params":{` + meta + `,"name":"a_b"}}`,
		`{"jsonrpc":"2.0","id":1,"x":"tools/call","params":{` + meta + `,"name":"a_b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","x":{` + meta + `,"name":"a_b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[]}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a_b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `,"name":7}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `,"name":"a_b","arguments":[]}}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{` + meta + `,"name":"a_b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{},"name":"a_b"}}`,
		// a progress token (or anything else for the backend) in _meta: the go-sdk's path passes it on
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"p","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"a_b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"2026-07-28","traceparent":"00-x"},"name":"a_b"}}`,
		`[` + good + `]`,
	} {
		if _, ok := ParseStatelessCall([]byte(body)); ok {
			t.Errorf("took %s", body)
		}
	}
}
