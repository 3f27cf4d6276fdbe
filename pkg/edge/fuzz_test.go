package edge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fastjson"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// The fuzz targets of the edge's hand-written parsers of client and
// backend bytes. Each compares the parser with encoding/json or net/http
// on the same bytes: what the parser takes, the reference takes too, and
// reads the same way. Run one at a time:
//
//	go test -run '^$' -fuzz '^FuzzLaneHead$' -fuzztime 15s ./pkg/edge/

// deepJSON is n opening brackets: past mcpwire.MaxDepth, and (at 100,000)
// deep enough to overflow the stack of a parser that recurses unbounded.
func deepJSON(n int) []byte { return bytes.Repeat([]byte("["), n) }

// deepIn is s with a value nested n deep in place of its first "{}".
func deepIn(s string, n int) []byte {
	deep := strings.Repeat("[", n) + strings.Repeat("]", n)
	return []byte(strings.Replace(s, "{}", "{\"x\":"+deep+"}", 1))
}

// jsonObject decodes data with encoding/json as an object, members by
// exact name (of a repeated name, the last, as encoding/json keeps it).
func jsonObject(t *testing.T, what string, data []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		t.Fatalf("%s: encoding/json does not read an object: %v\n%q", what, err, data)
	}
	return m
}

// jsonString decodes raw with encoding/json as a string.
func jsonString(t *testing.T, what string, raw json.RawMessage) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s: encoding/json does not read a string from %q: %v", what, raw, err)
	}
	return s
}

// jsonSame reports whether a and b are the same JSON value for
// encoding/json, numbers compared by their text.
func jsonSame(a, b []byte) bool {
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

// FuzzLaneHead: a request head parseLaneHead takes, http.ReadRequest
// takes too, and reads the same: method, URL, proto, Host, Content-Length,
// every header value, a connection kept alive, and the same length of
// head (so the body starts at the same byte).
func FuzzLaneHead(f *testing.F) {
	head := "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\n" +
		"Accept: application/json, text/event-stream\r\nMcp-Session-Id: S1\r\nMcp-Protocol-Version: 2025-11-25\r\n" +
		"Content-Length: 2\r\n\r\n{}"
	for _, s := range []string{
		head,
		"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nX: y\r\n\r\n{}",
		"POST /mcp HTTP/1.1\r\nhost:h:1\r\ncontent-length:0\r\n\r\n",
		"POST /mcp HTTP/1.1\r\nHost: [::1]:80\r\nConnection: keep-alive\r\nContent-Length: 000\r\nX-A: 1\r\nx-a:\t2 \r\n\r\nPOST",
		"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nX:\r\nÿ-\x7e: \x80\xff\r\n\r\n",
		"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n X: folded\r\n\r\n",
		"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
		"POST /mcp HTTP/1.1\nHost: h\nContent-Length: 0\n\n",
		"GET /mcp HTTP/1.1\r\nHost: h\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, n, ok := parseLaneHead(raw)
		if !ok {
			return
		}
		// The head read by ReadRequest is the same length: what it leaves
		// unread (in its buffer or in the source) is the rest.
		src := bytes.NewReader(raw)
		br := bufio.NewReaderSize(src, len(raw)+16)
		want, err := http.ReadRequest(br)
		if err != nil {
			t.Fatalf("ReadRequest refuses what parseLaneHead took: %v\n%q", err, raw)
		}
		if consumed := len(raw) - br.Buffered() - src.Len(); consumed != n {
			t.Fatalf("head of %d bytes, ReadRequest read %d\n%q", n, consumed, raw)
		}
		if want.Close || want.TransferEncoding != nil {
			t.Fatalf("ReadRequest reads Close %v, TransferEncoding %q\n%q", want.Close, want.TransferEncoding, raw)
		}
		// checkLaneHead compares method, URL, proto, Host, length, every
		// header and the body.
		checkLaneHead(t, string(raw))
		// The head alone is the same head.
		if _, m, ok := parseLaneHead(raw[:n]); !ok || m != n {
			t.Fatalf("the head alone: %d, %v; want %d\n%q", m, ok, n, raw)
		}
	})
}

// FuzzParseFastMessage: a message parseFastMessage takes is JSON for
// encoding/json, and encoding/json reads the same method, id (byte for
// byte: the edge echoes it as sent), name, arguments and cancelled
// request id from it.
func FuzzParseFastMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"alpha_echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"x","arguments":{"n":1.50,"s":"\u00e9\ud83d\ude00","a":[null,true]}}}`,
		`{"method":"tools/call","params":{"arguments":{},"name":"n\"q"},"id":-42,"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"gone"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r","requestId":"s"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/call","params":{"name":"a"}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"\xff\"}}",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\ud800"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}]`,
	} {
		f.Add([]byte(s))
	}
	f.Add(deepJSON(100000))
	f.Add(deepIn(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{}}}`, mcpwire.MaxDepth+1))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, ok := parseFastMessage(data)
		if !ok {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("took invalid JSON %q", data)
		}
		top := jsonObject(t, "message", data)
		if v := jsonString(t, "jsonrpc", top["jsonrpc"]); v != "2.0" {
			t.Fatalf("jsonrpc %q", v)
		}
		if method := jsonString(t, "method", top["method"]); method != m.method {
			t.Fatalf("method %q, encoding/json %q", m.method, method)
		}
		params := jsonObject(t, "params", top["params"])
		switch m.method {
		case "tools/call":
			if !bytes.Equal(m.id, top["id"]) || !validID(m.id) {
				t.Fatalf("id %s, encoding/json %s", m.id, top["id"])
			}
			if name := jsonString(t, "name", params["name"]); name != m.name || name == "" {
				t.Fatalf("name %q, encoding/json %q", m.name, name)
			}
			args, has := params["arguments"]
			if has != (m.args != nil) || has && (!json.Valid(m.args) || !jsonSame(m.args, args) || jsonObject(t, "arguments", args) == nil) {
				t.Fatalf("arguments %s, encoding/json %s", m.args, args)
			}
			if m.cancelID != nil {
				t.Fatalf("a call with a cancelled id %s", m.cancelID)
			}
		case "notifications/cancelled":
			if _, has := top["id"]; has || m.id != nil {
				t.Fatalf("a notification with an id")
			}
			if !bytes.Equal(m.cancelID, params["requestId"]) || !validID(m.cancelID) {
				t.Fatalf("requestId %s, encoding/json %s", m.cancelID, params["requestId"])
			}
		default:
			t.Fatalf("took method %q", m.method)
		}
	})
}

// statelessMeta is the _meta of a 2026-07-28 request.
const statelessMeta = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":""},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`

// checkNewRequest checks what parseNewRequest took: jsonrpc 2.0, the
// method, the id as sent, the _meta of version, exactly the four members
// (none twice), and returns the params.
func checkNewRequest(t *testing.T, data []byte, method string, id json.RawMessage) map[string]json.RawMessage {
	t.Helper()
	if !json.Valid(data) {
		t.Fatalf("took invalid JSON %q", data)
	}
	top := jsonObject(t, "request", data)
	if len(top) != 4 || jsonString(t, "jsonrpc", top["jsonrpc"]) != "2.0" || jsonString(t, "method", top["method"]) != method {
		t.Fatalf("took %q", data)
	}
	if !bytes.Equal(id, top["id"]) || !validID(id) {
		t.Fatalf("id %s, encoding/json %s", id, top["id"])
	}
	params := jsonObject(t, "params", top["params"])
	meta := jsonObject(t, "_meta", params["_meta"])
	if v := jsonString(t, "protocol version", meta["io.modelcontextprotocol/protocolVersion"]); v != newProtocol {
		t.Fatalf("protocol version %q", v)
	}
	var caps mcp.ClientCapabilities
	if err := json.Unmarshal(meta["io.modelcontextprotocol/clientCapabilities"], &caps); err != nil {
		t.Fatalf("client capabilities: %v", err)
	}
	var anyMeta map[string]any // as the go-sdk decodes it
	if err := json.Unmarshal(params["_meta"], &anyMeta); err != nil {
		t.Fatalf("_meta: %v", err)
	}
	return params
}

// FuzzParseStatelessCall: a 2026-07-28 tools/call parseStatelessCall
// takes is JSON for encoding/json, with exactly its four members, and
// encoding/json reads the same id, name and arguments from it.
func FuzzParseStatelessCall(f *testing.F) {
	call := func(id, params string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + statelessMeta + params + `}}`
	}
	for _, s := range []string{
		call("1", `,"name":"alpha_echo","arguments":{"text":"hi"}`),
		call(`"x"`, `,"name":"a","arguments":{"n":1e2,"s":"\u00e9"}`),
		call("2", `,"arguments":{},"name":"\u0061"`),
		call("3", `,"name":"a","name":"b"`),
		call("4", ",\"name\":\"\xff\""),
		call("5", `,"name":"a","arguments":null`),
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Add(deepJSON(100000))
	f.Add(deepIn(call("1", `,"name":"a","arguments":{}`), mcpwire.MaxDepth+1))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, ok := parseStatelessCall(data)
		if !ok {
			return
		}
		params := checkNewRequest(t, data, "tools/call", m.id)
		for k := range params {
			if k != "_meta" && k != "name" && k != "arguments" {
				t.Fatalf("took params member %q", k)
			}
		}
		if name := jsonString(t, "name", params["name"]); name != m.name || name == "" {
			t.Fatalf("name %q, encoding/json %q", m.name, name)
		}
		args, has := params["arguments"]
		if has != (m.args != nil) || has && (!json.Valid(m.args) || !jsonSame(m.args, args) || jsonObject(t, "arguments", args) == nil) {
			t.Fatalf("arguments %s, encoding/json %s", m.args, args)
		}
		if m.method != "tools/call" {
			t.Fatalf("method %q", m.method)
		}
	})
}

// FuzzParseListen: a listen request parseListen takes is JSON for
// encoding/json, which reads the same id and the same list_changed
// subscriptions (booleans, at least one true, no other member) from it.
func FuzzParseListen(f *testing.F) {
	for _, s := range []string{
		listenBody("1", `{"toolsListChanged":true}`),
		listenBody(`"l"`, `{"toolsListChanged":true,"promptsListChanged":false,"resourcesListChanged":true}`),
		listenBody("2", `{"toolsListChanged":true,"toolsListChanged":false}`),
		listenBody("3", `{"resourceSubscriptions":["x"],"toolsListChanged":true}`),
		listenBody("4", `{"toolsListChanged":false}`),
		strings.Replace(listenBody("5", `{"promptsListChanged":true}`), `"raw"`, `"\ud800"`, 1),
		strings.Replace(listenBody("6", `{"promptsListChanged":true}`), `{"roots"`, `{"x":1e999,"roots"`, 1),
	} {
		f.Add([]byte(s))
	}
	f.Add(deepJSON(100000))
	f.Add(deepIn(listenBody("1", `{"toolsListChanged":true}`), mcpwire.MaxDepth+1))
	f.Fuzz(func(t *testing.T, data []byte) {
		lr, ok := parseListen(data, newProtocol)
		if !ok {
			return
		}
		params := checkNewRequest(t, data, "subscriptions/listen", lr.id)
		if len(params) != 2 {
			t.Fatalf("params of %d members", len(params))
		}
		var subs map[string]bool
		if err := json.Unmarshal(params["notifications"], &subs); err != nil {
			t.Fatalf("notifications: %v", err)
		}
		var want uint8
		for k, on := range subs {
			bit := map[string]uint8{"toolsListChanged": pendingTools, "promptsListChanged": pendingPrompts,
				"resourcesListChanged": pendingResources}[k]
			if bit == 0 {
				t.Fatalf("took subscription %q", k)
			}
			if on {
				want |= bit
			}
		}
		if want == 0 || lr.subs != want {
			t.Fatalf("subscriptions %b, encoding/json %b", lr.subs, want)
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

// FuzzPlainToolResult: a result plainToolResult passes on as it came is
// JSON, decodeToolResult decodes it on its fast path (text content only),
// and the isError and _meta the edge reads from it (resultShape) are
// those of the decoded result.
func FuzzPlainToolResult(f *testing.F) {
	for _, s := range toolResultSeeds {
		f.Add([]byte(s))
	}
	f.Add(deepJSON(100000))
	f.Add(deepIn(`{"content":[],"structuredContent":{}}`, mcpwire.MaxDepth+1))
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
	f.Add(deepJSON(100000))
	f.Add(deepIn(`{"content":[],"structuredContent":{}}`, mcpwire.MaxDepth+1))
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
	f.Add(deepJSON(100000), "fleetgate-1")
	f.Add(deepIn(`{"jsonrpc":"2.0","id":"fleetgate-1","result":{}}`, mcpwire.MaxDepth+1), "fleetgate-1")
	p := newPool(&http.Client{Transport: refusingTransport{}}, time.Second, 0, nil)
	defer p.closeAll()
	f.Fuzz(func(t *testing.T, data []byte, id string) {
		msg, err := p.findResponse(context.Background(), data, "http://backend.invalid/mcp", "s", id)
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
		if got := jsonString(t, "id", msg.ID); got != id {
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
			m := jsonObject(t, "message", raw)
			if _, isReq := m["method"]; isReq {
				continue
			}
			var got string
			if json.Unmarshal(m["id"], &got) == nil && got == id {
				found = true
				if r, ok := m["result"]; ok != (msg.Result != nil) || ok && !jsonSame(r, msg.Result) {
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

// FuzzCheckParamHeaders: checkParamHeaders never panics; headers set to
// the bound arguments' values (strings in =?base64?...?= form, integers
// and booleans as JSON writes them) pass, and a bound primitive's header
// changed fails with errHeaderMismatch.
func FuzzCheckParamHeaders(f *testing.F) {
	for _, s := range [][3]string{
		{`{"region":"eu","count":3,"opts":{"fast":true}}`, "region", "opts.fast"},
		{`{"count":1e2,"n":null}`, "count", "n"},
		{`{"s":"","x":1.5}`, "s", "x"},
		{`{"a":{"b":{"c":"\u00e9"}},"a":{"b":{"c":false}}}`, "a.b.c", "a.b"},
		{`{"big":9007199254740993,"neg":-9007199254740991}`, "big", "neg"},
		{`[1]`, "0", ""},
		{`{"x":1e400}`, "x", "y"},
		{`null`, "a", ""},
	} {
		f.Add([]byte(s[0]), s[1], s[2], "")
	}
	f.Add(deepJSON(100000), "a", "", "")
	f.Add(deepIn(`{"a":{}}`, mcpwire.MaxDepth+1), "a.x", "a", "v")
	f.Fuzz(func(t *testing.T, args []byte, path1, path2, extra string) {
		var bindings []catalog.ParamBinding
		for i, p := range []string{path1, path2} {
			if p != "" {
				bindings = append(bindings, catalog.ParamBinding{Path: strings.Split(p, "."), Header: "H" + strconv.Itoa(i)})
			}
		}
		// Whatever the headers, no panic.
		_ = checkParamHeaders(http.Header{"Mcp-Param-H0": {extra}, "Mcp-Param-H1": {extra}}, args, bindings)

		var root map[string]json.RawMessage
		if len(args) > 0 && json.Unmarshal(args, &root) != nil {
			if err := checkParamHeaders(http.Header{"Mcp-Param-H0": {"x"}}, args, bindings); err != nil {
				t.Fatalf("arguments %q that do not decode are checked: %v", args, err)
			}
			return
		}
		h := http.Header{}
		var primitives []string // headers of bound primitives
		for _, b := range bindings {
			raw, ok := lookupArg(root, b.Path)
			if !ok || string(raw) == "null" {
				continue
			}
			var v any
			if json.Unmarshal(raw, &v) != nil {
				return // not a primitive: refused whatever the header
			}
			key := "Mcp-Param-" + b.Header
			switch v := v.(type) {
			case string:
				h.Set(key, "=?base64?"+base64.StdEncoding.EncodeToString([]byte(v))+"?=")
			case bool:
				h.Set(key, strconv.FormatBool(v))
			case float64:
				if v != math.Trunc(v) || math.Abs(v) > maxSafeInteger {
					return
				}
				h.Set(key, strconv.FormatInt(int64(v), 10))
			default:
				return
			}
			primitives = append(primitives, key)
		}
		if err := checkParamHeaders(h, args, bindings); err != nil {
			t.Fatalf("arguments %s, headers %v: %v", args, h, err)
		}
		for _, key := range primitives {
			bad := h.Clone()
			bad.Set(key, "x"+bad.Get(key))
			if err := checkParamHeaders(bad, args, bindings); !errors.Is(err, errHeaderMismatch) {
				t.Fatalf("arguments %s, headers %v: %v, want a mismatch", args, bad, err)
			}
		}
	})
}

// lookupArg is the argument at path in root, objects decoded by
// encoding/json.
func lookupArg(root map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	obj := root
	for i, part := range path {
		raw, ok := obj[part]
		if !ok {
			return nil, false
		}
		if i == len(path)-1 {
			return raw, true
		}
		obj = nil
		if json.Unmarshal(raw, &obj) != nil {
			return nil, false
		}
	}
	return nil, false
}

// FuzzReadPostResponse: a backend's response head parseResponseHead
// takes, http.ReadResponse takes too and reads the same (status, framing,
// Close, every header value); the body reads the same, or fails with both,
// and leaves the reader at the same next byte.
func FuzzReadPostResponse(f *testing.F) {
	event := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}\n\n"
	sse := "HTTP/1.1 200 OK\r\nCache-Control: no-cache, no-transform\r\nConnection: keep-alive\r\n" +
		"Content-Type: text/event-stream\r\nMcp-Session-Id: S1\r\nDate: Mon, 30 Nov 2026 02:00:00 GMT\r\n" +
		"Transfer-Encoding: chunked\r\n\r\n" + strconv.FormatInt(int64(len(event)), 16) + "\r\n" + event + "\r\n0\r\n\r\n"
	for _, s := range []string{
		sse,
		strings.Replace(sse, "0\r\n\r\n", "1;ext=1\r\nx\r\n0\r\nX-T: 1\r\n\r\n", 1),
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 9\r\n\r\nnot found",
		"HTTP/1.1 200\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 999 X\r\ntransfer-encoding: Chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\ngarbage\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\n" + sse,
	} {
		f.Add([]byte(s + "NEXT"))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if _, _, ok := parseResponseHead(raw); !ok {
			return // read by http.ReadResponse itself
		}
		gbr, wbr := bufio.NewReader(bytes.NewReader(raw)), bufio.NewReader(bytes.NewReader(raw))
		got, err := readPostResponse(gbr)
		if err != nil {
			t.Fatalf("parsed head, then %v", err)
		}
		want, err := http.ReadResponse(wbr, postRequest)
		if err != nil {
			t.Fatalf("ReadResponse refuses what parseResponseHead took: %v\n%q", err, raw)
		}
		if got.StatusCode != want.StatusCode || got.Status != want.Status || got.Close != want.Close || got.Proto != want.Proto ||
			got.ContentLength != want.ContentLength || !reflect.DeepEqual(got.TransferEncoding, want.TransferEncoding) ||
			!reflect.DeepEqual(got.Header, want.Header) {
			t.Fatalf("read\n%+v\nReadResponse\n%+v\n%q", got, want, raw)
		}
		gotBody, gerr := io.ReadAll(got.Body)
		wantBody, werr := io.ReadAll(want.Body)
		switch {
		case gerr == nil && werr != nil:
			t.Fatalf("body %q read, ReadResponse's fails: %v\n%q", gotBody, werr, raw)
		case gerr != nil && werr == nil && !strings.Contains(gerr.Error(), "more than"):
			t.Fatalf("body fails (%v), ReadResponse's reads %q\n%q", gerr, wantBody, raw)
		case gerr == nil && werr == nil:
			gotRest, _ := io.ReadAll(gbr)
			wantRest, _ := io.ReadAll(wbr)
			if !bytes.Equal(gotBody, wantBody) || !bytes.Equal(gotRest, wantRest) {
				t.Fatalf("body %q then %q; ReadResponse: %q then %q", gotBody, gotRest, wantBody, wantRest)
			}
		}
	})
}
