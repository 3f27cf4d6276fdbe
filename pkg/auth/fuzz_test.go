package auth_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/fleetgate/fleetgate/pkg/auth"
	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
)

func FuzzParseAuthorization(f *testing.F) {
	for _, s := range []string{"", "Bearer abc", "bearer  a.b.c", "Basic x", "Bearer a b", "Bearer ==", "Bearer a=", "Bearer a=b", "BEARER\tx"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := auth.ParseAuthorization(s)
		if err == nil {
			if tok == "" || len(tok) > len(s) {
				t.Fatalf("%q -> %q", s, tok)
			}
			if again, err := auth.ParseAuthorization("Bearer " + tok); err != nil || again != tok {
				t.Fatalf("%q does not round-trip: %q %v", tok, again, err)
			}
		} else if r := auth.Reason(err); r != "no_token" && r != "malformed" {
			t.Fatalf("%q: reason %s", s, r)
		}
	})
}

// Verify of any bytes never panics, ends quickly, and refuses with one of
// the reasons; nothing but a token the issuer signed verifies.
func FuzzVerify(f *testing.F) {
	clk := newClock()
	iss := issuertest.New(f, &issuertest.Options{Now: clk.Now})
	es := iss.Rotate(jose.ES256)
	v, err := auth.NewVerifier(auth.Options{Issuer: iss.URL(), Audience: audience, Now: clk.Now, HTTPClient: iss.Client(), Scopes: []string{"tools"}})
	if err != nil {
		f.Fatal(err)
	}
	if err := v.Prefetch(context.Background()); err != nil {
		f.Fatal(err)
	}
	c := iss.Claims("alice", audience, "tools")
	f.Add(iss.Mint(c))
	f.Add(iss.MintWith(es, c))
	f.Add(iss.MintWith(es, map[string]any{"iss": iss.URL(), "sub": "a", "aud": []any{audience, 1}, "exp": 1e300, "scp": []any{"tools", nil}}))
	f.Add(iss.MintForged(jose.RS256, "nope", c))
	f.Add(unsigned(`{"sub":"a"}`))
	f.Add("a.b.c")
	f.Add("e30.e30.e30")
	f.Add("....")
	f.Fuzz(func(t *testing.T, tok string) {
		start := time.Now()
		id, err := v.Verify(context.Background(), tok)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("Verify took %v", d)
		}
		if err == nil {
			if id == nil || id.Issuer != iss.URL() || id.Subject == "" {
				t.Fatalf("accepted %+v", id)
			}
			return
		}
		if r := auth.Reason(err); r == "other" || r == "ok" {
			t.Fatalf("error without a reason: %v", err)
		}
	})
}
