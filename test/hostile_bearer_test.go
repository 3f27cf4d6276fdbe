package test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
)

// With --auth-issuer, a request without a valid bearer token is refused
// 401 (with the contract's challenge) on every path and protocol
// generation, on a call lane too; another subject's token on a session is
// refused 403; the session with its own (refreshed) token keeps working.
func TestHostileBearer(t *testing.T) {
	iss := issuertest.New(t, nil)
	node := startNATS(t)
	alpha := startBackend(t, "alpha", nil)
	startController(t, node.ClientURL(), "c1", fleetYAML(200*time.Millisecond, 100*time.Millisecond, alpha))
	e := startHostileEdge(t, node.ClientURL(), "--auth-issuer", iss.URL())
	bearer := func(sub string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + iss.Mint(iss.Claims(sub, e.mcp))}
	}
	alice := bearer("alice")
	sid := rawSession(t, e.mcp, alice)
	session := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	call := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha_echo","arguments":{"text":"hi"}}}`)
	eventually(t, 20*time.Second, "alice's call", func() bool {
		code, _, body := rawRequest(t, e.mcp, call, merge(session, alice))
		return code == http.StatusOK && strings.Contains(body, "hi")
	})
	paths := everyPath(sid, call)
	expired := iss.Claims("alice", e.mcp)
	expired["exp"] = time.Now().Add(-time.Hour).Unix()
	for _, cred := range []struct {
		name string
		h    map[string]string
	}{
		{"no token", nil},
		{"garbage token", map[string]string{"Authorization": "Bearer garbage"}},
		{"expired token", map[string]string{"Authorization": "Bearer " + iss.Mint(expired)}},
		{"basic auth", map[string]string{"Authorization": "Basic YWxpY2U6eA=="}},
	} {
		for _, tc := range paths {
			code, body := requestAs(t, tc.method, e.mcp, tc.body, merge(tc.headers, cred.h))
			if code != http.StatusUnauthorized {
				t.Errorf("%s, %s: %d %.200s, want 401", tc.name, cred.name, code, body)
			}
		}
	}
	// A call lane: alice's plain call makes the connection one; calls
	// without a valid token, or with bob's, are refused on it.
	lc := dialEdge(t, e.mcp)
	if code, body := lc.post(call, merge(session, alice)); code != http.StatusOK {
		t.Fatalf("alice's call on the connection: %d %s", code, body)
	}
	if code, body := lc.post(call, session); code != http.StatusUnauthorized {
		t.Fatalf("a call without a token on a lane: %d %.200s, want 401", code, body)
	}
	if code, body := lc.post(call, merge(session, bearer("bob"))); code != http.StatusForbidden {
		t.Fatalf("bob's call on alice's session on a lane: %d %.200s, want 403", code, body)
	}
	if code, _, body := rawRequest(t, e.mcp, call, merge(session, bearer("bob"))); code != http.StatusForbidden {
		t.Fatalf("bob on alice's session: %d %s", code, body)
	}
	if code, _, body := rawRequest(t, e.mcp, call, merge(session, bearer("alice"))); code != http.StatusOK || !strings.Contains(body, "hi") {
		t.Fatalf("alice's session with a refreshed token: %d %s", code, body)
	}
}
