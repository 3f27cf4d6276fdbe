package backend

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/internal/h1"
	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

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
	p := NewPool(srv.Client(), time.Minute, 0, nil)
	ctx := context.Background()
	raw, shape, err := p.rawCall(ctx, peer{url: srv.URL, sid: "s1"}, "tools/call", &mcp.CallToolParams{Name: "t", Arguments: map[string]any{}}, nil)
	if err != nil || !strings.Contains(string(raw), `"ok"`) || shape != (resultShape{plain: true}) {
		t.Fatalf("event stream: %s %+v %v", raw, shape, err)
	}
	mu.Lock()
	refused := strings.Join(posts, "\n")
	mu.Unlock()
	if !strings.Contains(refused, `"id":99`) || !strings.Contains(refused, `-32601`) {
		t.Fatalf("backend request not refused: %s", refused)
	}
	if _, _, err := p.rawCall(ctx, peer{url: srv.URL, sid: "gone"}, "tools/call", &mcp.CallToolParams{Name: "t"}, nil); !errors.Is(err, mcp.ErrSessionMissing) {
		t.Fatalf("404: %v", err)
	}
	if _, _, err := p.rawCall(ctx, peer{url: srv.URL, sid: "garbage"}, "tools/call", &mcp.CallToolParams{Name: "t"}, nil); err == nil || !strings.Contains(err.Error(), "decode response") {
		t.Fatalf("garbage: %v", err)
	}
	for _, sid := range []string{"deep", "deep-sse"} {
		if _, _, err := p.rawCall(ctx, peer{url: srv.URL, sid: sid}, "tools/call", &mcp.CallToolParams{Name: "t"}, nil); !errors.Is(err, mcpwire.ErrTooDeep) {
			t.Fatalf("%s: %v", sid, err)
		}
	}
	if raw, _, err := p.rawCall(ctx, peer{url: srv.URL, sid: "cr"}, "tools/call", &mcp.CallToolParams{Name: "t"}, nil); err != nil || string(raw) != `{"content":[]}` {
		t.Fatalf("CR line ends: %s, %v", raw, err)
	}
}

// encodeCallParams writes a tool name as encoding/json would.
func TestEncodeCallParamsName(t *testing.T) {
	for _, name := range []string{"echo", "a_b-c.d", "say \"hi\"", `back\slash`, "<tag>&", "tab\there", "é", "\u2028", ""} {
		got := encodeCallParams(name, json.RawMessage(`{"x":1}`), nil)
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

// A call with closings (a call lane's) returns at the response and leaves
// the rest of the backend's event stream to them: closed after the lane
// answered, the connection is reused. Without closings the body is closed
// at once.
func TestRawCallClosesLater(t *testing.T) {
	release := make(chan struct{})
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[]}}\n\n", req.ID)
		w.(http.Flusher).Flush()
		if r.Header.Get("Mcp-Session-Id") == "held" {
			<-release // the stream ends once the caller has its response
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	p := NewPool(&http.Client{Transport: h1.NewTransport(http.DefaultTransport.(*http.Transport).Clone())}, time.Minute, 0, nil)
	defer p.CloseAll()
	later := &Closings{}
	params := &mcp.CallToolParams{Name: "t", Arguments: map[string]any{}}
	if _, _, err := p.rawCall(t.Context(), peer{url: srv.URL, sid: "held"}, "tools/call", params, later); err != nil {
		t.Fatal(err)
	}
	if len(later.bodies) != 1 {
		t.Fatalf("%d bodies left to close after the response, want 1", len(later.bodies))
	}
	close(release)
	later.Close()
	if _, _, err := p.rawCall(t.Context(), peer{url: srv.URL, sid: "s1"}, "tools/call", params, nil); err != nil {
		t.Fatal(err)
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections, want 1 (the detached body was read to its end and the connection reused)", n)
	}
}

// Results the fast path must not pass through as they came, and responses
// it must not take.
func TestResultStrictness(t *testing.T) {
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
	p := &Pool{}
	for _, data := range []string{
		`{"jsonrpc":"2.0","id":"x","result":{},"result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":"x","result":{"n":NaN}}`,
	} {
		if _, err := p.findResponse(context.Background(), []byte(data), peer{url: "", sid: ""}, "x"); err == nil {
			t.Errorf("findResponse took %s", data)
		}
	}
}

// A backend answering a call with a redirect is not followed, on the raw
// path as on the go-sdk client's: the redirect's target is never sent the
// call (its arguments), and the call fails.
func TestRawCallRedirectNotFollowed(t *testing.T) {
	var reached atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
	}))
	defer target.Close()
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+"/mcp", code)
		}))
		p := NewPool(redirecting.Client(), time.Minute, 0, nil)
		_, _, err := p.rawCall(context.Background(), peer{url: redirecting.URL, sid: "s1"}, "tools/call",
			&mcp.CallToolParams{Name: "t", Arguments: map[string]any{"secret": "x"}}, nil)
		redirecting.Close()
		if err == nil {
			t.Errorf("%d: the call succeeded", code)
		}
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("the redirect's target got %d requests", n)
	}
}
