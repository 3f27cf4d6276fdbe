package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fastjson"

	"github.com/fleetgate/fleetgate/pkg/edge/internal/jsontest"
	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// The fuzz targets of the parsers of backend responses and tool results.
// Run one at a time:
//
//	go test -run '^$' -fuzz '^FuzzFindResponse$' -fuzztime 15s ./pkg/edge/backend/

// FuzzPlainToolResult: a result plainToolResult passes on as it came is
// JSON, decodeToolResult decodes it on its fast path (text content only),
// and the isError and _meta the edge reads from it (resultShape) are
// those of the decoded result.
func FuzzPlainToolResult(f *testing.F) {
	for _, s := range toolResultSeeds {
		f.Add([]byte(s))
	}
	f.Add(jsontest.Deep(100000))
	f.Add(jsontest.DeepIn(`{"content":[],"structuredContent":{}}`, mcpwire.MaxDepth+1))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !plainToolResult(raw) {
			return
		}
		if !json.Valid(raw) {
			t.Fatalf("plain but not JSON: %q", raw)
		}
		res, err := decodeToolResult(raw)
		if err != nil {
			t.Fatalf("plain but not decoded: %v\n%q", err, raw)
		}
		for i, c := range res.Content {
			if _, ok := c.(*mcp.TextContent); !ok {
				t.Fatalf("content %d is a %T\n%q", i, c, raw)
			}
		}
		v, err := fastjson.ParseBytes(raw)
		if err != nil {
			t.Fatal(err)
		}
		if v.GetBool("isError") != res.IsError || (v.Get("_meta") != nil) != (res.Meta != nil) {
			t.Fatalf("shape isError %v, _meta %v; decoded %v, %v\n%q", v.GetBool("isError"), v.Get("_meta") != nil, res.IsError, res.Meta, raw)
		}
	})
}

// FuzzDecodeToolResult: decodeToolResult takes only JSON, and what it
// decodes encodes (as the edge re-encodes a result) to JSON that it
// decodes again to the same encoding.
func FuzzDecodeToolResult(f *testing.F) {
	for _, s := range toolResultSeeds {
		f.Add([]byte(s))
	}
	f.Add(jsontest.Deep(100000))
	f.Add(jsontest.DeepIn(`{"content":[],"structuredContent":{}}`, mcpwire.MaxDepth+1))
	f.Fuzz(func(t *testing.T, raw []byte) {
		res, err := decodeToolResult(raw)
		if err != nil {
			return
		}
		if !json.Valid(raw) {
			t.Fatalf("decoded invalid JSON %q", raw)
		}
		enc, err := json.Marshal(res)
		if err != nil {
			t.Fatalf("decoded %q, which does not encode: %v", raw, err)
		}
		again, err := decodeToolResult(enc)
		if err != nil {
			t.Fatalf("re-encoded %s does not decode: %v", enc, err)
		}
		if enc2, err := json.Marshal(again); err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoded %s, then %s (%v)", enc, enc2, err)
		}
	})
}

// refusingTransport fails every request at once: the refusals findResponse
// sends a backend's requests go nowhere.
type refusingTransport struct{}

func (refusingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("no backend in a fuzz test")
}

// FuzzFindResponse: findResponse takes only JSON, and the message it
// returns is a response (no method) whose id is the string sought, as
// encoding/json reads it.
func FuzzFindResponse(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":"fleetgate-1","result":{"content":[{"type":"text","text":"hi"}]}}`,
		`[{"jsonrpc":"2.0","method":"notifications/progress","params":{}},{"jsonrpc":"2.0","id":"fleetgate-1","result":{}}]`,
		`[{"jsonrpc":"2.0","id":9,"method":"sampling/createMessage","params":{}},{"jsonrpc":"2.0","id":"fleetgate-1","error":{"code":-32000,"message":"no"}}]`,
		`{"jsonrpc":"2.0","id":"fleetgate-\u0031","result":{"isError":true,"content":[]}}`,
		`{"jsonrpc":"2.0","id":"fleetgate-1","id":"fleetgate-2","result":{}}`,
		`{"jsonrpc":"2.0","id":"fleetgate-1","error":null,"result":{}}`,
		`{"jsonrpc":"2.0","id":"fleetgate-1","error":{"code":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`[1]`,
	} {
		f.Add([]byte(s), "fleetgate-1")
	}
	f.Add(jsontest.Deep(100000), "fleetgate-1")
	f.Add(jsontest.DeepIn(`{"jsonrpc":"2.0","id":"fleetgate-1","result":{}}`, mcpwire.MaxDepth+1), "fleetgate-1")
	p := NewPool(&http.Client{Transport: refusingTransport{}}, time.Second, 0, nil)
	defer p.CloseAll()
	f.Fuzz(func(t *testing.T, data []byte, id string) {
		msg, err := p.findResponse(context.Background(), data, peer{url: "http://backend.invalid/mcp", sid: "s"}, id)
		if err != nil {
			if msg != nil {
				t.Fatalf("a message and an error: %v", err)
			}
			return
		}
		if msg == nil {
			t.Fatal("no message, no error")
		}
		if !json.Valid(data) {
			t.Fatalf("found a response in invalid JSON %q", data)
		}
		if got := jsontest.String(t, "id", msg.ID); got != id {
			t.Fatalf("response id %q, sought %q", got, id)
		}
		if msg.Method != "" {
			t.Fatalf("a request %q as the response", msg.Method)
		}
		// encoding/json finds the same message: an object without a
		// method whose id is the string sought.
		var msgs []json.RawMessage
		if data = bytes.TrimSpace(data); data[0] == '[' {
			if err := json.Unmarshal(data, &msgs); err != nil {
				t.Fatal(err)
			}
		} else {
			msgs = []json.RawMessage{data}
		}
		found := false
		for _, raw := range msgs {
			m := jsontest.Object(t, "message", raw)
			if _, isReq := m["method"]; isReq {
				continue
			}
			var got string
			if json.Unmarshal(m["id"], &got) == nil && got == id {
				found = true
				if r, ok := m["result"]; ok != (msg.Result != nil) || ok && !jsontest.Same(r, msg.Result) {
					t.Fatalf("result %s, encoding/json %s", msg.Result, r)
				}
				if msg.Result != nil && msg.shape.plain != plainToolResult(msg.Result) {
					t.Fatalf("shape plain %v of %s", msg.shape.plain, msg.Result)
				}
				break
			}
		}
		if !found {
			t.Fatalf("encoding/json finds no response to %q in %q", id, data)
		}
	})
}

// toolResultSeeds are backend tools/call results, plain and not.
var toolResultSeeds = []string{
	`{"content":[{"type":"text","text":"hi"}]}`,
	`{"content":[{"type":"text","text":"a","_meta":{"k":1}}],"structuredContent":{"b":1,"a":[2]},"isError":true,"_meta":{}}`,
	`{"content":[],"isError":false}`,
	`{}`,
	`{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}`,
	`{"content":[{"type":"text","text":"a","annotations":{"priority":0.5}}]}`,
	"{\"content\":[{\"type\":\"text\",\"text\":\"\xff\\ud800\"}],\"structuredContent\":1e999}",
	`{"content":[{"type":"text"}]}`,
	`{"content":[{"type":"text","text":"a","type":"text"}]}`,
	`{"Content":[{"type":"text","text":"a"}]}`,
	`{"content":null,"structuredContent":null}`,
	`{"content":[],"resultType":"complete"}`,
	`[]`,
}
