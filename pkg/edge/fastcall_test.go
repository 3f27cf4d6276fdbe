package edge

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/session"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/edge/backend"
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
		s := e.reg.Lookup(sid)
		return s != nil && s.Flags() == session.FlagBound|session.FlagInitialized
	})
}

// fastReadyNow checks, once the bubble is idle, that session sid may take
// the fast path.
func fastReadyNow(t *testing.T, e *Edge, sid string) {
	t.Helper()
	synctest.Wait()
	if s := e.reg.Lookup(sid); s == nil || s.Flags() != session.FlagBound|session.FlagInitialized {
		t.Fatalf("session %s not initialized for the fast path", sid)
	}
}

// alphaEdge is an edge of o serving demo backend alpha, in the bubble of
// t.
func alphaEdge(t *testing.T, o *Options) (*memoryEdge, *demobackend.Backend) {
	t.Helper()
	e := serveMemoryEdge(t, o)
	b := demobackend.New("alpha", nil)
	e.serveBackend(t, b)
	e.settle()
	if _, ok := e.current().Catalog.Tool("alpha_echo"); !ok {
		t.Fatal("alpha_echo not served")
	}
	return e, b
}

// A plain tools/call is answered by the edge itself, with the result the
// go-sdk path gives the same call; one the fast path does not take (here,
// with _meta) still goes through the go-sdk.
func TestFastCallMatchesGoSDKPath(t *testing.T) { synctest.Test(t, testFastCallMatchesGoSDKPath) }

func testFastCallMatchesGoSDKPath(t *testing.T) {
	e, _ := alphaEdge(t, nil)
	sid := rawInitialize(t, e.MCPURL(), "")
	fastReadyNow(t, e.Edge, sid)
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
func TestFastCallCancelled(t *testing.T) { synctest.Test(t, testFastCallCancelled) }

func testFastCallCancelled(t *testing.T) {
	e, b := alphaEdge(t, &Options{CallTimeout: time.Minute})
	sid := rawInitialize(t, e.MCPURL(), "")
	fastReadyNow(t, e.Edge, sid)
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"alpha_echo","arguments":{"text":"x"}}}`
	rawPost(t, e.MCPURL(), sid, call) // the pooled backend session exists before the hang
	b.SetHang(true)
	t.Cleanup(func() { b.SetHang(false) })
	done := make(chan map[string]any, 1)
	go func() { _, _, msg := rawPost(t, e.MCPURL(), sid, call); done <- msg }()
	synctest.Wait()
	if !e.reg.Lookup(sid).CallInFlight("7") {
		t.Fatal("the call to the hung backend not in flight")
	}
	if code, _, _ := rawPost(t, e.MCPURL(), sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"test"}}`); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	select {
	case msg := <-done:
		if res, _ := msg["result"].(map[string]any); res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), backend.KindCancelled) {
			t.Fatalf("cancelled call: %v", msg)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled call did not end")
	}
}
