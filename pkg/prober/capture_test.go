package prober

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// TestParser feeds bodies to the capture parser in chunks of every size and
// checks which list results are captured.
func TestParser(t *testing.T) {
	const tools = `{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"a"}],"nextCursor":"x"}}`
	cases := []struct {
		name      string
		json      bool   // whole-body JSON rather than an event stream
		body      string // the response body
		want      string // captured result for id 7 ("" = none)
		notListed bool   // id 7 was never registered
	}{
		{name: "json body", json: true, body: tools, want: `{"tools":[{"name":"a"}],"nextCursor":"x"}`},
		{name: "sse event", body: "event: message\ndata: " + tools + "\n\n", want: `{"tools":[{"name":"a"}],"nextCursor":"x"}`},
		{name: "crlf and no space", body: "data:" + tools + "\r\n\r\n", want: `{"tools":[{"name":"a"}],"nextCursor":"x"}`},
		{name: "split data lines", body: "data: {\"jsonrpc\":\"2.0\",\"id\":7,\ndata: \"result\":{\"tools\":[]}}\n\n", want: `{"tools":[]}`},
		{name: "after a notification and a priming event", body: "id: 1\ndata:\n\n" +
			"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n" +
			"data: " + tools + "\n\n", want: `{"tools":[{"name":"a"}],"nextCursor":"x"}`},
		{name: "event ended by eof", body: "data: " + tools, want: `{"tools":[{"name":"a"}],"nextCursor":"x"}`},
		{name: "other id", body: "data: " + strings.Replace(tools, `"id":7`, `"id":8`, 1) + "\n\n"},
		{name: "error response", body: "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-1,\"message\":\"x\"}}\n\n"},
		{name: "not registered", body: "data: " + tools + "\n\n", notListed: true},
		{name: "truncated json body", json: true, body: tools[:40]},
		{name: "json batch", json: true, body: `[{"jsonrpc":"2.0","method":"n"},` + tools + `]`, want: `{"tools":[{"name":"a"}],"nextCursor":"x"}`},
		{name: "string id", body: "data: " + strings.Replace(tools, `"id":7`, `"id":"7"`, 1) + "\n\n"},
		{name: "cr line ends", body: "data: " + tools + "\r\r", want: `{"tools":[{"name":"a"}],"nextCursor":"x"}`},
	}
	key := listKey{methodTools, "c"}
	for _, tc := range cases {
		for _, chunk := range []int{1, 3, 17, len(tc.body)} {
			c := newCapture()
			if !tc.notListed {
				c.expect(mcpwire.IntID(7), key)
			}
			p := newParser(c, tc.json, DefaultMaxMessage)
			for i := 0; i < len(tc.body); i += chunk {
				end := min(i+chunk, len(tc.body))
				p.feed([]byte(tc.body[i:end]), false)
			}
			p.feed(nil, true)
			got, ok := c.take(key)
			if ok != (tc.want != "") || string(got) != tc.want {
				t.Errorf("%s (chunks of %d): captured %q (%v), want %q", tc.name, chunk, got, ok, tc.want)
			}
		}
	}
}

// TestParserBounds: a body or an event over the message bound is not
// captured (the Guard under the parser refuses it first).
func TestParserBounds(t *testing.T) {
	const tools = `{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}`
	split := "data:" + tools[:17] + "\ndata:" + tools[17:] + "\n\n" // lines of len(tools)+10 bytes
	key := listKey{methodTools, ""}
	for _, tc := range []struct {
		name  string
		json  bool
		body  string
		bound int
		want  bool
	}{
		{"json at the bound", true, tools, len(tools), true},
		{"json over the bound", true, tools, len(tools) - 1, false},
		{"event at the bound", false, split, len(tools) + 10, true},
		{"event over the bound", false, split, len(tools) + 9, false},
	} {
		c := newCapture()
		c.expect(mcpwire.IntID(7), key)
		newParser(c, tc.json, tc.bound).feed([]byte(tc.body), true)
		if _, ok := c.take(key); ok != tc.want {
			t.Errorf("%s: captured %v, want %v", tc.name, ok, tc.want)
		}
	}
}

func TestCaptureResetForgetsPending(t *testing.T) {
	c := newCapture()
	key := listKey{methodPrompts, ""}
	c.expect(mcpwire.IntID(1), key)
	c.reset()
	c.deliver([]byte(`{"jsonrpc":"2.0","id":1,"result":{"prompts":[]}}`))
	if r, ok := c.take(key); ok {
		t.Fatalf("captured %s after reset", r)
	}
	c.expect(mcpwire.IntID(2), key)
	c.deliver([]byte(`{"jsonrpc":"2.0","id":2,"result":{"prompts":[]}}`))
	r, ok := c.take(key)
	if !ok || !json.Valid(r) {
		t.Fatalf("take: %s, %v", r, ok)
	}
	if _, ok := c.take(key); ok {
		t.Fatal("second take found the result again")
	}
}
