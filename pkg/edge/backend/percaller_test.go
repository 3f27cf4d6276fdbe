package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/auth"
	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/signin"
	"github.com/fleetgate/fleetgate/pkg/tokenexchange"
)

// exchangeFixture is a test issuer with a token endpoint, a verifier of
// its tokens (the edge's), a go-sdk backend that records the
// Authorization of every request by session, and a pool.
type exchangeFixture struct {
	iss *issuertest.Issuer
	v   *auth.Verifier
	clk *testClock
	p   *Pool
	cfg events.BackendConfig

	mu      sync.Mutex
	seen    map[string][]string // Mcp-Session-Id ("" before one) -> Authorization values
	deleted []string            // sessions the edge closed (DELETE)
}

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

const edgeAudience = "http://edge.test/mcp"

func newExchangeFixture(t testing.TB, o CallerOptions) *exchangeFixture {
	t.Helper()
	f := &exchangeFixture{clk: &testClock{t: time.Now().Truncate(time.Second)}, seen: map[string][]string{}}
	f.iss = issuertest.New(t, &issuertest.Options{Now: f.clk.Now})
	f.iss.SetClient("fleetgate-edge", "sts-secret")
	t.Setenv("PERCALLER_TEST_STS_SECRET", "sts-secret")
	var err error
	if f.v, err = auth.NewVerifier(auth.Options{Issuer: f.iss.URL(), Audience: edgeAudience, Now: f.clk.Now, HTTPClient: f.iss.Client()}); err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "tickets", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sid := r.Header.Get("Mcp-Session-Id")
		f.mu.Lock()
		f.seen[sid] = append(f.seen[sid], r.Header.Get("Authorization"))
		if r.Method == http.MethodDelete {
			f.deleted = append(f.deleted, sid)
		}
		f.mu.Unlock()
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(be.Close)
	f.cfg = events.BackendConfig{URL: be.URL + "/mcp", Transport: events.TransportStreamableHTTP,
		Auth: &credential.Auth{Type: credential.AuthTokenExchange, TokenURL: f.iss.TokenURL(), Audience: "https://tickets.example",
			Scopes: []string{"tickets.read"}, ClientID: "fleetgate-edge", ClientSecret: credential.Ref{Env: "PERCALLER_TEST_STS_SECRET"}}}
	f.p = NewPool(&http.Client{}, 10*time.Second, 0, nil)
	o.Exchange = &tokenexchange.SourceOptions{Now: f.clk.Now, Client: &tokenexchange.Options{HTTPClient: f.iss.Client()}}
	f.p.SetCallerOptions(o)
	t.Cleanup(f.p.CloseAll)
	return f
}

// identity is a verified identity of sub, as the edge's bearer auth gives.
func (f *exchangeFixture) identity(t testing.TB, sub string) *auth.Identity {
	t.Helper()
	id, err := f.v.Verify(context.Background(), f.iss.Mint(f.iss.Claims(sub, edgeAudience, "tools")))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (f *exchangeFixture) call(id *auth.Identity, text string) (string, error) {
	r, err := f.p.CallTool(WithCaller(context.Background(), id), Call{Backend: "tickets", Config: f.cfg, Tool: "echo",
		Args: json.RawMessage(`{"text":"` + text + `"}`)})
	if err != nil {
		return "", err
	}
	if r.Res != nil {
		return r.Res.Content[0].(*mcp.TextContent).Text, nil
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(r.Raw, &res); err != nil {
		return "", err
	}
	return res.Content[0].(*mcp.TextContent).Text, nil
}

// sessionsOf are the backend sessions that saw Authorization "Bearer tok".
func (f *exchangeFixture) sessionsOf(tok string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for sid, vals := range f.seen {
		for _, v := range vals {
			if v == "Bearer "+tok && sid != "" {
				out = append(out, sid)
				break
			}
		}
	}
	return out
}

// TestPerCallerTokenExchange: two users through the same pool reach the
// backend with the tokens exchanged for each, on sessions of their own,
// never with their own tokens; a token is exchanged once and then cached,
// and again when it nears expiry; a refused exchange names the backend
// and the endpoint's error code; a call without a verified caller is
// refused before anything is sent.
func TestPerCallerTokenExchange(t *testing.T) {
	f := newExchangeFixture(t, CallerOptions{})
	f.iss.SetTokenLifetime(10 * time.Minute)
	alice, bob := f.identity(t, "alice"), f.identity(t, "bob")
	for i, id := range []*auth.Identity{alice, bob, alice, bob, alice} {
		if got, err := f.call(id, id.Subject); err != nil || got != id.Subject {
			t.Fatalf("call %d as %s: %q %v", i, id.Subject, got, err)
		}
	}
	// The go-sdk path (prompts, resources) uses the caller's session too.
	if _, err := Do(WithCaller(context.Background(), bob), f.p, "tickets", f.cfg, "tools/list", nil,
		func(ctx context.Context, cs *mcp.ClientSession) (*mcp.ListToolsResult, error) {
			return cs.ListTools(ctx, nil)
		}); err != nil {
		t.Fatal(err)
	}
	ex := f.iss.Exchanges()
	if len(ex) != 2 || ex[0].Subject != "alice" || ex[1].Subject != "bob" || ex[0].Audience != "https://tickets.example" ||
		ex[0].Scope != "tickets.read" || ex[0].SubjectToken != alice.AccessToken() {
		t.Fatalf("exchanges: %+v", ex)
	}
	sa, sb := f.sessionsOf(ex[0].Issued), f.sessionsOf(ex[1].Issued)
	if len(sa) != 1 || len(sb) != 1 || sa[0] == sb[0] {
		t.Fatalf("alice's sessions %v, bob's %v: want one each, distinct", sa, sb)
	}
	f.mu.Lock()
	for sid, vals := range f.seen {
		for _, v := range vals {
			if v == "Bearer "+alice.AccessToken() || v == "Bearer "+bob.AccessToken() {
				t.Errorf("the backend got a caller's own token (session %q)", sid)
			}
			if sid == sa[0] && v != "Bearer "+ex[0].Issued || sid == sb[0] && v != "Bearer "+ex[1].Issued {
				t.Errorf("session %q got another caller's token", sid)
			}
		}
	}
	f.mu.Unlock()
	if x, hits, cached, sessions := f.p.TokenStats(); x != 2 || hits < 4 || cached != 2 || sessions != 2 {
		t.Fatalf("token stats: %d exchanges, %d hits, %d cached, %d sessions", x, hits, cached, sessions)
	}

	// Ten minutes on, alice's token is inside its margin: exchanged again
	// (with her token, still valid for the verifier's hour).
	f.clk.Add(9*time.Minute + 45*time.Second)
	if _, err := f.call(alice, "later"); err != nil {
		t.Fatal(err)
	}
	ex = f.iss.Exchanges()
	if len(ex) != 3 || ex[2].Subject != "alice" || len(f.sessionsOf(ex[2].Issued)) != 1 || f.sessionsOf(ex[2].Issued)[0] != sa[0] {
		t.Fatalf("alice's expiring token not refreshed on her session: %d exchanges", len(ex))
	}

	// A refused exchange: the caller's error names the backend and the code.
	f.iss.RefuseExchanges("invalid_target")
	carol := f.identity(t, "carol")
	_, err := f.call(carol, "x")
	if err == nil || !strings.Contains(err.Error(), `backend "tickets"`) ||
		!strings.Contains(err.Error(), `token exchange refused by the token endpoint (error "invalid_target")`) {
		t.Fatalf("refused exchange: %v", err)
	}
	for _, secret := range []string{carol.AccessToken(), alice.AccessToken(), "sts-secret", ex[0].Issued} {
		if strings.Contains(err.Error(), secret) {
			t.Fatal("the error quotes a token or the secret")
		}
	}
	f.iss.RefuseExchanges("")

	// No verified caller: refused, nothing sent.
	before := len(f.iss.Exchanges())
	if _, err := f.call(nil, "x"); err == nil || !strings.Contains(err.Error(), "no verified access token") {
		t.Fatalf("call without a caller: %v", err)
	}
	if len(f.iss.Exchanges()) != before {
		t.Fatal("an exchange without a caller")
	}
}

// The per-caller sessions are bounded (the least recently used closes),
// close when idle, and close with their backend's removal.
func TestPerCallerSessionsBounded(t *testing.T) {
	f := newExchangeFixture(t, CallerOptions{MaxSessions: 2, Idle: time.Hour})
	ids := []*auth.Identity{f.identity(t, "u1"), f.identity(t, "u2"), f.identity(t, "u3")}
	for _, id := range ids {
		if _, err := f.call(id, "x"); err != nil {
			t.Fatal(err)
		}
	}
	ex := f.iss.Exchanges()
	u1 := f.sessionsOf(ex[0].Issued)
	if _, _, _, n := f.p.TokenStats(); n != 2 || len(u1) != 1 {
		t.Fatalf("%d sessions open, want 2 (bound)", n)
	}
	waitDeleted := func(sid string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			f.mu.Lock()
			ok := false
			for _, d := range f.deleted {
				ok = ok || d == sid
			}
			f.mu.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("session %s not closed", sid)
			}
			f.p.bg.Wait() // the closes run on the pool's goroutines
		}
	}
	waitDeleted(u1[0])
	// Idle: u2's last use an hour and a second ago.
	f.p.callers.mu.Lock()
	var u2 string
	for k, c := range f.p.callers.conns {
		if k.identity == f.iss.URL()+" u2" {
			c.user.used.Store(time.Now().Add(-time.Hour - time.Second).UnixNano())
			c.mu.Lock()
			u2 = c.cs.ID()
			c.mu.Unlock()
		}
	}
	f.p.callers.mu.Unlock()
	f.p.sweepCallers()
	waitDeleted(u2)
	if _, _, _, n := f.p.TokenStats(); n != 1 {
		t.Fatalf("%d sessions after the idle sweep, want 1", n)
	}
	// The backend reconfigured: its callers' sessions close.
	f.p.Prune(map[string]events.BackendConfig{})
	if _, _, _, n := f.p.TokenStats(); n != 0 {
		t.Fatalf("%d sessions after the backend left", n)
	}
}

// A signed-in user's token not obtained: the kind names why, never a
// token or the server's answer beyond its error code.
func TestSignInKind(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: %w", errSignIn, signin.ErrNotSignedIn), "not signed in to the backend"},
		{fmt.Errorf("%w: %w", errSignIn, errNoSignIns), "keeps no sign-ins"},
		{fmt.Errorf("%w: %w", errSignIn, errNoCaller), "no verified access token"},
		{fmt.Errorf("%w: %w", errSignIn, &tokenexchange.RefusedError{Status: 400, Code: "invalid_client"}), `(error "invalid_client")`},
		{fmt.Errorf("%w: %w", errSignIn, context.DeadlineExceeded), "timed out"},
		{fmt.Errorf("%w: %w", errSignIn, errors.New("dial refused")), "unreachable"},
	} {
		if got := exchangeKind(tc.err); !strings.Contains(got, tc.want) {
			t.Errorf("exchangeKind(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
