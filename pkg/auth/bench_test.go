package auth_test

import (
	"context"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/fleetgate/fleetgate/pkg/auth"
	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
)

// BenchmarkVerify is the verification of one request's token with a warm
// key cache: RS256 and ES256 in full (the token cache off: a new token on
// every request), and /cached the same token again (what a client that
// reuses its token costs).
func BenchmarkVerify(b *testing.B) {
	for _, name := range []string{"RS256", "ES256", "RS256/cached", "ES256/cached"} {
		alg, cached, _ := strings.Cut(name, "/")
		size := -1
		if cached != "" {
			size = 0
		}
		b.Run(name, func(b *testing.B) {
			iss := issuertest.New(b, &issuertest.Options{Algorithm: jose.SignatureAlgorithm(alg)})
			v, err := auth.NewVerifier(auth.Options{Issuer: iss.URL(), Audience: audience, HTTPClient: iss.Client(),
				Scopes: []string{"tools"}, TokenCacheSize: size})
			if err != nil {
				b.Fatal(err)
			}
			c := iss.Claims("alice", audience, "tools", "read")
			c["roles"] = []string{"ops", "dev"}
			tok := iss.Mint(c)
			ctx := context.Background()
			if _, err := v.Verify(ctx, tok); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(ctx, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
