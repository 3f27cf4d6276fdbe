package edge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// rawPost posts body on session sid and returns the status, the media
// type and the JSON-RPC message of the response (the data of the first
// event of an event stream).
func rawPost(t *testing.T, url, sid, body string) (int, string, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ct, data, msg, err := readRPC(resp)
	if len(data) > 0 && err != nil {
		t.Fatalf("response %d %s: %q", resp.StatusCode, ct, data)
	}
	return resp.StatusCode, ct, msg
}

// readRPC reads resp's media type, body, and the JSON-RPC message in it
// (the data of the first event of an event stream).
func readRPC(resp *http.Response) (ct string, data []byte, msg map[string]any, err error) {
	ct = strings.Split(resp.Header.Get("Content-Type"), ";")[0]
	if data, err = io.ReadAll(resp.Body); err != nil {
		return ct, data, nil, err
	}
	if ct == "text/event-stream" {
		for line := range strings.SplitSeq(string(data), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				data = []byte(d)
				break
			}
		}
	}
	err = json.Unmarshal(data, &msg)
	return ct, data, msg, err
}

// fastReady waits until session sid may take the fast path (the go-sdk
// handles notifications/initialized after answering its POST).
func fastReady(t *testing.T, e *Edge, sid string) {
	t.Helper()
	eventually(t, 10*time.Second, "session initialized", func() bool {
		s := e.lookup(sid)
		return s != nil && s.flags.Load() == flagBound|flagInitialized
	})
}

// A plain tools/call is answered by the edge itself, with the result the
// go-sdk path gives the same call; one the fast path does not take (here,
// with _meta) still goes through the go-sdk.
func TestFastCallMatchesGoSDKPath(t *testing.T) {
	f := newFleet(t)
	b := startBackend(t, "alpha", nil)
	f.healthyBackend("default", b)
	e := startEdge(t, f, nil)
	eventually(t, 10*time.Second, "view served", func() bool { _, ok := e.current().view.Tool("alpha_echo"); return ok })
	sid := rawInitialize(t, e.MCPURL(), "")
	fastReady(t, e, sid)
	code, ct, fast := rawPost(t, e.MCPURL(), sid, `{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"alpha_echo","arguments":{"text":"x"}}}`)
	if code != http.StatusOK || ct != "application/json" || fast["id"] != "a-1" {
		t.Fatalf("fast path: %d %s %v", code, ct, fast)
	}
	code, ct, sdk := rawPost(t, e.MCPURL(), sid, `{"jsonrpc":"2.0","id":"a-2","method":"tools/call","params":{"name":"alpha_echo","arguments":{"text":"x"},"_meta":{}}}`)
	if code != http.StatusOK || ct != "text/event-stream" || sdk["id"] != "a-2" {
		t.Fatalf("go-sdk path: %d %s %v", code, ct, sdk)
	}
	if !reflect.DeepEqual(fast["result"], sdk["result"]) {
		t.Fatalf("results differ:\nfast %v\nsdk  %v", fast["result"], sdk["result"])
	}
	// An unknown tool is an isError result naming it, on the fast path too.
	_, _, unknown := rawPost(t, e.MCPURL(), sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope"}}`)
	if res, _ := unknown["result"].(map[string]any); res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), `"nope"`) {
		t.Fatalf("unknown tool: %v", unknown)
	}
}

// notifications/cancelled cancels a call the edge answers itself.
func TestFastCallCancelled(t *testing.T) {
	f := newFleet(t)
	b := startBackend(t, "alpha", nil)
	f.healthyBackend("default", b)
	e := startEdge(t, f, &Options{CallTimeout: time.Minute})
	eventually(t, 10*time.Second, "view served", func() bool { _, ok := e.current().view.Tool("alpha_echo"); return ok })
	sid := rawInitialize(t, e.MCPURL(), "")
	fastReady(t, e, sid)
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"alpha_echo","arguments":{"text":"x"}}}`
	rawPost(t, e.MCPURL(), sid, call) // the pooled backend session exists before the hang
	b.SetHang(true)
	t.Cleanup(func() { b.SetHang(false) })
	done := make(chan map[string]any, 1)
	go func() { _, _, msg := rawPost(t, e.MCPURL(), sid, call); done <- msg }()
	eventually(t, 10*time.Second, "call in flight", func() bool { _, ok := e.fastCalls.Load(fastKey(sid, json.RawMessage("7"))); return ok })
	if code, _, _ := rawPost(t, e.MCPURL(), sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"test"}}`); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	select {
	case msg := <-done:
		if res, _ := msg["result"].(map[string]any); res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), BackendCancelled) {
			t.Fatalf("cancelled call: %v", msg)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled call did not end")
	}
}

func TestParseFastMessage(t *testing.T) {
	for _, tc := range []struct {
		body string
		ok   bool
		want fastMessage
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a_b","arguments":{"x":1}}}`, true,
			fastMessage{method: "tools/call", id: json.RawMessage("1"), name: "a_b", args: json.RawMessage(`{"x":1}`)}},
		{`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"a_b"}}`, true,
			fastMessage{method: "tools/call", id: json.RawMessage(`"s"`), name: "a_b"}},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s"}}`, true,
			fastMessage{method: "notifications/cancelled", cancelID: json.RawMessage(`"s"`)}},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"progressToken":1}}}`, false, fastMessage{}},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"a"}}`, false, fastMessage{}},
		{`{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"a"}}`, false, fastMessage{}},
		{`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"a"}}`, false, fastMessage{}},
		{`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"a"}}`, false, fastMessage{}},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"a"}}`, false, fastMessage{}},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":[1]}}`, false, fastMessage{}},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":""}}`, false, fastMessage{}},
		{`{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"a"}}`, false, fastMessage{}},
		{`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}]`, false, fastMessage{}},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"tools/call"}}`, false, fastMessage{}},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}`, false, fastMessage{}},
	} {
		got, ok := parseFastMessage([]byte(tc.body))
		if ok != tc.ok || ok && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v %v, want %+v %v", tc.body, got, ok, tc.want, tc.ok)
		}
	}
}

func TestLoopback(t *testing.T) {
	for host, want := range map[string]bool{"localhost:8080": true, "127.0.0.1": true, "[::1]:80": true,
		"127.0.0.1:9": true, "example.com:80": false, "10.0.0.1": false, "": false} {
		if got := loopback(host); got != want {
			t.Errorf("loopback(%q) = %v", host, got)
		}
	}
}

// The fast decoding of text results gives what the go-sdk's gives; other
// content goes through the go-sdk's.
func TestDecodeToolResult(t *testing.T) {
	for _, raw := range []string{
		`{"content":[{"type":"text","text":"hi","annotations":{"priority":0.5}}],"isError":true,"_meta":{"k":"v"}}`,
		`{"content":[{"type":"text","text":""}],"structuredContent":{"n":1}}`,
		`{"content":[]}`,
		`{}`,
		`{"content":[{"type":"text","text":"a"},{"type":"image","data":"aGk=","mimeType":"image/png"}]}`,
	} {
		got, err := decodeToolResult(json.RawMessage(raw))
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		var want mcp.CallToolResult
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatal(err)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(&want)
		var gv, wv any
		_ = json.Unmarshal(g, &gv)
		_ = json.Unmarshal(w, &wv)
		if !reflect.DeepEqual(gv, wv) {
			t.Errorf("%s:\ngot  %s\nwant %s", raw, g, w)
		}
	}
	if _, err := decodeToolResult(json.RawMessage(`{"content":[{"type":"text","text":1}]}`)); err == nil {
		t.Error("a malformed result decoded")
	}
}

// rawCall reads the response out of an event stream, skipping
// notifications and refusing the backend's requests, and reports a
// forgotten session and garbage as errors.
func TestRawCall(t *testing.T) {
	var mu sync.Mutex
	var posts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		posts = append(posts, string(body))
		mu.Unlock()
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &req)
		switch {
		case r.Header.Get("Mcp-Session-Id") == "gone":
			http.Error(w, "session not found", http.StatusNotFound)
		case r.Header.Get("Mcp-Session-Id") == "garbage":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc": "2.0", "id": garbage`)
		case r.Header.Get("Mcp-Session-Id") == "deep": // 4 MiB of '[': fastjson alone overflows the stack
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(bytes.Repeat([]byte("["), 4<<20))
		case r.Header.Get("Mcp-Session-Id") == "deep-sse":
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(append(append([]byte("data: "), bytes.Repeat([]byte("["), 4<<20)...), "\n\n"...))
		case r.Header.Get("Mcp-Session-Id") == "cr": // CR line ends, a priming event
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "id: 1\rdata:\r\revent: message\rdata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[]}}\r\r", req.ID)
		case req.Method == "tools/call":
			w.Header().Set("Content-Type", "text/event-stream")
			bw := bufio.NewWriter(w)
			fmt.Fprintf(bw, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")
			fmt.Fprintf(bw, "data: {\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"roots/list\"}\n\n")
			fmt.Fprintf(bw, "data: {\"jsonrpc\":\"2.0\",\"id\":\"other\",\"result\":{}}\n\n")
			fmt.Fprintf(bw, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}}\n\n", req.ID)
			bw.Flush()
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	p := newPool(srv.Client(), time.Minute, 0, nil)
	ctx := context.Background()
	raw, shape, err := p.rawCall(ctx, srv.URL, "s1", "tools/call", &mcp.CallToolParams{Name: "t", Arguments: map[string]any{}})
	if err != nil || !strings.Contains(string(raw), `"ok"`) || shape != (resultShape{plain: true}) {
		t.Fatalf("event stream: %s %+v %v", raw, shape, err)
	}
	mu.Lock()
	refused := strings.Join(posts, "\n")
	mu.Unlock()
	if !strings.Contains(refused, `"id":99`) || !strings.Contains(refused, `-32601`) {
		t.Fatalf("backend request not refused: %s", refused)
	}
	if _, _, err := p.rawCall(ctx, srv.URL, "gone", "tools/call", &mcp.CallToolParams{Name: "t"}); !errors.Is(err, mcp.ErrSessionMissing) {
		t.Fatalf("404: %v", err)
	}
	if _, _, err := p.rawCall(ctx, srv.URL, "garbage", "tools/call", &mcp.CallToolParams{Name: "t"}); err == nil || !strings.Contains(err.Error(), "decode response") {
		t.Fatalf("garbage: %v", err)
	}
	for _, sid := range []string{"deep", "deep-sse"} {
		if _, _, err := p.rawCall(ctx, srv.URL, sid, "tools/call", &mcp.CallToolParams{Name: "t"}); !errors.Is(err, mcpwire.ErrTooDeep) {
			t.Fatalf("%s: %v", sid, err)
		}
	}
	if raw, _, err := p.rawCall(ctx, srv.URL, "cr", "tools/call", &mcp.CallToolParams{Name: "t"}); err != nil || string(raw) != `{"content":[]}` {
		t.Fatalf("CR line ends: %s, %v", raw, err)
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
		if _, ok := parseFastMessage([]byte(body)); ok {
			t.Errorf("parseFastMessage took %q", body)
		}
	}
	for raw, plain := range map[string]bool{
		`{"content":[{"type":"text","text":"hi"}],"isError":false}`:            true,
		`{"content":[{"type":"text","text":"hi","_meta":{}}],"_meta":{"a":1}}`: true,
		`{"structuredContent":{"n":NaN},"content":[]}`:                         false,
		`{"Content":[{"Type":"text","Text":"boom"}],"IsError":true}`:           false,
		`{"content":[{"type":"text","text":"x","type":"image"}]}`:              false,
		`{"content":[],"content":[{"type":"text","text":"x"}]}`:                false,
		`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}]}`:  false,
	} {
		if got := plainToolResult(json.RawMessage(raw)); got != plain {
			t.Errorf("plainToolResult(%s) = %v, want %v", raw, got, plain)
		}
	}
	p := &pool{}
	for _, data := range []string{
		`{"jsonrpc":"2.0","id":"x","result":{},"result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":"x","result":{"n":NaN}}`,
	} {
		if _, err := p.findResponse(context.Background(), []byte(data), "", "", "x"); err == nil {
			t.Errorf("findResponse took %s", data)
		}
	}
}

// encodeCallParams writes a tool name as encoding/json would.
func TestEncodeCallParamsName(t *testing.T) {
	for _, name := range []string{"echo", "a_b-c.d", "say \"hi\"", `back\slash`, "<tag>&", "tab\there", "é", "\u2028", ""} {
		got := encodeCallParams(name, json.RawMessage(`{"x":1}`))
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(got, &p); err != nil || p.Name != name || string(p.Arguments) != `{"x":1}` {
			t.Fatalf("%q: %s (%v)", name, got, err)
		}
		want, _ := json.Marshal(name)
		if !strings.Contains(string(got), `"name":`+string(want)+`,`) {
			t.Errorf("%q: %s, want the name as %s", name, got, want)
		}
	}
}
