package prober

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/health"
)

// TestProbeTokenExchangeBackend: a backend with per-caller credentials is
// probed with a token of the client itself (client credentials grant at
// its token endpoint, for its audience); a backend that answers that
// token with 401, and an endpoint that refuses the grant, are
// authentication failures (unauthenticated), never plain failures; no
// observation quotes a token or the client secret.
func TestProbeTokenExchangeBackend(t *testing.T) {
	iss := issuertest.New(t, nil)
	iss.SetClient("fleetgate-ctl", "probe-secret")
	t.Setenv("PROBER_TEST_STS_SECRET", "probe-secret")
	demo := demobackend.New("tickets", nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return demo.Server() }, nil)
	var refuse atomic.Bool
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := r.Header.Get("Authorization")
		mu.Lock()
		seen = append(seen, a)
		mu.Unlock()
		if refuse.Load() || !slices.Contains(iss.ClientGrants(), strings.TrimPrefix(a, "Bearer ")) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	tg := Target{Group: "default", Name: "tickets", URL: srv.URL + "/mcp",
		Auth: &credential.Auth{Type: credential.AuthTokenExchange, TokenURL: iss.TokenURL(), Audience: "https://tickets.example",
			Scopes: []string{"tickets.read"}, ClientID: "fleetgate-ctl", ClientSecret: credential.Ref{Env: "PROBER_TEST_STS_SECRET"}}}
	rec := newRecorder()
	run(t, tg, rec.sink(), &Options{Policy: health.Policy{Interval: 20 * time.Millisecond, Timeout: 2 * time.Second}, MaxBackoff: 20 * time.Millisecond})
	o, i := rec.waitObs(t, 0, "OK", func(health.Observation) bool { return true })
	if o.v.Result != health.OK {
		t.Fatalf("first observation %+v, want OK", o.v)
	}
	rec.waitCatalog(t, 0, "catalog", anyCatalog)
	grants := iss.ClientGrants()
	if len(grants) != 1 {
		t.Fatalf("%d client credentials grants, want 1 (the token kept)", len(grants))
	}
	// The backend refuses the token: unauthenticated; the token is asked
	// again, and refused at the endpoint: still an auth failure.
	iss.SetClient("fleetgate-ctl", "rotated")
	refuse.Store(true)
	o, i = rec.waitObs(t, i+1, "auth failure", isResult(health.AuthFailure))
	o, _ = rec.waitObs(t, i+1, "grant refused", func(o health.Observation) bool {
		return strings.Contains(o.Reason, `token endpoint refused the probe's client credentials grant: error "invalid_client"`)
	})
	if o.v.Result != health.AuthFailure {
		t.Fatalf("refused grant: %+v", o.v)
	}
	for _, ob := range rec.snapshotObs() {
		if ob.Result == health.Failure {
			t.Errorf("a plain failure: %+v", ob)
		}
		for _, s := range append(grants, "probe-secret") {
			if strings.Contains(ob.Reason, s) {
				t.Fatalf("reason quotes a secret: %q", ob.Reason)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, a := range seen {
		if a != "Bearer "+grants[0] {
			t.Fatalf("the backend got Authorization %.20q, not the probe token", a)
		}
	}
}

// TestProbeUserOAuthBackend: a user_oauth backend is probed with its
// static headers (a probe-only credential) and no token grant; without
// the credential it answers 401: an authentication failure, never a
// plain failure.
func TestProbeUserOAuthBackend(t *testing.T) {
	t.Setenv("PROBER_TEST_PROBE_KEY", "probe-key")
	demo := demobackend.New("docs", nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return demo.Server() }, nil)
	var refuse atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse.Load() || r.Header.Get("X-Probe-Key") != "probe-key" || r.Header.Get("Authorization") != "" {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://x/.well-known/oauth-protected-resource"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	tg := Target{Group: "default", Name: "docs", URL: srv.URL + "/mcp",
		Headers: credential.Headers{"X-Probe-Key": credential.Ref{Env: "PROBER_TEST_PROBE_KEY"}},
		Auth:    &credential.Auth{Type: credential.AuthUserOAuth, Scopes: []string{"docs.read"}}}
	rec := newRecorder()
	run(t, tg, rec.sink(), &Options{Policy: health.Policy{Interval: 20 * time.Millisecond, Timeout: 2 * time.Second}, MaxBackoff: 20 * time.Millisecond})
	o, i := rec.waitObs(t, 0, "OK", func(health.Observation) bool { return true })
	if o.v.Result != health.OK {
		t.Fatalf("first observation %+v, want OK", o.v)
	}
	rec.waitCatalog(t, 0, "catalog", anyCatalog)
	refuse.Store(true)
	rec.waitObs(t, i+1, "auth failure", isResult(health.AuthFailure))
	for _, ob := range rec.snapshotObs() {
		if ob.Result == health.Failure || strings.Contains(ob.Reason, "probe-key") {
			t.Errorf("observation %+v", ob)
		}
	}
}
