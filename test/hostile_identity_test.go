package test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// With --identity-header, a request without the header is refused 401 on
// every path and protocol generation, whatever its Mcp-Protocol-Version
// says, on a call lane too; a session with the header keeps working.
func TestHostileIdentity(t *testing.T) {
	node := startNATS(t)
	alpha := startBackend(t, "alpha", nil)
	startController(t, node.ClientURL(), "c1", fleetYAML(200*time.Millisecond, 100*time.Millisecond, alpha))
	e := startHostileEdge(t, node.ClientURL(), "--identity-header", "X-User")
	user := map[string]string{"X-User": "alice"}
	sid := rawSession(t, e.mcp, user)
	session := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	call := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha_echo","arguments":{"text":"hi"}}}`)
	eventually(t, 20*time.Second, "alice's call", func() bool {
		code, _, body := rawRequest(t, e.mcp, call, merge(session, user))
		return code == http.StatusOK && strings.Contains(body, "hi")
	})
	paths := append(everyPath(sid, call),
		requestPath{"2027-01-01 tools/call", "POST", call, map[string]string{"Mcp-Protocol-Version": "2027-01-01", "Mcp-Method": "tools/call", "Mcp-Name": "alpha_echo"}},
		requestPath{"version garbage", "POST", call, map[string]string{"Mcp-Protocol-Version": "latest", "Mcp-Session-Id": sid}},
		requestPath{"empty identity", "POST", call, merge(session, map[string]string{"X-User": " "})},
	)
	for _, tc := range paths {
		code, body := requestAs(t, tc.method, e.mcp, tc.body, tc.headers)
		if code != http.StatusUnauthorized {
			t.Errorf("%s without identity: %d %.200s, want 401", tc.name, code, body)
		}
	}
	// A call lane: alice's plain call makes the connection one; a call
	// without the header on it is refused too.
	lc := dialEdge(t, e.mcp)
	if code, body := lc.post(call, merge(session, user)); code != http.StatusOK {
		t.Fatalf("alice's call on the connection: %d %s", code, body)
	}
	if code, body := lc.post(call, session); code != http.StatusUnauthorized {
		t.Fatalf("anonymous call on a lane: %d %.200s, want 401", code, body)
	}
	// Another identity on alice's session: 403.
	if code, _, body := rawRequest(t, e.mcp, call, merge(session, map[string]string{"X-User": "mallory"})); code != http.StatusForbidden {
		t.Fatalf("mallory on alice's session: %d %s", code, body)
	}
	if code, _, body := rawRequest(t, e.mcp, call, merge(session, user)); code != http.StatusOK || !strings.Contains(body, "hi") {
		t.Fatalf("alice's session after the refusals: %d %s", code, body)
	}
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// requestAs sends one request of any method.
func requestAs(t testing.TB, method, mcpURL string, body []byte, headers map[string]string) (int, string) {
	t.Helper()
	if method == http.MethodPost {
		code, _, b := rawRequest(t, mcpURL, body, headers)
		return code, b
	}
	req, _ := http.NewRequest(method, mcpURL, nil)
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	resp.Body.Close()
	return resp.StatusCode, ""
}

// requestPath is one request path of the edge: a method, body and headers.
type requestPath struct {
	name    string
	method  string
	body    []byte
	headers map[string]string
}

// everyPath is a request of each path and protocol generation of the
// edge, for session sid, with call as the tools/call body.
func everyPath(sid string, call []byte) []requestPath {
	session := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	listen := []byte(`{"jsonrpc":"2.0","id":3,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`)
	init := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	return []requestPath{
		{"initialize", "POST", init, nil},
		{"session POST", "POST", call, session},
		{"session GET stream", "GET", nil, session},
		{"session DELETE", "DELETE", nil, session},
		{"2026-07-28 tools/call", "POST", call, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "alpha_echo"}},
		{"2026-07-28 tools/list", "POST", []byte(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`), map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}},
		{"2026-07-28 listen", "POST", listen, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"}},
		{"version 9", "POST", call, map[string]string{"Mcp-Protocol-Version": "9", "Mcp-Method": "tools/call"}},
	}
}
