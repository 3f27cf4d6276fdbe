package test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// garbageProxy fronts a demo backend and answers any tools/call of the
// tool "add" with bytes that are not JSON-RPC.
func garbageProxy(t *testing.T, backendURL string) string {
	t.Helper()
	u, _ := url.Parse(backendURL)
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) && bytes.Contains(body, []byte(`"name":"add"`)) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc": "2.0", "id": garbage!!`))
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// Malformed JSON-RPC, unknown tool names, oversized bodies and a backend
// returning garbage each get a clear error, and other sessions carry on.
func TestEdgeBadInput(t *testing.T) {
	node := startNATS(t)
	alpha := startBackend(t, "alpha", nil)
	beta := startBackend(t, "beta", nil)
	yaml := fleetYAML(200*time.Millisecond, 100*time.Millisecond, alpha)
	yaml = strings.Replace(yaml, "health:", "      - name: beta\n        url: "+garbageProxy(t, beta.URL())+"\nhealth:", 1)
	startController(t, node.ClientURL(), "c1", yaml)
	el := followLog(t, node.ClientURL())
	el.waitEvent(t, 0, 20*time.Second, "beta advertised", healthOf("beta", true))
	el.waitEvent(t, 0, 20*time.Second, "alpha advertised", healthOf("alpha", true))
	e := startEdge(t, node.ClientURL())
	good := connectMCP(t, e.MCPURL(), "2025-11-25")
	other := connectMCP(t, e.MCPURL(), "")
	eventually(t, 10*time.Second, "tools listed", func() bool { return slices.Contains(good.tools(t), "beta_add") })

	post := func(body []byte, headers map[string]string) (int, string) {
		req, _ := http.NewRequest("POST", e.MCPURL(), bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, string(b)
	}
	// Malformed JSON-RPC, on both protocol paths.
	for _, h := range []map[string]string{nil, {"Mcp-Protocol-Version": "2026-07-28"}} {
		code, body := post([]byte(`{"jsonrpc":"2.0","id":1,"method":`), h)
		if code < 400 || code >= 500 {
			t.Fatalf("malformed JSON-RPC (%v): status %d %q, want a 4xx", h, code, body)
		}
		t.Logf("malformed JSON-RPC %v -> %d %s", h, code, strings.TrimSpace(body))
	}
	// Unknown session id.
	if code, body := post([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), map[string]string{"Mcp-Session-Id": "no-such-session-0000"}); code != 404 {
		t.Fatalf("unknown session: %d %q", code, body)
	}
	// Oversized body (over the 4 MiB request limit).
	big := append([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"alpha_echo","arguments":{"text":"`),
		bytes.Repeat([]byte("x"), 5<<20)...)
	big = append(big, []byte(`"}}}`)...)
	if code, body := post(big, nil); code < 400 || code >= 500 {
		t.Fatalf("oversized body: status %d %q, want a 4xx", code, body)
	}
	// Unknown tool name, through a real client.
	for _, c := range []*mcpClient{good, other} {
		res, err := c.call("nosuch_tool", nil)
		msg := ""
		if err != nil {
			msg = err.Error()
		} else if res.IsError {
			msg = text(res)
		}
		if !strings.Contains(msg, "nosuch_tool") {
			t.Fatalf("unknown tool: err=%v res=%+v, want an error naming it", err, res)
		}
	}
	// A backend answering garbage.
	res, err := good.call("beta_add", map[string]any{"a": 1, "b": 2})
	if err == nil && !res.IsError {
		t.Fatalf("garbage from the backend became a result: %+v", res)
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	} else {
		msg = text(res)
	}
	t.Logf("backend garbage -> %s", msg)
	if !strings.Contains(msg, "beta") {
		t.Fatalf("error %q does not name the backend or tool", msg)
	}
	// Everyone else is untouched: both sessions still list and call.
	for _, c := range []*mcpClient{good, other} {
		if r, err := c.call("alpha_echo", map[string]any{"text": "ok"}); err != nil || text(r) != "alpha: ok" {
			t.Fatalf("session after bad input: %v %+v", err, r)
		}
		if r, err := c.call("beta_echo", map[string]any{"text": "ok"}); err != nil || text(r) != "beta: ok" {
			t.Fatalf("beta after its garbage answer: %v %q", err, text(r))
		}
	}
}
