package verify

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// fakeServer is a scripted MCP endpoint for what a real go-sdk server never
// does: tool fields the SDK's struct drops, cursor loops, failing pages.
type fakeServer struct {
	// pages maps a request cursor to the tools/list result (raw JSON);
	// a missing cursor answers a JSON-RPC error.
	pages map[string]string
	// sse answers with text/event-stream (preceded by a notification
	// event), else application/json.
	sse bool
	// listChanged is advertised in capabilities.tools.
	listChanged bool

	lists atomic.Int32 // tools/list requests served
}

func (f *fakeServer) start(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodDelete {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Cursor string `json:"cursor"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if req.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var payload string
	switch req.Method {
	case "initialize":
		w.Header().Set("Mcp-Session-Id", "fake-session")
		payload = fmt.Sprintf(`"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":%t}},"serverInfo":{"name":"fake","version":"0.1"}}`, f.listChanged)
	case "tools/list":
		if r.Header.Get("Mcp-Session-Id") != "fake-session" || r.Header.Get("MCP-Protocol-Version") != "2025-06-18" {
			http.Error(w, "missing session headers", http.StatusBadRequest)
			return
		}
		f.lists.Add(1)
		if res, ok := f.pages[req.Params.Cursor]; ok {
			payload = `"result":` + res
		} else {
			m, _ := json.Marshal(fmt.Sprintf("invalid cursor %q", req.Params.Cursor))
			payload = fmt.Sprintf(`"error":{"code":-32602,"message":%s}`, m)
		}
	default:
		payload = `"error":{"code":-32601,"message":"method not found"}`
	}
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,%s}`, req.ID, payload)
	if f.sse {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n")
		fmt.Fprintf(w, "event: message\nid: 1\ndata: %s\n\n", msg)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, msg)
}
