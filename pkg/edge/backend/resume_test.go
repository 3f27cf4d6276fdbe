package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call whose event stream the backend ends before the response (after
// an event id) is resumed by a GET with Last-Event-ID, as SEP-1699 has a
// client do, on the same session; the backend's later streams may end
// again and are resumed from their own last id. A stream without an id,
// or a backend that refuses the GET, fails the call.
func TestRawCallResumesClosedStream(t *testing.T) {
	var mu sync.Mutex
	var pending json.RawMessage // the call's id, answered on the last GET
	var gets []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sid := r.Header.Get("Mcp-Session-Id")
		if r.Method == http.MethodGet {
			last := r.Header.Get("Last-Event-ID")
			mu.Lock()
			gets = append(gets, sid+"@"+last)
			id := pending
			mu.Unlock()
			switch {
			case sid == "refused":
				http.Error(w, "no", http.StatusMethodNotAllowed)
			case last == "e1": // ends again, after another id
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "id: e2\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n")
			case last == "e2":
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "id: e3\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"resumed\"}]}}\n\n", id)
			default:
				http.Error(w, "unknown event id", http.StatusBadRequest)
			}
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &req)
		if req.Method != "tools/call" {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		mu.Lock()
		pending = req.ID
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if sid == "no-id" {
			fmt.Fprint(w, "data: \n\n") // a priming event without an id: nothing to resume from
			return
		}
		fmt.Fprint(w, "id: e1\nretry: 10\ndata: \n\n") // priming, then the stream ends
	}))
	defer srv.Close()
	p := NewPool(srv.Client(), time.Minute, 0, nil)
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "t", Arguments: map[string]any{}}
	raw, _, err := p.rawCall(ctx, peer{url: srv.URL, sid: "s1"}, "tools/call", params, nil)
	if err != nil || string(raw) != `{"content":[{"type":"text","text":"resumed"}]}` {
		t.Fatalf("resumed call: %s, %v", raw, err)
	}
	mu.Lock()
	if fmt.Sprint(gets) != "[s1@e1 s1@e2]" {
		t.Fatalf("resuming GETs: %v", gets)
	}
	mu.Unlock()
	if _, _, err := p.rawCall(ctx, peer{url: srv.URL, sid: "no-id"}, "tools/call", params, nil); !errors.Is(err, errNoResponse) {
		t.Fatalf("a stream without an id: %v", err)
	}
	var hs *errHTTPStatus
	if _, _, err := p.rawCall(ctx, peer{url: srv.URL, sid: "refused"}, "tools/call", params, nil); !errors.As(err, &hs) || hs.code != http.StatusMethodNotAllowed {
		t.Fatalf("a refused resumption: %v", err)
	}
}
