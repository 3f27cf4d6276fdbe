package auth_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/fleetgate/fleetgate/pkg/auth"
	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
)

const (
	audience = "http://127.0.0.1:8080/mcp"
	mdURL    = "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"
)

// setup starts an issuer and a verifier on one clock.
func setup(t testing.TB, io *issuertest.Options, o auth.Options) (*issuertest.Issuer, *auth.Verifier, *clock) {
	t.Helper()
	clk := newClock()
	if io == nil {
		io = &issuertest.Options{}
	}
	io.Now = clk.Now
	iss := issuertest.New(t, io)
	if o.Issuer == "" {
		o.Issuer = iss.URL()
	}
	if o.Audience == "" {
		o.Audience = audience
	}
	o.Now, o.HTTPClient = clk.Now, iss.Client()
	v, err := auth.NewVerifier(o)
	if err != nil {
		t.Fatal(err)
	}
	return iss, v, clk
}

func hs256(t *testing.T, claims map[string]any) string {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte("0123456789abcdef0123456789abcdef")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func unsigned(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc([]byte(claims)) + "."
}

// Every refusal reason: its sentinel, its Reason label, and the
// contract's status and WWW-Authenticate value.
func TestRefusals(t *testing.T) {
	iss, v, clk := setup(t, nil, auth.Options{Scopes: []string{"tools", "read"}})
	now := clk.Now()
	ok := func(mod func(c map[string]any)) string {
		c := iss.Claims("alice", audience, "tools", "read")
		if mod != nil {
			mod(c)
		}
		return iss.Mint(c)
	}
	invalid := `Bearer resource_metadata="` + mdURL + `", error="invalid_token"`
	cases := []struct {
		name   string
		token  string
		want   error
		reason string
		status int
		header string
	}{
		{"no token", "", auth.ErrNoToken, "no_token", 401, `Bearer resource_metadata="` + mdURL + `"`},
		{"not a JWT", "abc.def", auth.ErrMalformed, "malformed", 401, invalid},
		{"alg none", unsigned(`{"iss":"` + iss.URL() + `","sub":"a","aud":"` + audience + `"}`), auth.ErrMalformed, "malformed", 401, invalid},
		{"HS256", hs256(t, iss.Claims("alice", audience, "tools", "read")), auth.ErrMalformed, "malformed", 401, invalid},
		{"too large", ok(func(c map[string]any) { c["pad"] = strings.Repeat("x", 17<<10) }), auth.ErrMalformed, "malformed", 401, invalid},
		{"too deep", ok(func(c map[string]any) {
			var d any = 1
			for range 20 {
				d = []any{d}
			}
			c["deep"] = d
		}), auth.ErrMalformed, "malformed", 401, invalid},
		{"no sub", ok(func(c map[string]any) { delete(c, "sub") }), auth.ErrMalformed, "malformed", 401, invalid},
		{"no exp", ok(func(c map[string]any) { delete(c, "exp") }), auth.ErrMalformed, "malformed", 401, invalid},
		{"exp a string", ok(func(c map[string]any) { c["exp"] = "tomorrow" }), auth.ErrMalformed, "malformed", 401, invalid},
		{"bad signature", iss.MintForged(jose.RS256, iss.KeyID(), iss.Claims("alice", audience, "tools", "read")), auth.ErrBadSignature, "bad_signature", 401, invalid},
		{"unknown key", iss.MintForged(jose.RS256, "stranger", iss.Claims("alice", audience, "tools", "read")), auth.ErrUnknownKey, "unknown_key", 401, invalid},
		{"ES256 token, RSA kid", iss.MintForged(jose.ES256, iss.KeyID(), iss.Claims("alice", audience, "tools", "read")), auth.ErrUnknownKey, "unknown_key", 401, invalid},
		{"wrong issuer", ok(func(c map[string]any) { c["iss"] = "https://evil.example" }), auth.ErrWrongIssuer, "wrong_issuer", 401, invalid},
		{"issuer with a trailing slash", ok(func(c map[string]any) { c["iss"] = iss.URL() + "/" }), auth.ErrWrongIssuer, "wrong_issuer", 401, invalid},
		{"no issuer", ok(func(c map[string]any) { delete(c, "iss") }), auth.ErrWrongIssuer, "wrong_issuer", 401, invalid},
		{"wrong audience", ok(func(c map[string]any) { c["aud"] = "http://other/mcp" }), auth.ErrWrongAudience, "wrong_audience", 401, invalid},
		{"audience list without ours", ok(func(c map[string]any) { c["aud"] = []string{"a", "b"} }), auth.ErrWrongAudience, "wrong_audience", 401, invalid},
		{"no audience", ok(func(c map[string]any) { delete(c, "aud") }), auth.ErrWrongAudience, "wrong_audience", 401, invalid},
		{"expired", ok(func(c map[string]any) { c["exp"] = now.Add(-31 * time.Second).Unix() }), auth.ErrExpired, "expired", 401, invalid},
		{"not yet valid", ok(func(c map[string]any) { c["nbf"] = now.Add(31 * time.Second).Unix() }), auth.ErrNotYetValid, "not_yet_valid", 401, invalid},
		{"issued in the future", ok(func(c map[string]any) { c["iat"] = now.Add(time.Hour).Unix() }), auth.ErrNotYetValid, "not_yet_valid", 401, invalid},
		{"missing scope", ok(func(c map[string]any) { c["scope"] = "tools" }), auth.ErrInsufficientScope, "insufficient_scope", 403,
			`Bearer resource_metadata="` + mdURL + `", error="insufficient_scope", scope="tools read"`},
		{"no scope at all", ok(func(c map[string]any) { delete(c, "scope") }), auth.ErrInsufficientScope, "insufficient_scope", 403,
			`Bearer resource_metadata="` + mdURL + `", error="insufficient_scope", scope="tools read"`},
		{"scope a number", ok(func(c map[string]any) { c["scope"] = 7 }), auth.ErrMalformed, "malformed", 401, invalid},
		// Accepted.
		{"valid", ok(nil), nil, "ok", 200, ""},
		{"expired within the leeway", ok(func(c map[string]any) { c["exp"] = now.Add(-29 * time.Second).Unix() }), nil, "ok", 200, ""},
		{"nbf within the leeway", ok(func(c map[string]any) { c["nbf"] = now.Add(29 * time.Second).Unix() }), nil, "ok", 200, ""},
		{"audience list with ours", ok(func(c map[string]any) { c["aud"] = []string{"x", audience} }), nil, "ok", 200, ""},
		{"scp array", ok(func(c map[string]any) { delete(c, "scope"); c["scp"] = []string{"read", "tools"} }), nil, "ok", 200, ""},
		{"scope and scp", ok(func(c map[string]any) { c["scope"] = "read"; c["scp"] = []string{"tools"} }), nil, "ok", 200, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, err := v.Verify(context.Background(), c.token)
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if (err == nil) != (id != nil) {
				t.Fatalf("identity %v with err %v", id, err)
			}
			if got := auth.Reason(err); got != c.reason {
				t.Errorf("Reason = %q, want %q", got, c.reason)
			}
			status, header := auth.Challenge(err, mdURL)
			if status != c.status || header != c.header {
				t.Errorf("Challenge = %d %q, want %d %q", status, header, c.status, c.header)
			}
			if err != nil && c.token != "" && strings.Contains(err.Error(), c.token[:min(len(c.token), 40)]) {
				t.Errorf("error text carries the token: %v", err)
			}
		})
	}
}

func TestIdentity(t *testing.T) {
	iss, v, clk := setup(t, nil, auth.Options{Scopes: []string{"tools"}})
	c := iss.Claims("alice", audience, "tools", "extra")
	c["roles"] = []string{"ops"}
	tok := iss.Mint(c)
	id, err := v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	// The token itself, for a token exchange; the cached identity too,
	// and never in the identity's printed form.
	again, err := v.Verify(context.Background(), tok)
	if err != nil || id.AccessToken() != tok || again.AccessToken() != tok || (&auth.Identity{}).AccessToken() != "" {
		t.Fatalf("access token of the identity: %v", err)
	}
	if strings.Contains(fmt.Sprintf("%v %+v %#v", id, id, id), tok) {
		t.Fatal("the identity prints its token")
	}
	if id.Issuer != iss.URL() || id.Subject != "alice" || strings.Join(id.Scopes, ",") != "tools,extra" ||
		!id.Expiry.Equal(clk.Now().Add(time.Hour)) {
		t.Fatalf("identity %+v", id)
	}
	if roles, _ := id.Claims["roles"].([]any); len(roles) != 1 || roles[0] != "ops" {
		t.Fatalf("claims %v", id.Claims)
	}
}

// RS256, ES256 and the other allowed algorithms verify; an algorithm left
// out of the allowlist does not.
func TestAlgorithms(t *testing.T) {
	iss, _, _ := setup(t, nil, auth.Options{})
	algs := []jose.SignatureAlgorithm{jose.ES256, jose.PS256, jose.ES384, jose.ES512, jose.EdDSA}
	kids := map[jose.SignatureAlgorithm]string{jose.RS256: iss.KeyID()}
	for _, alg := range algs {
		kids[alg] = iss.Rotate(alg)
	}
	v, err := auth.NewVerifier(auth.Options{Issuer: iss.URL(), Audience: audience, HTTPClient: iss.Client()})
	if err != nil {
		t.Fatal(err)
	}
	for alg, kid := range kids {
		if _, err := v.Verify(context.Background(), iss.MintWith(kid, iss.Claims("alice", audience))); err != nil {
			t.Errorf("%s: %v", alg, err)
		}
	}
	if n := iss.Hits(issuertest.HitJWKS); n != 1 {
		t.Errorf("%d JWKS fetches, want 1", n)
	}
	only, err := auth.NewVerifier(auth.Options{Issuer: iss.URL(), Audience: audience, HTTPClient: iss.Client(),
		Algorithms: []jose.SignatureAlgorithm{jose.ES256}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := only.Verify(context.Background(), iss.MintWith(kids[jose.RS256], iss.Claims("alice", audience))); !errors.Is(err, auth.ErrMalformed) {
		t.Fatalf("RS256 with only ES256 allowed: %v", err)
	}
	for _, bad := range []jose.SignatureAlgorithm{"none", jose.HS256, jose.HS512, "XX1"} {
		if _, err := auth.NewVerifier(auth.Options{Issuer: iss.URL(), Audience: audience, Algorithms: []jose.SignatureAlgorithm{bad}}); !errors.Is(err, auth.ErrOptions) {
			t.Errorf("algorithm %s allowed: %v", bad, err)
		}
	}
}

func TestOptionsRefused(t *testing.T) {
	for _, o := range []auth.Options{
		{Audience: audience},
		{Issuer: "ftp://x", Audience: audience},
		{Issuer: "https://user:pw@x", Audience: audience},
		{Issuer: "https://x?q=1", Audience: audience},
		{Issuer: "https://x#f", Audience: audience},
		{Issuer: "https://x"},
		{Issuer: "https://x", Audience: audience, JWKSURL: "file:///etc/keys"},
		{Issuer: "https://x", Audience: audience, Scopes: []string{"a b"}},
		{Issuer: "https://x", Audience: audience, Scopes: []string{`a"`}},
	} {
		if _, err := auth.NewVerifier(o); !errors.Is(err, auth.ErrOptions) {
			t.Errorf("%+v: err = %v", o, err)
		}
	}
}

func TestVerifyRequest(t *testing.T) {
	iss, v, _ := setup(t, nil, auth.Options{})
	r, _ := http.NewRequest("POST", audience, nil)
	if _, err := v.VerifyRequest(r); !errors.Is(err, auth.ErrNoToken) {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", "bearer "+iss.Mint(iss.Claims("alice", audience)))
	if id, err := v.VerifyRequest(r); err != nil || id.Subject != "alice" {
		t.Fatal(id, err)
	}
	r.Header.Add("Authorization", "Bearer x")
	if _, err := v.VerifyRequest(r); !errors.Is(err, auth.ErrMalformed) {
		t.Fatal(err)
	}
}

// TestVerifyRequestCached: a token verified once is known again by its
// value (the same identity, whatever the scheme's case or the spaces
// around it), and only as a single well-formed Authorization header; a
// value that differs by one byte is verified from scratch; an expired one
// is refused although it was cached.
func TestVerifyRequestCached(t *testing.T) {
	iss, v, clk := setup(t, nil, auth.Options{})
	tok := iss.Mint(iss.Claims("alice", audience))
	r, _ := http.NewRequest("POST", audience, nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	first, err := v.VerifyRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"Bearer " + tok, "bearer   " + tok + " ", "\tBEARER " + tok} {
		r.Header.Set("Authorization", h)
		if id, err := v.VerifyRequest(r); err != nil || id != first {
			t.Fatalf("%.20q: %v, %v (want the cached identity)", h, id, err)
		}
	}
	for _, h := range []string{"Bearer " + tok + "!", "Bearer " + tok + " x", "Basic " + tok} {
		r.Header.Set("Authorization", h)
		if id, err := v.VerifyRequest(r); err == nil {
			t.Fatalf("%.20q…: accepted as %v", h, id)
		}
	}
	r.Header.Set("Authorization", "Bearer "+tok)
	r.Header.Add("Authorization", "Bearer "+tok)
	if _, err := v.VerifyRequest(r); !errors.Is(err, auth.ErrMalformed) {
		t.Fatalf("two Authorization headers: %v", err)
	}
	r.Header.Set("Authorization", "Bearer "+tok)
	clk.Add(2 * time.Hour)
	if _, err := v.VerifyRequest(r); !errors.Is(err, auth.ErrExpired) {
		t.Fatalf("expired, cached: %v", err)
	}
}

// Memo gives every caller the one value kept (however many make it at once), and
// a cached token's identity carries it to the next request.
func TestIdentityMemo(t *testing.T) {
	iss, v, _ := setup(t, nil, auth.Options{})
	tok := iss.Mint(iss.Claims("alice", audience))
	id, err := v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	var made atomic.Int32
	mk := func(id *auth.Identity) any { made.Add(1); return id.Subject + "!" }
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if got := id.Memo(mk); got != "alice!" {
				t.Errorf("Memo = %v", got)
			}
		})
	}
	wg.Wait()
	again, err := v.Verify(context.Background(), tok)
	if err != nil || again.Memo(func(*auth.Identity) any { return "other" }) != "alice!" {
		t.Fatalf("the cached identity lost its memo: %v", err)
	}
	if n := made.Load(); n < 1 || n > 8 {
		t.Fatalf("made %d times", n)
	}
}
