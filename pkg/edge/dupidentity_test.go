package edge

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fleetgate/fleetgate/pkg/edge/admission"
)

// An identity header sent twice (a client's own next to the proxy's) is
// refused on every path, initialize and a session's requests alike: the
// edge cannot tell which one the proxy set.
func TestDuplicateIdentityHeaderRefused(t *testing.T) {
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	e := startEdge(t, f, &Options{IdentityHeader: userHeader})
	sid := rawInitialize(t, e.MCPURL(), "alice")
	for _, tc := range []struct{ name, sid, body string }{
		{"initialize", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`},
		{"call", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha_echo","arguments":{"text":"x"}}}`},
	} {
		req, _ := http.NewRequest(http.MethodPost, e.MCPURL(), strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if tc.sid != "" {
			req.Header.Set("Mcp-Session-Id", tc.sid)
		}
		req.Header.Add(userHeader, "alice")
		req.Header.Add(userHeader, "mallory")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s with the identity header twice: %d, want 400", tc.name, resp.StatusCode)
		}
	}
	if n := testutil.ToFloat64(e.adm.refused.WithLabelValues(admission.ReasonDuplicateIdentity)); n != 2 {
		t.Fatalf("%v duplicate_identity refusals counted, want 2", n)
	}
}
