package fastpath

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/edge/internal/jsontest"
	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// The fuzz targets of the edge's hand-written parsers of client and
// backend bytes. Each compares the parser with encoding/json or net/http
// on the same bytes: what the parser takes, the reference takes too, and
// reads the same way. Run one at a time:
//
//	go test -run '^$' -fuzz '^FuzzLaneHead$' -fuzztime 15s ./pkg/edge/

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
	f.Add(jsontest.Deep(100000))
	f.Add(jsontest.DeepIn(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{}}}`, mcpwire.MaxDepth+1))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, ok := ParseMessage(data)
		if !ok {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("took invalid JSON %q", data)
		}
		top := jsontest.Object(t, "message", data)
		if v := jsontest.String(t, "jsonrpc", top["jsonrpc"]); v != "2.0" {
			t.Fatalf("jsonrpc %q", v)
		}
		if method := jsontest.String(t, "method", top["method"]); method != m.Method {
			t.Fatalf("method %q, encoding/json %q", m.Method, method)
		}
		params := jsontest.Object(t, "params", top["params"])
		switch m.Method {
		case "tools/call":
			if !bytes.Equal(m.ID, top["id"]) || !ValidID(m.ID) {
				t.Fatalf("id %s, encoding/json %s", m.ID, top["id"])
			}
			if name := jsontest.String(t, "name", params["name"]); name != m.Name || name == "" {
				t.Fatalf("name %q, encoding/json %q", m.Name, name)
			}
			args, has := params["arguments"]
			if has != (m.Args != nil) || has && (!json.Valid(m.Args) || !jsontest.Same(m.Args, args) || jsontest.Object(t, "arguments", args) == nil) {
				t.Fatalf("arguments %s, encoding/json %s", m.Args, args)
			}
			if m.CancelID != nil {
				t.Fatalf("a call with a cancelled id %s", m.CancelID)
			}
		case "notifications/cancelled":
			if _, has := top["id"]; has || m.ID != nil {
				t.Fatalf("a notification with an id")
			}
			if !bytes.Equal(m.CancelID, params["requestId"]) || !ValidID(m.CancelID) {
				t.Fatalf("requestId %s, encoding/json %s", m.CancelID, params["requestId"])
			}
		default:
			t.Fatalf("took method %q", m.Method)
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
	top := jsontest.Object(t, "request", data)
	if len(top) != 4 || jsontest.String(t, "jsonrpc", top["jsonrpc"]) != "2.0" || jsontest.String(t, "method", top["method"]) != method {
		t.Fatalf("took %q", data)
	}
	if !bytes.Equal(id, top["id"]) || !ValidID(id) {
		t.Fatalf("id %s, encoding/json %s", id, top["id"])
	}
	params := jsontest.Object(t, "params", top["params"])
	meta := jsontest.Object(t, "_meta", params["_meta"])
	if v := jsontest.String(t, "protocol version", meta["io.modelcontextprotocol/protocolVersion"]); v != admission.FirstNewProtocol {
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
	f.Add(jsontest.Deep(100000))
	f.Add(jsontest.DeepIn(call("1", `,"name":"a","arguments":{}`), mcpwire.MaxDepth+1))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, ok := ParseStatelessCall(data)
		if !ok {
			return
		}
		params := checkNewRequest(t, data, "tools/call", m.ID)
		for k := range params {
			if k != "_meta" && k != "name" && k != "arguments" {
				t.Fatalf("took params member %q", k)
			}
		}
		if name := jsontest.String(t, "name", params["name"]); name != m.Name || name == "" {
			t.Fatalf("name %q, encoding/json %q", m.Name, name)
		}
		args, has := params["arguments"]
		if has != (m.Args != nil) || has && (!json.Valid(m.Args) || !jsontest.Same(m.Args, args) || jsontest.Object(t, "arguments", args) == nil) {
			t.Fatalf("arguments %s, encoding/json %s", m.Args, args)
		}
		if m.Method != "tools/call" {
			t.Fatalf("method %q", m.Method)
		}
	})
}

// FuzzParseListen: a listen request parseListen takes is JSON for
// encoding/json, which reads the same id and the same list_changed
// subscriptions (booleans, at least one true, no other member) from it.
func FuzzParseListen(f *testing.F) {
	for _, s := range []string{
		jsontest.ListenBody("1", `{"toolsListChanged":true}`),
		jsontest.ListenBody(`"l"`, `{"toolsListChanged":true,"promptsListChanged":false,"resourcesListChanged":true}`),
		jsontest.ListenBody("2", `{"toolsListChanged":true,"toolsListChanged":false}`),
		jsontest.ListenBody("3", `{"resourceSubscriptions":["x"],"toolsListChanged":true}`),
		jsontest.ListenBody("4", `{"toolsListChanged":false}`),
		strings.Replace(jsontest.ListenBody("5", `{"promptsListChanged":true}`), `"raw"`, `"\ud800"`, 1),
		strings.Replace(jsontest.ListenBody("6", `{"promptsListChanged":true}`), `{"roots"`, `{"x":1e999,"roots"`, 1),
	} {
		f.Add([]byte(s))
	}
	f.Add(jsontest.Deep(100000))
	f.Add(jsontest.DeepIn(jsontest.ListenBody("1", `{"toolsListChanged":true}`), mcpwire.MaxDepth+1))
	f.Fuzz(func(t *testing.T, data []byte) {
		lr, ok := ParseListen(data, admission.FirstNewProtocol)
		if !ok {
			return
		}
		params := checkNewRequest(t, data, "subscriptions/listen", lr.ID)
		if len(params) != 2 {
			t.Fatalf("params of %d members", len(params))
		}
		var subs map[string]bool
		if err := json.Unmarshal(params["notifications"], &subs); err != nil {
			t.Fatalf("notifications: %v", err)
		}
		var want uint8
		for k, on := range subs {
			bit := map[string]uint8{"toolsListChanged": ListTools, "promptsListChanged": ListPrompts,
				"resourcesListChanged": ListResources}[k]
			if bit == 0 {
				t.Fatalf("took subscription %q", k)
			}
			if on {
				want |= bit
			}
		}
		if want == 0 || lr.Subs != want {
			t.Fatalf("subscriptions %b, encoding/json %b", lr.Subs, want)
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
	f.Add(jsontest.Deep(100000), "a", "", "")
	f.Add(jsontest.DeepIn(`{"a":{}}`, mcpwire.MaxDepth+1), "a.x", "a", "v")
	f.Fuzz(func(t *testing.T, args []byte, path1, path2, extra string) {
		var bindings []catalog.ParamBinding
		for i, p := range []string{path1, path2} {
			if p != "" {
				bindings = append(bindings, catalog.ParamBinding{Path: strings.Split(p, "."), Header: "H" + strconv.Itoa(i)})
			}
		}
		// Whatever the headers, no panic.
		_ = CheckParamHeaders(http.Header{"Mcp-Param-H0": {extra}, "Mcp-Param-H1": {extra}}, args, bindings)

		var root map[string]json.RawMessage
		if len(args) > 0 && json.Unmarshal(args, &root) != nil {
			if err := CheckParamHeaders(http.Header{"Mcp-Param-H0": {"x"}}, args, bindings); err != nil {
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
		if err := CheckParamHeaders(h, args, bindings); err != nil {
			t.Fatalf("arguments %s, headers %v: %v", args, h, err)
		}
		for _, key := range primitives {
			bad := h.Clone()
			bad.Set(key, "x"+bad.Get(key))
			if err := CheckParamHeaders(bad, args, bindings); !errors.Is(err, ErrHeaderMismatch) {
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
