package prober

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/backendnet"
	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/health"
)

// TestHeadersFromReference: the prober resolves the target's header
// references itself and sends them on every request (the backend answers
// 401 to any request without them); no observation quotes the value.
func TestHeadersFromReference(t *testing.T) {
	const token = "tok-9d1c44e2b7"
	t.Setenv("PROBER_TEST_AUTHORIZATION", "Bearer "+token)
	for _, transport := range []string{TransportStreamable, TransportSSE} {
		t.Run(transport, func(t *testing.T) {
			b := startBackend(t, "locked", &demobackend.Options{SSE: transport == TransportSSE})
			b.RequireToken(token)
			tg := target(b, transport)
			tg.Headers = credential.Headers{"Authorization": {Env: "PROBER_TEST_AUTHORIZATION"}}
			rec := newRecorder()
			run(t, tg, rec.sink(), &Options{Policy: health.Policy{Interval: 20 * time.Millisecond, Timeout: 2 * time.Second}})
			o, i := rec.waitObs(t, 0, "OK", func(health.Observation) bool { return true })
			if o.v.Result != health.OK {
				t.Fatalf("first observation %+v, want OK", o.v)
			}
			rec.waitCatalog(t, 0, "catalog", anyCatalog)
			for range 3 { // pings on the session carry it too
				o, i = rec.waitObs(t, i+1, "ping", func(health.Observation) bool { return true })
				if o.v.Result != health.OK {
					t.Fatalf("ping %+v", o.v)
				}
			}
			b.RequireToken("another")
			o, _ = rec.waitObs(t, i+1, "auth failure", isResult(health.AuthFailure))
			for _, o := range rec.snapshotObs() {
				if strings.Contains(o.Reason, token) {
					t.Fatalf("reason quotes the secret: %q", o.Reason)
				}
			}
		})
	}
}

// TestUnresolvedHeader: a reference that does not resolve is a Failure
// naming the reference, and nothing is sent.
func TestUnresolvedHeader(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	rec := newRecorder()
	run(t, Target{Group: "default", Name: "alpha", URL: srv.URL + "/mcp",
		Headers: credential.Headers{"Authorization": {Env: "PROBER_TEST_UNSET"}}}, rec.sink(), &Options{Policy: health.Policy{Interval: time.Hour}})
	o, _ := rec.waitObs(t, 0, "failure", func(health.Observation) bool { return true })
	if o.v.Result != health.Failure || !strings.Contains(o.v.Reason, `credential of backend "default/alpha", header Authorization: env PROBER_TEST_UNSET: not set`) {
		t.Fatalf("observation %+v", o.v)
	}
	if hits.Load() != 0 {
		t.Fatalf("%d requests sent without the credential", hits.Load())
	}
}

// TestRedirectNotFollowed: a backend answering 302 to another server is a
// failure, and the other server gets no request (nor the credentials),
// whatever CheckRedirect the client given says.
func TestRedirectNotFollowed(t *testing.T) {
	t.Setenv("PROBER_TEST_AUTHORIZATION", "Bearer x")
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/mcp", http.StatusFound)
	}))
	defer redirecting.Close()
	for _, transport := range []string{TransportStreamable, TransportSSE} {
		rec := newRecorder()
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		follow := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return nil }}
		run(t, Target{Group: "default", Name: "redir", URL: redirecting.URL + "/mcp", Transport: transport,
			Headers: credential.Headers{"Authorization": {Env: "PROBER_TEST_AUTHORIZATION"}}}, rec.sink(),
			&Options{Policy: health.Policy{Interval: time.Hour}, HTTPClient: follow})
		o, _ := rec.waitObs(t, 0, "failure", func(health.Observation) bool { return true })
		if o.v.Result == health.OK {
			t.Fatalf("%s: redirect probed OK", transport)
		}
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the redirect target got %d requests", n)
	}
}

// TestLinkLocalRefused: the default transport refuses a link-local
// address at dial time unless the target allows it.
func TestLinkLocalRefused(t *testing.T) {
	rec := newRecorder()
	p := New(Target{Group: "default", Name: "meta", URL: "http://169.254.169.254:9/mcp"}, rec.sink(),
		&Options{Policy: health.Policy{Interval: time.Hour, Timeout: 300 * time.Millisecond}})
	stop := runProber(t, p)
	o, _ := rec.waitObs(t, 0, "failure", func(health.Observation) bool { return true })
	stop()
	if o.v.Result != health.Failure || !strings.Contains(o.v.Reason, backendnet.ErrLinkLocal.Error()) {
		t.Fatalf("observation %+v, want a link-local refusal", o.v)
	}
	// Allowed: the dial is made (here by a transport that only checks and
	// records the address, so that no test connects to a real metadata
	// service).
	var dialed atomic.Value
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if err := backendnet.Control(ctx, network, addr, nil); err != nil {
			return nil, err
		}
		dialed.Store(addr)
		return nil, errors.New("test transport: not dialing")
	}}
	for _, allow := range []bool{false, true} {
		rec = newRecorder()
		p = New(Target{Group: "default", Name: "meta", URL: "http://169.254.169.254:9/mcp", AllowLinkLocal: allow}, rec.sink(),
			&Options{Policy: health.Policy{Interval: time.Hour, Timeout: 300 * time.Millisecond}, HTTPClient: &http.Client{Transport: tr}})
		stop = runProber(t, p)
		o, _ = rec.waitObs(t, 0, "failure", func(health.Observation) bool { return true })
		stop()
		refused := strings.Contains(o.v.Reason, backendnet.ErrLinkLocal.Error())
		if refused == allow || (dialed.Load() != nil) != allow {
			t.Fatalf("allow_link_local %v: %+v, dialed %v", allow, o.v, dialed.Load())
		}
	}
}

// runProber runs p until the returned stop is called.
func runProber(t *testing.T, p *Prober) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// TestUnresolvedHeaderLoggedOnce: the failing reference is logged once per
// outage, not at every connect attempt.
func TestUnresolvedHeaderLoggedOnce(t *testing.T) {
	var logs strings.Builder
	var mu sync.Mutex
	lg := zerolog.New(zerolog.SyncWriter(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	})))
	rec := newRecorder()
	run(t, Target{Group: "default", Name: "alpha", URL: "http://127.0.0.1:1/mcp",
		Headers: credential.Headers{"Authorization": {Env: "PROBER_TEST_UNSET"}}}, rec.sink(),
		&Options{Policy: health.Policy{Interval: time.Hour}, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Logger: &lg})
	from := 0
	for range 5 {
		_, i := rec.waitObs(t, from, "failure", isResult(health.Failure))
		from = i + 1
	}
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(logs.String(), "backend credential unresolved"); n != 1 {
		t.Fatalf("logged %d times:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "env PROBER_TEST_UNSET: not set") {
		t.Fatalf("log does not name the reference:\n%s", logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
