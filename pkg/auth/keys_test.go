package auth_test

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

	"github.com/go-jose/go-jose/v4"

	"github.com/fleetgate/fleetgate/pkg/auth"
	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
)

func decodeJSON(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }

func mustVerify(t *testing.T, v *auth.Verifier, tok string) {
	t.Helper()
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, v *auth.Verifier, tok string, want error) {
	t.Helper()
	if _, err := v.Verify(context.Background(), tok); !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
}

// A new kid is picked up by a refetch (once the rate limit allows one); a
// retired key stops verifying at the next refresh.
func TestKeyRotation(t *testing.T) {
	iss, v, clk := setup(t, nil, auth.Options{})
	claims := func() map[string]any { return iss.Claims("alice", audience) }
	old := iss.KeyID()
	mustVerify(t, v, iss.Mint(claims()))
	if n := iss.Hits(issuertest.HitJWKS); n != 1 {
		t.Fatalf("%d JWKS fetches, want 1", n)
	}
	newKid := iss.Rotate(jose.ES256)
	// Within the refetch interval of the first fetch, the new kid is unknown.
	clk.Add(5 * time.Second)
	wantErr(t, v, iss.Mint(claims()), auth.ErrUnknownKey)
	if n := iss.Hits(issuertest.HitJWKS); n != 1 {
		t.Fatalf("%d JWKS fetches within the interval, want 1", n)
	}
	clk.Add(5 * time.Second)
	mustVerify(t, v, iss.MintWith(newKid, claims()))
	mustVerify(t, v, iss.MintWith(old, claims()))
	if n := iss.Hits(issuertest.HitJWKS); n != 2 {
		t.Fatalf("%d JWKS fetches, want 2", n)
	}
	// The old key is retired; until the keys' lifetime (5 min) ends the
	// cached copy still verifies, then the refresh drops it.
	iss.Retire(old)
	clk.Add(4 * time.Minute)
	mustVerify(t, v, iss.MintWith(old, claims()))
	clk.Add(time.Minute)
	wantErr(t, v, iss.MintWith(old, claims()), auth.ErrUnknownKey)
	mustVerify(t, v, iss.MintWith(newKid, claims()))
	if n := iss.Hits(issuertest.HitJWKS); n != 3 {
		t.Fatalf("%d JWKS fetches, want 3", n)
	}
}

// A flood of tokens with unknown kids, many at once, costs the issuer one
// JWKS fetch per refetch interval; concurrent misses share the fetch.
func TestRefetchRateLimit(t *testing.T) {
	iss, v, clk := setup(t, nil, auth.Options{})
	mustVerify(t, v, iss.Mint(iss.Claims("alice", audience)))
	tokens := make([]string, 50)
	for i := range tokens {
		tokens[i] = iss.MintForged(jose.ES256, fmt.Sprintf("made-up-%d", i), iss.Claims("mallory", audience))
	}
	flood := func() {
		var wg sync.WaitGroup
		for range 10 {
			for _, tok := range tokens {
				wg.Go(func() { wantErr(t, v, tok, auth.ErrUnknownKey) })
			}
		}
		wg.Wait()
	}
	flood()
	if n := iss.Hits(issuertest.HitJWKS); n != 1 {
		t.Fatalf("%d JWKS fetches after a flood within the interval, want 1", n)
	}
	for round := 2; round <= 4; round++ {
		clk.Add(auth.DefaultMinRefetchInterval)
		flood()
		flood()
		if n := iss.Hits(issuertest.HitJWKS); n != round {
			t.Fatalf("%d JWKS fetches after round %d, want %d", n, round, round)
		}
	}
	// Valid tokens were never held up.
	mustVerify(t, v, iss.Mint(iss.Claims("alice", audience)))
}

// The JWKS answer's max-age sets the keys' lifetime, within bounds.
func TestCacheControl(t *testing.T) {
	for _, c := range []struct {
		cc   string
		life time.Duration
	}{
		{"", auth.DefaultRefresh},
		{"public, max-age=3600", time.Hour},
		{"max-age=5", auth.MinRefresh},
		{"max-age=99999999", auth.MaxRefresh},
		{"no-store", auth.DefaultRefresh},
	} {
		t.Run(c.cc, func(t *testing.T) {
			iss, v, clk := setup(t, nil, auth.Options{TokenCacheSize: -1})
			iss.SetCacheControl(c.cc)
			claims := iss.Claims("alice", audience)
			claims["exp"] = clk.Now().Add(48 * time.Hour).Unix()
			tok := iss.Mint(claims)
			mustVerify(t, v, tok)
			clk.Add(c.life - time.Second)
			mustVerify(t, v, tok)
			if n := iss.Hits(issuertest.HitJWKS); n != 1 {
				t.Fatalf("%d fetches before the lifetime ended", n)
			}
			clk.Add(time.Second)
			mustVerify(t, v, tok)
			if n := iss.Hits(issuertest.HitJWKS); n != 2 {
				t.Fatalf("%d fetches after the lifetime ended, want 2", n)
			}
		})
	}
}

// Discovery: RFC 8414 first (path inserted), then the OpenID
// configuration; the metadata's issuer must be the configured one; an
// explicit JWKS URL skips discovery.
func TestDiscovery(t *testing.T) {
	cases := []struct {
		name                 string
		io                   issuertest.Options
		jwks                 bool
		oauth, oidc, jwkHits int
		want                 error
	}{
		{"RFC 8414", issuertest.Options{}, false, 1, 0, 1, nil},
		{"RFC 8414 with a path", issuertest.Options{Path: "/tenants/a"}, false, 1, 0, 1, nil},
		{"OpenID configuration", issuertest.Options{NoOAuthMetadata: true}, false, 1, 1, 1, nil},
		{"OpenID configuration with a path", issuertest.Options{Path: "/realms/x", NoOAuthMetadata: true}, false, 1, 1, 1, nil},
		{"issuer mismatch", issuertest.Options{MetadataIssuer: "https://evil.example"}, false, 1, 1, 0, auth.ErrKeysUnavailable},
		{"issuer mismatch with a path", issuertest.Options{Path: "/t", MetadataIssuer: "https://evil.example/t"}, false, 1, 2, 0, auth.ErrKeysUnavailable},
		{"no metadata", issuertest.Options{NoOAuthMetadata: true, NoOIDC: true}, false, 1, 1, 0, auth.ErrKeysUnavailable},
		{"JWKS URL given", issuertest.Options{NoOAuthMetadata: true, NoOIDC: true}, true, 0, 0, 1, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := newClock()
			c.io.Now = clk.Now
			iss := issuertest.New(t, &c.io)
			o := auth.Options{Issuer: iss.URL(), Audience: audience, Now: clk.Now, HTTPClient: iss.Client()}
			if c.jwks {
				o.JWKSURL = iss.JWKSURL()
			}
			v, err := auth.NewVerifier(o)
			if err != nil {
				t.Fatal(err)
			}
			_, err = v.Verify(context.Background(), iss.Mint(iss.Claims("alice", audience)))
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if st, hdr := auth.Challenge(err, mdURL); c.want != nil && (st != 503 || hdr != "") {
				t.Errorf("Challenge = %d %q", st, hdr)
			}
			if a, b, j := iss.Hits(issuertest.HitOAuth), iss.Hits(issuertest.HitOIDC), iss.Hits(issuertest.HitJWKS); a != c.oauth || b != c.oidc || j != c.jwkHits {
				t.Errorf("hits oauth %d oidc %d jwks %d, want %d %d %d", a, b, j, c.oauth, c.oidc, c.jwkHits)
			}
			if err := v.Prefetch(context.Background()); (err == nil) != (c.want == nil) {
				t.Errorf("Prefetch: %v", err)
			}
		})
	}
}

// jwksServer answers every request with body (and status), counting hits.
func jwksServer(t *testing.T, status int, ctype, body string) (*httptest.Server, *int) {
	var mu sync.Mutex
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		if status == http.StatusFound {
			http.Redirect(w, r, "/elsewhere", status)
			return
		}
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// Bad key sets are refused whole (too large, too many keys, not JSON, a
// redirect, a non-200) or key by key (symmetric, private, weak RSA, an
// encryption key); the errors say why.
func TestJWKSRefused(t *testing.T) {
	iss := issuertest.New(t, nil)
	good := func() string {
		resp, err := iss.Client().Get(iss.JWKSURL())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var set map[string]any
		if err := decodeJSON(resp, &set); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(set)
		return string(b)
	}()
	var goodKey map[string]any
	{
		var set struct{ Keys []map[string]any }
		_ = json.Unmarshal([]byte(good), &set)
		goodKey = set.Keys[0]
	}
	withKey := func(mod func(k map[string]any)) string {
		k := map[string]any{}
		for a, b := range goodKey {
			k[a] = b
		}
		mod(k)
		b, _ := json.Marshal(map[string]any{"keys": []any{k}})
		return string(b)
	}
	many := `{"keys":[` + strings.TrimSuffix(strings.Repeat(`{"kty":"oct","k":"AAAA"},`, auth.DefaultMaxKeys+1), ",") + `]}`
	cases := []struct {
		name, ctype, body string
		status            int
		want              string
	}{
		{"too large", "application/json", `{"keys":[],"pad":"` + strings.Repeat("x", auth.DefaultMaxJWKSBytes) + `"}`, 200, "larger than"},
		{"too many keys", "application/json", many, 200, "at most"},
		{"not JSON", "application/json", "<html>", 200, "JWKS"},
		{"HTML", "text/html", "<html>", 200, "not JSON"},
		{"redirect", "", "", http.StatusFound, "redirects are not followed"},
		{"500", "application/json", good, 500, "HTTP 500"},
		{"symmetric", "application/json", `{"keys":[{"kty":"oct","k":"AAAAAAAAAAAAAAAAAAAAAA","kid":"` + iss.KeyID() + `"}]}`, 200, "no usable"},
		{"encryption key", "application/json", withKey(func(k map[string]any) { k["use"] = "enc" }), 200, "no usable"},
		{"weak RSA", "application/json", withKey(func(k map[string]any) { k["n"] = k["n"].(string)[:171] }), 200, "no usable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, _ := jwksServer(t, c.status, c.ctype, c.body)
			v, err := auth.NewVerifier(auth.Options{Issuer: iss.URL(), Audience: audience, JWKSURL: srv.URL + "/jwks", HTTPClient: srv.Client()})
			if err != nil {
				t.Fatal(err)
			}
			_, err = v.Verify(context.Background(), iss.Mint(iss.Claims("alice", audience)))
			if !errors.Is(err, auth.ErrKeysUnavailable) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrKeysUnavailable naming %q", err, c.want)
			}
		})
	}
	// The good set verifies through the same path, whatever type the
	// issuer labels it with, as long as it is JSON.
	for _, ct := range []string{"application/json", "application/jwk-set+json", "text/plain", "application/octet-stream", ""} {
		srv, _ := jwksServer(t, 200, ct, good)
		v, _ := auth.NewVerifier(auth.Options{Issuer: iss.URL(), Audience: audience, JWKSURL: srv.URL, HTTPClient: srv.Client()})
		mustVerify(t, v, iss.Mint(iss.Claims("alice", audience)))
	}
}

// A failed refresh keeps the old keys; failures are rate limited too.
func TestFailedRefreshKeepsKeys(t *testing.T) {
	clk := newClock()
	iss := issuertest.New(t, &issuertest.Options{Now: clk.Now})
	var mu sync.Mutex
	fail, hits := false, 0
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		f := fail
		mu.Unlock()
		if f {
			http.Error(w, "down", 503)
			return
		}
		resp, err := iss.Client().Get(iss.JWKSURL())
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		var set any
		_ = decodeJSON(resp, &set)
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(proxy.Close)
	v, _ := auth.NewVerifier(auth.Options{Issuer: iss.URL(), Audience: audience, JWKSURL: proxy.URL, HTTPClient: proxy.Client(), Now: clk.Now})
	tok := iss.Mint(iss.Claims("alice", audience))
	mustVerify(t, v, tok)
	mu.Lock()
	fail = true
	mu.Unlock()
	clk.Add(auth.DefaultRefresh)
	for range 20 {
		mustVerify(t, v, tok)
	}
	mu.Lock()
	defer mu.Unlock()
	if hits != 2 {
		t.Fatalf("%d hits, want 2 (the first fetch and one failed refresh)", hits)
	}
}

// A verified token is remembered for TokenCacheTTL, never past its exp
// (plus leeway); a retired key's token stops verifying once the entry
// ends; a refused token is never remembered.
func TestTokenCache(t *testing.T) {
	iss, v, clk := setup(t, nil, auth.Options{})
	c := iss.Claims("alice", audience)
	c["exp"] = clk.Now().Add(10 * time.Minute).Unix()
	tok := iss.Mint(c)
	mustVerify(t, v, tok)
	old := iss.KeyID()
	iss.Rotate(jose.ES256)
	iss.Retire(old)
	clk.Add(59 * time.Second)
	mustVerify(t, v, tok) // from the cache
	clk.Add(2 * time.Second)
	mustVerify(t, v, tok) // verified again, with the keys not yet due for a refresh
	clk.Add(auth.DefaultRefresh)
	wantErr(t, v, tok, auth.ErrUnknownKey) // the refresh dropped the retired key
	if n := iss.Hits(issuertest.HitJWKS); n != 2 {
		t.Fatalf("%d JWKS fetches, want 2", n)
	}

	short := iss.Claims("bob", audience)
	short["exp"] = clk.Now().Add(10 * time.Second).Unix()
	stok := iss.Mint(short)
	mustVerify(t, v, stok)
	clk.Add(41 * time.Second) // past exp and the leeway, within the TTL
	wantErr(t, v, stok, auth.ErrExpired)

	bad := iss.Claims("carol", "http://elsewhere/mcp")
	btok := iss.Mint(bad)
	wantErr(t, v, btok, auth.ErrWrongAudience)
	wantErr(t, v, btok, auth.ErrWrongAudience)
}
