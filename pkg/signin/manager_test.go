package signin

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/natsnode/natstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// protectedBackend is a backend URL whose 401 names its RFC 9728 metadata,
// which names iss.
func protectedBackend(t *testing.T, iss *issuertest.Issuer) string {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	resource := srv.URL + "/mcp"
	mux.Handle("/.well-known/oauth-protected-resource/mcp", iss.ProtectedResource(resource))
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	})
	return resource
}

// fleet is two edges' managers over one bucket with one key.
type fleet struct {
	a, b    *Manager
	mu      sync.Mutex
	changes []string // "edge identity backend"
	changed chan struct{}
	rounds  map[*Manager]func() // each edge's writer of held tokens: one round
	cancel  context.CancelFunc
	done    sync.WaitGroup
	// what open needs for another edge
	ctx context.Context
	js  jetstream.JetStream
	key *Key
	now func() time.Time
}

func newFleet(t testing.TB, now func() time.Time) *fleet {
	t.Helper()
	node := natstest.Start(t)
	js, err := jetstream.New(natstest.Connect(t, node.ClientURL()))
	if err != nil {
		t.Fatal(err)
	}
	key, err := NewKey([]byte(strings.Repeat("s", 40)))
	if err != nil {
		t.Fatal(err)
	}
	f := &fleet{changed: make(chan struct{}, 1), rounds: map[*Manager]func(){}, js: js, key: key, now: now}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	t.Cleanup(func() { f.cancel(); f.done.Wait() })
	f.a, f.b = f.open("a"), f.open("b")
	return f
}

// open runs the manager of another edge of f, once it holds the bucket's
// content.
func (f *fleet) open(edge string) *Manager {
	m := Open(Options{Key: f.key, JetStream: f.js, Unbound: true, RedirectURL: "https://" + edge + ".edge.example/oauth/callback", Now: f.now,
		HTTPClient: &http.Client{}, OnChange: func(id, b string) {
			f.mu.Lock()
			f.changes = append(f.changes, edge+" "+id+" "+b)
			f.mu.Unlock()
			select {
			case f.changed <- struct{}{}:
			default:
			}
		}})
	tick, round := make(chan time.Time), make(chan struct{})
	m.saveTicks, m.afterRound = tick, func() { round <- struct{}{} }
	f.mu.Lock()
	f.rounds[m] = func() { tick <- time.Time{}; <-round }
	f.mu.Unlock()
	f.done.Add(1)
	go func() { defer f.done.Done(); _ = m.Run(f.ctx) }()
	<-m.Ready()
	return m
}

// saveRound runs one round of m's writer of held tokens (m of f), at the
// time of f's clock.
func (f *fleet) saveRound(m *Manager) {
	f.mu.Lock()
	round := f.rounds[m]
	f.mu.Unlock()
	round()
}

// authorize is the user's browser at the authorization URL: the code and
// state of the redirect to the edge.
func authorize(t *testing.T, authURL, user string) (code, state string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, authURL, nil)
	req.Header.Set(issuertest.UserHeader, user)
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		t.Fatalf("authorize: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query().Get("code"), loc.Query().Get("state")
}

func noSecret(string, string) credential.Ref { return credential.Ref{} }

// A sign-in begun on one edge completes on the other (the state is
// sealed, not held; the code redeemed with the redirect URI of the edge
// that began it), the PKCE verifier reaches the issuer, and the
// sign-in reaches the first edge by the bucket: the access token is
// refreshed there with the sealed refresh token. A sign-out on one edge
// ends it on both; a state for another key or altered is refused.
func TestSignInAcrossEdges(t *testing.T) {
	var clock struct {
		sync.Mutex
		t time.Time
	}
	clock.t = time.Now()
	now := func() time.Time { clock.Lock(); defer clock.Unlock(); return clock.t }
	iss := issuertest.New(t, &issuertest.Options{Now: now})
	iss.SetTokenLifetime(time.Minute)
	backend := protectedBackend(t, iss)
	f := newFleet(t, now)
	ctx := context.Background()
	cfg := &credential.Auth{Type: credential.AuthUserOAuth, Scopes: []string{"docs.read"}}
	const alice = "https://idp alice"

	if _, err := f.a.Authorization(ctx, alice, "docs", cfg); !errors.Is(err, ErrNotSignedIn) {
		t.Fatalf("before sign-in: %v", err)
	}
	authURL, err := f.a.Begin(ctx, alice, "docs", backend, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(authURL)
	q := u.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("resource") != backend || q.Get("client_id") != "dcr-1" ||
		q.Get("redirect_uri") != "https://a.edge.example/oauth/callback" || q.Get("scope") != "docs.read" {
		t.Fatalf("authorization URL %s", authURL)
	}
	code, state := authorize(t, authURL, "alice")
	if _, err := f.b.Complete(ctx, state+"x", code, Cookie(""), noSecret); !errors.Is(err, ErrRefused) && !errors.Is(err, ErrMalformed) {
		t.Fatalf("altered state: %v", err)
	}
	// An edge that takes no unbound sign-in refuses a state another edge
	// made unbound, before the code is redeemed.
	f.b.o.Unbound = false
	if _, err := f.b.Complete(ctx, state, code, Cookie(""), noSecret); !errors.Is(err, ErrNoBinding) || len(iss.CodeGrants()) != 0 {
		t.Fatalf("an unbound state on an edge that takes none: %v (grants %d)", err, len(iss.CodeGrants()))
	}
	f.b.o.Unbound = true
	p, err := f.b.Complete(ctx, state, code, Cookie(""), noSecret)
	if err != nil || p.Identity != alice || p.Backend != "docs" {
		t.Fatalf("complete: %+v %v", p, err)
	}
	g := iss.CodeGrants()
	if len(g) != 1 || !g[0].Verified || g[0].User != "alice" || g[0].Resource != backend {
		t.Fatalf("grants %+v", g)
	}
	if v, err := f.b.Authorization(ctx, alice, "docs", cfg); err != nil || v != "Bearer "+g[0].Access {
		t.Fatalf("edge b: %v", err)
	}
	// Edge a learns of it from the bucket, and refreshes (it holds no
	// access token).
	f.waitFor(t, func() bool { return f.a.SignedIn(alice, "docs") })
	v, err := f.a.Authorization(ctx, alice, "docs", cfg)
	if err != nil || len(iss.Refreshed()) != 1 || v != "Bearer "+iss.Refreshed()[0] {
		t.Fatalf("edge a: %v (refreshed %d)", err, len(iss.Refreshed()))
	}
	if sub, ok := iss.Subject(strings.TrimPrefix(v, "Bearer ")); !ok || sub != "alice" {
		t.Fatalf("refreshed token of %q", sub)
	}
	// Expired: refreshed again with the rotated refresh token.
	clock.Lock()
	clock.t = clock.t.Add(2 * time.Minute)
	clock.Unlock()
	if v2, err := f.a.Authorization(ctx, alice, "docs", cfg); err != nil || v2 == v || len(iss.Refreshed()) != 2 {
		t.Fatalf("after expiry: %v (refreshed %d)", err, len(iss.Refreshed()))
	}
	// The code is spent.
	if _, err := f.a.Complete(ctx, state, code, Cookie(""), noSecret); err == nil {
		t.Fatal("a code redeemed twice")
	}
	// Sign-out on b ends it on a.
	if err := f.b.SignOut(ctx, alice, "docs"); err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, func() bool { return !f.a.SignedIn(alice, "docs") })
	if _, err := f.a.Authorization(ctx, alice, "docs", cfg); !errors.Is(err, ErrNotSignedIn) {
		t.Fatalf("after sign-out: %v", err)
	}
	f.mu.Lock()
	changes := strings.Join(f.changes, "\n")
	f.mu.Unlock()
	if !strings.Contains(changes, "a "+alice+" docs") || !strings.Contains(changes, "b "+alice+" docs") {
		t.Fatalf("changes:\n%s", changes)
	}
}

// A verifier that does not match the challenge is refused by the issuer:
// the edge sends the one it sealed, and a state sealed with another
// verifier fails.
func TestPKCEVerified(t *testing.T) {
	iss := issuertest.New(t, nil)
	backend := protectedBackend(t, iss)
	f := newFleet(t, nil)
	ctx := context.Background()
	cfg := &credential.Auth{Type: credential.AuthUserOAuth, ClientID: "fleetgate"}
	authURL, err := f.a.Begin(ctx, "i bob", "docs", backend, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	code, state := authorize(t, authURL, "bob")
	p, err := f.a.o.Key.OpenState(state, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p.Verifier = NewVerifier()
	forged, _ := f.a.o.Key.SealState(p)
	if _, err := f.a.Complete(ctx, forged, code, Cookie(""), noSecret); err == nil || strings.Contains(err.Error(), code) {
		t.Fatalf("wrong verifier: %v", err)
	}
	if g := iss.CodeGrants(); len(g) != 1 || g[0].Verified {
		t.Fatalf("grants %+v", g)
	}
	if iss.Registrations() != 0 {
		t.Fatal("registered though a client_id is configured")
	}
}

// A revoked refresh token ends the sign-in: the next call asks to sign in.
func TestRefreshRefusedEndsSignIn(t *testing.T) {
	iss := issuertest.New(t, nil)
	backend := protectedBackend(t, iss)
	f := newFleet(t, nil)
	ctx := context.Background()
	cfg := &credential.Auth{Type: credential.AuthUserOAuth}
	authURL, err := f.a.Begin(ctx, "i carol", "docs", backend, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	code, state := authorize(t, authURL, "carol")
	if _, err := f.a.Complete(ctx, state, code, Cookie(""), noSecret); err != nil {
		t.Fatal(err)
	}
	iss.RevokeRefresh("carol")
	f.a.Forget("i carol", "docs")
	if _, err := f.a.Authorization(ctx, "i carol", "docs", cfg); !errors.Is(err, ErrNotSignedIn) {
		t.Fatalf("revoked: %v", err)
	}
	f.waitFor(t, func() bool { return !f.b.SignedIn("i carol", "docs") })
}

// Discovery is bounded: a redirect to another origin is not followed, a
// link-local address is not dialed (the default client), an oversized
// document is refused.
func TestDiscoveryBounded(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"resource":"x","authorization_servers":["https://as"]}`))
	}))
	defer other.Close()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	mux.HandleFunc("/.well-known/oauth-protected-resource/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL, http.StatusFound)
	})
	mux.HandleFunc("/.well-known/oauth-protected-resource/big", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"resource":"` + strings.Repeat("x", MaxDocument) + `"}`))
	})
	hc := newHTTPClient(&http.Client{})
	ctx := context.Background()
	if _, _, err := discover(ctx, &hc, time.Second, srv.URL+"/redirect"); err == nil || !errors.Is(err, errOtherOrigin) {
		t.Fatalf("redirect: %v", err)
	}
	if _, _, err := discover(ctx, &hc, time.Second, srv.URL+"/big"); !errors.Is(err, ErrBadMetadata) {
		t.Fatalf("big: %v", err)
	}
	guarded := newHTTPClient(nil)
	if _, _, err := discover(ctx, &guarded, time.Second, "http://169.254.169.254/mcp"); err == nil {
		t.Fatal("dialed a link-local address")
	}
}

// waitFor waits for cond, checked after each change either edge hears.
func (f *fleet) waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-f.changed:
		case <-timeout:
			t.Fatal("condition not met within 10s")
		}
	}
}
