package demobackend

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxRefusedBody bounds the body of a request of the session-based
// protocols read for its id by a StatelessOnly backend.
const maxRefusedBody = 1 << 20

// statelessOnly serves requests of protocol 2026-07-28 with the go-sdk's
// stateless handler and answers every other one, initialize first, with
// the JSON-RPC error of an unsupported protocol version naming the one it
// speaks (a GET or DELETE, which carry no message, with 405).
func statelessOnly(stateless http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= newProtocol {
			stateless.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodPost {
			http.Error(w, "this server speaks only protocol "+newProtocol, http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxRefusedBody+1))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if err != nil || len(body) > maxRefusedBody || json.Unmarshal(body, &msg) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if len(msg.ID) == 0 { // a notification
			w.WriteHeader(http.StatusAccepted)
			return
		}
		data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: []string{newProtocol}, Requested: msg.Params.ProtocolVersion})
		resp, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{
			"code": mcp.CodeUnsupportedProtocolVersion, "message": "this server speaks only protocol " + newProtocol, "data": json.RawMessage(data)}})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(resp)
	})
}
