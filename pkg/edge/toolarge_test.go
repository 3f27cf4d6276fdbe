package edge

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/edge/admission"
)

// A 32 MiB body, an initialize or a call, is answered 413 with a JSON-RPC
// error naming the limit, which a Go net/http client reads whole (not a
// reset connection), and the edge serves on.
func TestTooLargeBodyReadable413(t *testing.T) {
	f := newFleet(t)
	f.healthyBackend("default", startBackend(t, "alpha", nil))
	e := startEdge(t, f, nil)
	sid := rawInitialize(t, e.MCPURL(), "")
	huge := append([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"`), bytes.Repeat([]byte("a"), 32<<20)...)
	huge = append(huge, `"}}`...)
	for _, tc := range []struct {
		name, sid string
		limit     int64
		flag      string
	}{
		{"initialize", "", admission.DefaultMaxInitializeBytes, "--max-initialize-bytes"},
		{"call", sid, admission.DefaultMaxBodyBytes, "--max-request-bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, e.MCPURL(), bytes.NewReader(huge))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			if tc.sid != "" {
				req.Header.Set("Mcp-Session-Id", tc.sid)
			}
			resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
			if err != nil {
				t.Fatalf("32 MiB %s: %v (want a 413 the client can read)", tc.name, err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("reading the 413: %v", err)
			}
			var msg struct {
				Error struct {
					Code    int
					Message string
					Data    struct {
						Limit int64
						Flag  string
					}
				}
			}
			if resp.StatusCode != http.StatusRequestEntityTooLarge || json.Unmarshal(body, &msg) != nil ||
				msg.Error.Code != admission.CodeTooLarge || msg.Error.Data.Limit != tc.limit || msg.Error.Data.Flag != tc.flag ||
				!strings.Contains(msg.Error.Message, tc.flag) {
				t.Fatalf("32 MiB %s: %d %s", tc.name, resp.StatusCode, body)
			}
		})
	}
	if res := connect(t, e.MCPURL(), "2025-11-25").call(t, "alpha_echo", map[string]any{"text": "on"}); !strings.Contains(text(res), "on") {
		t.Fatalf("after the refusals: %v", text(res))
	}
}
