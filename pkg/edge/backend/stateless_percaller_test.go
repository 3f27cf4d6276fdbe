package backend

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
)

// A backend with per-caller credentials that speaks only the stateless
// revision gets each caller's exchanged token on each stateless request
// (never the caller's own); a token it refuses is exchanged again and the
// request sent once more; a refused exchange names the endpoint's code.
func TestStatelessPerCaller(t *testing.T) {
	f := newExchangeFixture(t, CallerOptions{})
	b := demobackend.New("tickets", &demobackend.Options{StatelessOnly: true})
	if err := b.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	target, _ := url.Parse(b.URL())
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	var mu sync.Mutex
	var seen []string // the users of the tokens the backend took
	refuse := 0       // the next requests answered 401 although their token is valid
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		user, ok := f.iss.Subject(tok)
		mu.Lock()
		if ok && refuse > 0 {
			refuse, ok = refuse-1, false
		}
		if ok {
			seen = append(seen, user)
		}
		mu.Unlock()
		if !ok {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(be.Close)
	f.cfg.URL = be.URL + target.Path
	call := func(sub string) (string, error) {
		id := f.identity(t, sub)
		raw, err := f.p.Stateless(WithCaller(context.Background(), id), Request{Backend: "tickets", Config: f.cfg, Revision: "2026-07-28",
			Method: "tools/call", Name: "echo", Params: map[string]any{"name": "echo", "arguments": map[string]any{"text": sub},
				"_meta": json.RawMessage(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`)}})
		if err != nil {
			return "", err
		}
		var res struct {
			Content []struct{ Text string } `json:"content"`
		}
		if err := json.Unmarshal(raw, &res); err != nil || len(res.Content) == 0 {
			return "", err
		}
		return res.Content[0].Text, nil
	}
	for _, u := range []string{"alice", "bob"} {
		if got, err := call(u); err != nil || !strings.Contains(got, u) {
			t.Fatalf("%s's stateless call: %q %v", u, got, err)
		}
	}
	ex := f.iss.Exchanges()
	if len(ex) != 2 || ex[0].Subject != "alice" || ex[1].Subject != "bob" {
		t.Fatalf("exchanges %+v", ex)
	}
	mu.Lock()
	if len(seen) != 2 || seen[0] != "alice" || seen[1] != "bob" {
		t.Fatalf("the backend took the tokens of %v", seen)
	}
	refuse = 1 // alice's token revoked at the backend
	mu.Unlock()
	if got, err := call("alice"); err != nil || !strings.Contains(got, "alice") || len(f.iss.Exchanges()) != 3 {
		t.Fatalf("after a 401: %q %v (%d exchanges)", got, err, len(f.iss.Exchanges()))
	}
	f.iss.RefuseExchanges("invalid_target")
	if _, err := call("carol"); err == nil || !strings.Contains(err.Error(), `(error "invalid_target")`) {
		t.Fatalf("a refused exchange: %v", err)
	}
}
