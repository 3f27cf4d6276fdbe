package tokenexchange_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"go.uber.org/goleak"

	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/tokenexchange"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// sts is a test issuer with a client and a secret in a file, and a Source
// on the same clock.
type sts struct {
	iss *issuertest.Issuer
	clk *clock
	src *tokenexchange.Source
	cfg tokenexchange.Config
}

func newSTS(t *testing.T) *sts {
	clk := &clock{t: time.Now().Truncate(time.Second)}
	iss := issuertest.New(t, &issuertest.Options{Now: clk.Now})
	iss.SetClient("fleetgate-edge", "sts-client-secret")
	secret := filepath.Join(t.TempDir(), "sts")
	if err := os.WriteFile(secret, []byte("sts-client-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return &sts{iss: iss, clk: clk,
		src: tokenexchange.NewSource(&tokenexchange.SourceOptions{Now: clk.Now, Client: &tokenexchange.Options{HTTPClient: iss.Client()}}),
		cfg: tokenexchange.Config{TokenURL: iss.TokenURL(), ClientID: "fleetgate-edge", ClientSecret: credential.Ref{File: secret},
			Audience: "https://tickets.example", Scopes: []string{"tickets.read", "tickets.write"}}}
}

func (s *sts) subject(sub string) tokenexchange.Subject {
	c := s.iss.Claims(sub, "http://edge/mcp", "tools")
	return tokenexchange.Subject{Identity: s.iss.URL() + " " + sub, Token: credential.NewSecret(s.iss.Mint(c)),
		Expiry: time.Unix(c["exp"].(int64), 0)}
}

func claimsOf(t *testing.T, tok string) map[string]any {
	t.Helper()
	p, err := jwt.ParseSigned(tok, []jose.SignatureAlgorithm{jose.RS256})
	if err == nil {
		var m map[string]any
		if err = p.UnsafeClaimsWithoutVerification(&m); err == nil {
			return m
		}
	}
	t.Fatalf("issued token: %v", err)
	return nil
}

// Two users get different tokens of their own sub, for the backend's
// audience and scopes, each exchanged once and then served from the cache
// until shortly before it expires.
func TestSourceExchangesPerIdentity(t *testing.T) {
	s := newSTS(t)
	s.iss.SetTokenLifetime(10 * time.Minute)
	ctx := context.Background()
	alice, bob := s.subject("alice"), s.subject("bob")
	ta, err := s.src.Token(ctx, alice, "tickets", s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := s.src.Token(ctx, bob, "tickets", s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ta.Value.Reveal() == tb.Value.Reveal() || ta.Value.Reveal() == alice.Token.Reveal() {
		t.Fatal("alice's token is bob's, or her own")
	}
	ca := claimsOf(t, ta.Value.Reveal())
	if ca["sub"] != "alice" || ca["aud"] != "https://tickets.example" || ca["scope"] != "tickets.read tickets.write" ||
		ca["act"].(map[string]any)["sub"] != "fleetgate-edge" {
		t.Fatalf("alice's token claims: %v", ca)
	}
	ex := s.iss.Exchanges()
	if len(ex) != 2 || ex[0].SubjectToken != alice.Token.Reveal() || ex[1].Subject != "bob" {
		t.Fatalf("exchanges: %+v", ex)
	}
	s.clk.Add(9*time.Minute + 29*time.Second)
	if again, err := s.src.Token(ctx, alice, "tickets", s.cfg); err != nil || again.Value.Reveal() != ta.Value.Reveal() {
		t.Fatalf("cached token not served: %v", err)
	}
	if n := len(s.iss.Exchanges()); n != 2 {
		t.Fatalf("%d exchanges, want 2 (cached)", n)
	}
	// Inside the 30s margin before expiry: exchanged again.
	s.clk.Add(2 * time.Second)
	fresh, err := s.src.Token(ctx, alice, "tickets", s.cfg)
	if err != nil || fresh.Value.Reveal() == ta.Value.Reveal() || len(s.iss.Exchanges()) != 3 {
		t.Fatalf("expiring token not replaced: %v, %d exchanges", err, len(s.iss.Exchanges()))
	}
	// Another configuration (audience) of the same backend asks anew.
	other := s.cfg
	other.Audience = "https://other.example"
	if _, err := s.src.Token(ctx, alice, "tickets", other); err != nil || len(s.iss.Exchanges()) != 4 {
		t.Fatalf("new audience: %v, %d exchanges", err, len(s.iss.Exchanges()))
	}
	if ex, hits, cached := s.src.Stats(); ex != 4 || hits != 1 || cached != 3 {
		t.Fatalf("stats %d %d %d", ex, hits, cached)
	}
}

// Concurrent first calls of one identity share one exchange.
func TestSourceOneFlight(t *testing.T) {
	s := newSTS(t)
	carol := s.subject("carol")
	var wg sync.WaitGroup
	toks := make([]string, 16)
	for i := range toks {
		wg.Go(func() {
			tok, err := s.src.Token(context.Background(), carol, "tickets", s.cfg)
			if err != nil {
				t.Error(err)
			}
			toks[i] = tok.Value.Reveal()
		})
	}
	wg.Wait()
	if n := len(s.iss.Exchanges()); n != 1 {
		t.Fatalf("%d exchanges for one identity", n)
	}
	for _, tok := range toks {
		if tok != toks[0] {
			t.Fatal("callers got different tokens")
		}
	}
}

// A refusal carries the endpoint's error code, is not cached, and quotes
// neither token nor secret; a wrong client secret is invalid_client.
func TestSourceRefused(t *testing.T) {
	s := newSTS(t)
	dave := s.subject("dave")
	s.iss.RefuseExchanges("invalid_target")
	_, err := s.src.Token(context.Background(), dave, "tickets", s.cfg)
	var re *tokenexchange.RefusedError
	if !errors.As(err, &re) || re.Code != "invalid_target" || !strings.Contains(err.Error(), `token exchange: token endpoint refused the request: error "invalid_target"`) {
		t.Fatalf("refusal: %v", err)
	}
	if strings.Contains(err.Error(), dave.Token.Reveal()) || strings.Contains(err.Error(), "sts-client-secret") {
		t.Fatal("the error quotes a secret")
	}
	s.iss.RefuseExchanges("")
	if _, err := s.src.Token(context.Background(), dave, "tickets", s.cfg); err != nil {
		t.Fatalf("after the refusal ended: %v", err)
	}
	bad := s.cfg
	secret := filepath.Join(t.TempDir(), "wrong")
	_ = os.WriteFile(secret, []byte("wrong"), 0o600)
	bad.ClientSecret = credential.Ref{File: secret}
	if _, err := s.src.Token(context.Background(), s.subject("erin"), "tickets", bad); !errors.As(err, &re) || re.Code != "invalid_client" {
		t.Fatalf("wrong secret: %v", err)
	}
	bad.ClientSecret = credential.Ref{Env: "TOKENEXCHANGE_TEST_UNSET"}
	if _, err := s.src.Token(context.Background(), s.subject("erin"), "tickets", bad); !errors.Is(err, credential.ErrUnresolved) {
		t.Fatalf("unresolved secret: %v", err)
	}
	if _, err := s.src.Token(context.Background(), tokenexchange.Subject{Identity: "x"}, "tickets", s.cfg); !errors.Is(err, tokenexchange.ErrNoSubject) {
		t.Fatalf("no subject token: %v", err)
	}
	// An expired subject token: the endpoint refuses it.
	frank := s.subject("frank")
	s.clk.Add(2 * time.Hour)
	if _, err := s.src.Token(context.Background(), frank, "tickets", s.cfg); !errors.As(err, &re) || re.Code != "invalid_grant" {
		t.Fatalf("expired subject: %v", err)
	}
}

// The client credentials grant gives the client's own token.
func TestClientCredentials(t *testing.T) {
	s := newSTS(t)
	tok, err := s.src.Client().ClientCredentials(context.Background(), s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c := claimsOf(t, tok.Value.Reveal()); c["sub"] != "fleetgate-edge" || c["aud"] != "https://tickets.example" {
		t.Fatalf("claims %v", c)
	}
	if g := s.iss.ClientGrants(); len(g) != 1 || g[0] != tok.Value.Reveal() {
		t.Fatal("grant not recorded")
	}
}

// A hostile endpoint: one that never answers is given up after the
// timeout, a huge answer is refused, a redirect is not followed, and a
// token URL with user info is not used.
func TestClientBounds(t *testing.T) {
	release := make(chan struct{})
	redirected := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hang":
			select {
			case <-r.Context().Done():
			case <-release:
			}
		case "/huge":
			w.WriteHeader(200)
			_, _ = w.Write([]byte(`{"access_token":"`))
			_, _ = w.Write([]byte(strings.Repeat("a", 2*tokenexchange.MaxResponse)))
		case "/redirect":
			http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
		case "/elsewhere":
			redirected = true
		}
	}))
	defer srv.Close()
	defer close(release)
	c := tokenexchange.NewClient(&tokenexchange.Options{Timeout: 100 * time.Millisecond})
	sub := credential.NewSecret("subject")
	if _, err := c.Exchange(context.Background(), tokenexchange.Config{TokenURL: srv.URL + "/hang"}, sub); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hanging endpoint: %v", err)
	}
	if _, err := c.Exchange(context.Background(), tokenexchange.Config{TokenURL: srv.URL + "/huge"}, sub); !errors.Is(err, tokenexchange.ErrBadResponse) {
		t.Fatalf("huge answer: %v", err)
	}
	if _, err := c.Exchange(context.Background(), tokenexchange.Config{TokenURL: srv.URL + "/redirect"}, sub); !errors.Is(err, tokenexchange.ErrBadResponse) || redirected {
		t.Fatalf("redirect: %v (followed %v)", err, redirected)
	}
	if _, err := c.Exchange(context.Background(), tokenexchange.Config{TokenURL: "http://u:p@" + strings.TrimPrefix(srv.URL, "http://")}, sub); err == nil || strings.Contains(err.Error(), "u:p") {
		t.Fatalf("user info: %v", err)
	}
}
