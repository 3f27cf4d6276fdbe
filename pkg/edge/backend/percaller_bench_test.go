package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/auth"
	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/tokenexchange"
)

// The numbers of per-caller sessions: a call of a new identity (token
// exchange and session included) against a call of a known one, and the
// edge's memory per identity with a backend session. The backend and the
// token endpoint are minimal handlers keeping nothing per session or
// token (so that the heap measured is the pool's): the backend answers
// initialize with a session id and tools/call with a fixed result; the
// endpoint issues an opaque token per request.
//
//	go test -run '^$' -bench 'PerCallerCall' -benchtime 300x -benchmem ./pkg/edge/backend/
//	go test -run '^$' -bench 'PerCallerMemory' -benchtime 1x ./pkg/edge/backend/

type benchCallers struct {
	p   *Pool
	cfg events.BackendConfig
	ids []*auth.Identity
}

func newBenchCallers(b *testing.B, n int) *benchCallers {
	b.Helper()
	var sids, toks atomic.Int64
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer x-") {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &m)
		w.Header().Set("Content-Type", "application/json")
		switch m.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", fmt.Sprint("s-", sids.Add(1)))
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"b","version":"1"}}}`, m.ID)
		case "tools/call":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}`, m.ID)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	b.Cleanup(be.Close)
	sts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"x-%d","token_type":"Bearer","expires_in":3600,"issued_token_type":"%s"}`, toks.Add(1), tokenexchange.TypeAccessToken)
	}))
	b.Cleanup(sts.Close)
	iss := issuertest.New(b, nil)
	v, err := auth.NewVerifier(auth.Options{Issuer: iss.URL(), Audience: edgeAudience, HTTPClient: iss.Client(), TokenCacheSize: n + 10})
	if err != nil {
		b.Fatal(err)
	}
	bc := &benchCallers{cfg: events.BackendConfig{URL: be.URL + "/mcp", Auth: &credential.Auth{Type: credential.AuthTokenExchange,
		TokenURL: sts.URL + "/token", ClientID: "edge"}}}
	for i := range n {
		id, err := v.Verify(context.Background(), iss.Mint(iss.Claims(fmt.Sprint("user-", i), edgeAudience)))
		if err != nil {
			b.Fatal(err)
		}
		bc.ids = append(bc.ids, id)
	}
	bc.p = NewPool(&http.Client{}, 10*time.Second, 0, nil)
	bc.p.SetCallerOptions(CallerOptions{MaxSessions: n + 10, Exchange: &tokenexchange.SourceOptions{Client: &tokenexchange.Options{HTTPClient: sts.Client()}}})
	b.Cleanup(bc.p.CloseAll)
	return bc
}

func (bc *benchCallers) call(b *testing.B, id *auth.Identity) {
	if _, err := bc.p.CallTool(WithCaller(context.Background(), id), Call{Backend: "tickets", Config: bc.cfg, Tool: "echo", Args: json.RawMessage(`{}`)}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPerCallerCall: first, each call is of a new identity (a token
// exchange, a new backend session, the call); cached, one identity's
// token and session are reused.
func BenchmarkPerCallerCall(b *testing.B) {
	b.Run("first", func(b *testing.B) {
		bc := newBenchCallers(b, b.N)
		b.ResetTimer()
		for i := range b.N {
			bc.call(b, bc.ids[i])
		}
	})
	b.Run("cached", func(b *testing.B) {
		bc := newBenchCallers(b, 1)
		bc.call(b, bc.ids[0])
		b.ResetTimer()
		for range b.N {
			bc.call(b, bc.ids[0])
		}
	})
}

// BenchmarkPerCallerMemory reports the heap the pool holds per identity
// with an open backend session and a cached token (bytes/identity), over
// 1,000 identities.
func BenchmarkPerCallerMemory(b *testing.B) {
	const n = 1000
	for range b.N {
		b.StopTimer()
		bc := newBenchCallers(b, n)
		bc.call(b, bc.ids[0]) // the client's first-use allocations
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		for _, id := range bc.ids[1:] {
			bc.call(b, id)
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		if _, _, _, s := bc.p.TokenStats(); s != n {
			b.Fatalf("%d sessions open, want %d", s, n)
		}
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(n-1), "bytes/identity")
		runtime.KeepAlive(bc)
	}
}
