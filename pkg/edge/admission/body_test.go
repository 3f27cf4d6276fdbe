package admission

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	segjson "github.com/segmentio/encoding/json"

	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

func TestParseBody(t *testing.T) {
	call := func(id, name string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":{"x":1}}}`
	}
	cases := []struct {
		name, body string
		reason     string // of the refusal; "" when parsed
		calls      int
		tool       string // of the first message
		plain      bool
	}{
		{"plain call", call("1", "a_echo"), "", 1, "a_echo", true},
		{"call with _meta", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{"progressToken":1}}}`, "", 1, "t", false},
		{"call with unknown member", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"},"x":1}`, "", 1, "t", false},
		{"Method next to method", `{"jsonrpc":"2.0","id":1,"method":"tools/call","Method":"ping","params":{"name":"t"}}`, ReasonAmbiguousBody, 0, "", false},
		{"method twice", `{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":{"name":"t"}}`, ReasonAmbiguousBody, 0, "", false},
		{"NAME in params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","NAME":"u"}}`, ReasonAmbiguousBody, 0, "", false},
		{"name twice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","name":"u"}}`, ReasonAmbiguousBody, 0, "", false},
		{"ID next to id", `{"jsonrpc":"2.0","id":1,"ID":2,"method":"ping"}`, ReasonAmbiguousBody, 0, "", false},
		{"Params only", `{"jsonrpc":"2.0","id":1,"method":"tools/call","Params":{"name":"t"}}`, ReasonAmbiguousBody, 0, "", false},
		{"batch of calls", "[" + call("1", "a") + "," + call("2", "b") + "," + `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "]", "", 2, "a", true},
		{"batch over the limit", "[" + strings.Repeat(call("1", "a")+",", DefaultMaxBatch) + call("2", "a") + "]", ReasonBatchTooLarge, 0, "", false},
		{"empty batch", `[]`, ReasonMalformedBody, 0, "", false},
		{"batch of a number", `[1]`, ReasonMalformedBody, 0, "", false},
		{"not JSON", `{"jsonrpc":`, ReasonMalformedBody, 0, "", false},
		{"method a number", `{"jsonrpc":"2.0","id":1,"method":7}`, ReasonMalformedBody, 0, "", false},
		{"escaped name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\u005fecho"}}`, "", 1, "a_echo", false}, // escaped: the go-sdk serves it
		{"name with a lone surrogate", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\ud800"}}`, "", 1, "a\ufffd", false},
		{"notification", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"t"}}`, "", 0, "t", false},
		{"cancel", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`, "", 0, "", true},
		{"response", `{"jsonrpc":"2.0","id":1,"result":{}}`, "", 0, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ParseBody([]byte(tc.body), DefaultMaxBatch, "")
			if tc.reason != "" {
				f := bodyRefusal(err)
				if err == nil || f.Reason != tc.reason || f.Status != 400 || !f.RPC || f.Code == 0 {
					t.Fatalf("got %v (refusal %+v), want a refusal %s", err, f, tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if got := b.Calls(); got != tc.calls {
				t.Errorf("calls %d, want %d", got, tc.calls)
			}
			if got := b.Messages[0].Tool; got != tc.tool {
				t.Errorf("tool %q, want %q", got, tc.tool)
			}
			if got := b.Messages[0].Plain; got != tc.plain {
				t.Errorf("plain %v, want %v", got, tc.plain)
			}
		})
	}
}

func TestParseBodyMetaTool(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":{"tool_name":"a_echo","arguments":{}}}}`
	b, err := ParseBody([]byte(body), DefaultMaxBatch, "call_tool")
	if err != nil || b.Messages[0].MetaTool != "a_echo" {
		t.Fatalf("got %+v, %v", b, err)
	}
	amb := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":{"tool_name":"a_echo","Tool_Name":"b"}}}`
	if _, err := ParseBody([]byte(amb), DefaultMaxBatch, "call_tool"); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("ambiguous tool_name: %v", err)
	}
}

// TestGateParsesBody: the gate's decision carries the parse, and refuses an
// ambiguous body with a JSON-RPC error.
func TestGateParsesBody(t *testing.T) {
	g := New(nil)
	d := g.Admit(&Request{Method: "POST", Header: hdr("Mcp-Session-Id", "s"), Body: []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}`)})
	if d.Refusal != nil || d.Body == nil || d.Body.Messages[0].Tool != "t" {
		t.Fatalf("decision %+v", d)
	}
	d = g.Admit(&Request{Method: "POST", Header: hdr("Mcp-Session-Id", "s"), Body: []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","Method":"ping","params":{"name":"t"}}`)})
	if d.Refusal == nil || d.Refusal.Code != codeInvalidRequest || !errors.Is(d.Refusal.Err, ErrAmbiguous) {
		t.Fatalf("decision %+v", d)
	}
}

// sdkView is what the go-sdk reads of a body: per message its method, id
// and, of a tools/call, the tool's name. ok is false when it refuses the
// body.
func sdkView(data []byte) (msgs []string, ok bool) {
	raws := []json.RawMessage{data}
	var batch []json.RawMessage
	dec := segjson.NewDecoder(bytes.NewReader(data))
	dec.DontMatchCaseInsensitiveStructFields()
	if dec.Decode(&batch) == nil {
		if len(batch) == 0 {
			return nil, false
		}
		raws = batch
	}
	for _, raw := range raws {
		m, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			return nil, false
		}
		req, isReq := m.(*jsonrpc.Request)
		if !isReq {
			msgs = append(msgs, "response")
			continue
		}
		desc := fmt.Sprintf("%s id=%v", req.Method, req.ID.Raw())
		if req.Method == "tools/call" && req.ID.IsValid() {
			var p struct {
				Name string `json:"name"`
			}
			d := segjson.NewDecoder(bytes.NewReader(req.Params))
			d.DontMatchCaseInsensitiveStructFields()
			if len(req.Params) == 0 || d.Decode(&p) != nil {
				desc += " params=invalid"
			} else {
				desc += " tool=" + p.Name
			}
		}
		msgs = append(msgs, desc)
	}
	return msgs, true
}

// gateView is the same of the gate's parse.
func gateView(b *Body) []string {
	var msgs []string
	for _, m := range b.Messages {
		if !m.Request {
			msgs = append(msgs, "response")
			continue
		}
		var id any
		if m.ID != nil {
			var v any
			_ = json.Unmarshal(m.ID, &v)
			if f, ok := v.(float64); ok {
				v = int64(f) // as the go-sdk makes a number id
			}
			id = v
		}
		desc := fmt.Sprintf("%s id=%v", m.Method, id)
		if m.Method == "tools/call" && m.ID != nil {
			desc += " tool=" + m.Tool
		}
		msgs = append(msgs, desc)
	}
	return msgs
}

// FuzzBodyDecision feeds the same bytes to the gate's parse and to the
// go-sdk's decoding: when the gate lets a body through and the go-sdk
// serves it, both must name the same methods, ids and tools.
func FuzzBodyDecision(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a_echo","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","Method":"ping","params":{"name":"t"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}},{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","NAME":"u"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\u00e9\ud800"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"t"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"t"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if mcpwire.Check(data, mcpwire.MaxDepth) != nil {
			return // the gate refuses it before parsing
		}
		b, err := ParseBody(data, DefaultMaxBatch, "")
		if err != nil {
			return // refused at the gate: nobody serves it
		}
		sdk, ok := sdkView(data)
		if !ok {
			return // the go-sdk refuses it: nothing is served
		}
		gate := gateView(b)
		if fmt.Sprint(gate) != fmt.Sprint(sdk) {
			// The go-sdk may fail a tools/call's params the gate reads
			// (then nothing is called); any other difference is a bypass.
			for i := range sdk {
				if i < len(gate) && strings.HasSuffix(sdk[i], " params=invalid") {
					continue
				}
				if i >= len(gate) || gate[i] != sdk[i] {
					t.Fatalf("gate read %q, go-sdk %q", gate, sdk)
				}
			}
		}
	})
}

// A body of millions of values costs its length: the gate's parse builds
// no tree of it (fastjson's tree of a 4 MiB array of zeros took a
// gigabyte), and a batch over the bound is refused before its elements
// are read.
func TestParseBodyLarge(t *testing.T) {
	zeros := strings.Repeat("0,", 2<<20) + "0"
	for _, body := range []string{
		"[" + zeros + "]",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":[` + zeros + `]}}}`,
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b, err := ParseBody([]byte(body), DefaultMaxBatch, "")
		runtime.ReadMemStats(&after)
		if grown := after.TotalAlloc - before.TotalAlloc; grown > 2*uint64(len(body)) {
			t.Errorf("parsing %d bytes allocated %d", len(body), grown)
		}
		if body[0] == '[' {
			if !errors.Is(err, ErrTooLarge) {
				t.Errorf("batch of 2M: %v", err)
			}
		} else if err != nil || b.Messages[0].Tool != "t" || len(b.Messages[0].Args) < len(zeros) {
			t.Errorf("large call: %v", err)
		}
	}
}

// "paramſ" folds to params as encoding/json matches member names: refused
// (the task reader once read it as params, the go-sdk not at all).
func TestParseBodyUnicodeFold(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"a","task":{}},"paramſ":{"name":"b","task":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"a","tasK":{}}}`,
	} {
		if _, err := ParseBody([]byte(body), DefaultMaxBatch, ""); !errors.Is(err, ErrAmbiguous) {
			t.Errorf("%s: %v, want ambiguous", body, err)
		}
	}
}

// The strings every call carries decode to themselves without a copy,
// and to the same value written with escapes (which the decoder reads).
func TestDecodeStringWellKnown(t *testing.T) {
	for _, v := range []string{"jsonrpc", "id", "method", "params", "name", "arguments", "_meta", "requestId",
		"tools/call", "notifications/cancelled"} {
		if got := decodeString([]byte(`"` + v + `"`)); got != v {
			t.Errorf("decodeString(%q) = %q", v, got)
		}
		escaped := `"\u` + fmt.Sprintf("%04x", v[0]) + v[1:] + `"`
		if got := decodeString([]byte(escaped)); got != v {
			t.Errorf("decodeString(%s) = %q, want %q", escaped, got, v)
		}
	}
	if got := decodeString([]byte(`"tools/calls"`)); got != "tools/calls" {
		t.Errorf("a longer string: %q", got)
	}
}
