package issuertest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/fleetgate/fleetgate/pkg/auth/issuertest"
)

func getJSON(t *testing.T, iss *issuertest.Issuer, u string, v any) int {
	t.Helper()
	resp, err := iss.Client().Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

// The issuer serves its metadata where RFC 8414 and OpenID Discovery put
// it for an issuer with a path, publishes its keys, and signs tokens that
// verify with them.
func TestIssuer(t *testing.T) {
	iss := issuertest.New(t, &issuertest.Options{Path: "/tenants/a", Algorithm: jose.ES256})
	host := strings.TrimSuffix(iss.URL(), "/tenants/a")
	for _, u := range []string{host + "/.well-known/oauth-authorization-server/tenants/a",
		host + "/.well-known/openid-configuration/tenants/a", iss.URL() + "/.well-known/openid-configuration"} {
		var m map[string]any
		if getJSON(t, iss, u, &m) != 200 || m["issuer"] != iss.URL() || m["jwks_uri"] != iss.JWKSURL() {
			t.Errorf("%s: %v", u, m)
		}
	}
	old := iss.KeyID()
	kid := iss.Rotate(jose.RS256)
	iss.Retire(old)
	var set jose.JSONWebKeySet
	if getJSON(t, iss, iss.JWKSURL(), &set) != 200 || len(set.Keys) != 1 || set.Keys[0].KeyID != kid || !set.Keys[0].IsPublic() {
		t.Fatalf("JWKS %+v", set)
	}
	tok, err := jwt.ParseSigned(iss.Mint(iss.Claims("alice", "aud", "s1", "s2")), []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := tok.Claims(set.Keys[0].Key, &c); err != nil || c["sub"] != "alice" || c["scope"] != "s1 s2" || c["iss"] != iss.URL() {
		t.Fatalf("claims %v %v", c, err)
	}
	if iss.Hits(issuertest.HitJWKS) != 1 || iss.Hits(issuertest.HitOAuth) != 1 || iss.Hits(issuertest.HitOIDC) != 2 {
		t.Errorf("hits %d %d %d", iss.Hits(issuertest.HitJWKS), iss.Hits(issuertest.HitOAuth), iss.Hits(issuertest.HitOIDC))
	}
}
