// Package issuertest is an OAuth 2.1 authorization server for tests: an
// HTTP server on 127.0.0.1 that serves RFC 8414 metadata, OpenID
// configuration and a JWKS, rotates its keys, counts its hits, and mints
// JWT access tokens (RS256, ES256 and the other asymmetric algorithms)
// with any claims.
//
//	iss := issuertest.New(t, nil)
//	tok := iss.Mint(iss.Claims("alice", "http://127.0.0.1:8080/mcp", "tools"))
package issuertest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Options configure New; nil means the defaults.
type Options struct {
	// Path of the issuer URL after the host, e.g. "/tenants/a"; default none.
	Path string
	// NoOAuthMetadata and NoOIDC leave out the RFC 8414 document and the
	// OpenID configuration (answered with 404).
	NoOAuthMetadata, NoOIDC bool
	// MetadataIssuer is the issuer the metadata documents claim; default
	// the real one (set it to test the mismatch refusal).
	MetadataIssuer string
	// Algorithm of the first key; default RS256.
	Algorithm jose.SignatureAlgorithm
	// Now is the clock of Claims; default time.Now.
	Now func() time.Time
}

// Kinds of hit counted by Hits.
const (
	HitJWKS  = "jwks"
	HitOAuth = "oauth-authorization-server"
	HitOIDC  = "openid-configuration"
)

// TB is what New needs of a test: a *testing.T, *testing.B or
// *testing.F, or a stand-in in an example.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

type key struct {
	kid       string
	alg       jose.SignatureAlgorithm
	priv      crypto.Signer
	published bool
}

// Issuer is a running test authorization server.
type Issuer struct {
	tb  TB
	srv *httptest.Server
	o   Options

	mu           sync.Mutex
	keys         []*key
	current      *key
	hits         map[string]int
	cacheControl string
	seq          int
	sts          tokenEndpoint // token.go
	codes        codeFlow      // authcode.go
}

// New starts an issuer; it stops when the test ends.
func New(tb TB, o *Options) *Issuer {
	tb.Helper()
	i := &Issuer{tb: tb, hits: map[string]int{}}
	if o != nil {
		i.o = *o
	}
	i.o.Path = strings.TrimSuffix(i.o.Path, "/")
	if i.o.Algorithm == "" {
		i.o.Algorithm = jose.RS256
	}
	if i.o.Now == nil {
		i.o.Now = time.Now
	}
	i.srv = httptest.NewServer(http.HandlerFunc(i.serve))
	tb.Cleanup(i.srv.Close)
	i.Rotate(i.o.Algorithm)
	return i
}

// URL is the issuer identifier (the iss of its tokens).
func (i *Issuer) URL() string { return i.srv.URL + i.o.Path }

// JWKSURL is the key set's URL.
func (i *Issuer) JWKSURL() string { return i.srv.URL + "/jwks" + i.o.Path }

// Client is an HTTP client for the issuer's server.
func (i *Issuer) Client() *http.Client { return i.srv.Client() }

// Hits counts the requests served of a kind (HitJWKS, HitOAuth, HitOIDC).
func (i *Issuer) Hits(kind string) int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.hits[kind]
}

// SetCacheControl sets the Cache-Control header of the JWKS answers.
func (i *Issuer) SetCacheControl(v string) {
	i.mu.Lock()
	i.cacheControl = v
	i.mu.Unlock()
}

func (i *Issuer) serve(w http.ResponseWriter, r *http.Request) {
	md := map[string]any{"issuer": i.URL(), "jwks_uri": i.JWKSURL(), "response_types_supported": []string{"code"},
		"token_endpoint": i.TokenURL(), "authorization_endpoint": i.AuthorizeURL(), "registration_endpoint": i.RegisterURL(),
		"code_challenge_methods_supported": []string{"S256"}, "grant_types_supported": []string{"authorization_code", "refresh_token",
			"client_credentials", "urn:ietf:params:oauth:grant-type:token-exchange"}}
	if i.o.MetadataIssuer != "" {
		md["issuer"] = i.o.MetadataIssuer
	}
	var kind string
	var body any
	switch r.URL.Path {
	case "/jwks" + i.o.Path:
		kind, body = HitJWKS, i.jwks()
	case "/.well-known/oauth-authorization-server" + i.o.Path:
		if i.o.NoOAuthMetadata {
			kind = HitOAuth
		} else {
			kind, body = HitOAuth, md
		}
	case "/token" + i.o.Path:
		i.serveToken(w, r) // token.go
		return
	case "/authorize" + i.o.Path:
		i.serveAuthorize(w, r) // authcode.go
		return
	case "/register" + i.o.Path:
		i.serveRegister(w, r) // authcode.go
		return
	case i.o.Path + "/.well-known/openid-configuration", "/.well-known/openid-configuration" + i.o.Path:
		if !i.o.NoOIDC {
			kind, body = HitOIDC, md
		} else {
			kind = HitOIDC
		}
	}
	i.mu.Lock()
	if kind != "" {
		i.hits[kind]++
	}
	cc := i.cacheControl
	i.mu.Unlock()
	if body == nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if kind == HitJWKS && cc != "" {
		w.Header().Set("Cache-Control", cc)
	}
	_ = json.NewEncoder(w).Encode(body)
}

func (i *Issuer) jwks() jose.JSONWebKeySet {
	i.mu.Lock()
	defer i.mu.Unlock()
	var set jose.JSONWebKeySet
	for _, k := range i.keys {
		if k.published {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.priv.Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"})
		}
	}
	return set
}

func newSigner(tb TB, alg jose.SignatureAlgorithm) crypto.Signer {
	tb.Helper()
	var (
		k   crypto.Signer
		err error
	)
	switch alg {
	case jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512:
		k, err = rsa.GenerateKey(rand.Reader, 2048)
	case jose.ES256:
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.ES384:
		k, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case jose.ES512:
		k, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case jose.EdDSA:
		_, k, err = ed25519.GenerateKey(rand.Reader)
	default:
		tb.Fatalf("issuertest: no key type for algorithm %q", alg)
	}
	if err != nil {
		tb.Fatalf("issuertest: generate %s key: %v", alg, err)
	}
	return k
}

// Rotate adds a published key of alg and makes it the one Mint signs
// with; the older keys stay published until Retire. It returns the kid.
func (i *Issuer) Rotate(alg jose.SignatureAlgorithm) string {
	k := &key{alg: alg, priv: newSigner(i.tb, alg), published: true}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.seq++
	k.kid = fmt.Sprintf("key-%d-%s", i.seq, strings.ToLower(string(alg)))
	i.keys = append(i.keys, k)
	i.current = k
	return k.kid
}

// Retire stops publishing a key (tokens it signed no longer verify once
// a verifier refetches).
func (i *Issuer) Retire(kid string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	for _, k := range i.keys {
		if k.kid == kid {
			k.published = false
		}
	}
}

// KeyID is the kid Mint signs with now.
func (i *Issuer) KeyID() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.current.kid
}

// Claims are the claims of a valid token: iss, sub, aud, iat, nbf, exp
// (an hour from now) and scope (when scopes are given).
func (i *Issuer) Claims(sub, aud string, scopes ...string) map[string]any {
	now := i.o.Now()
	c := map[string]any{"iss": i.URL(), "sub": sub, "aud": aud, "iat": now.Unix(), "nbf": now.Unix(),
		"exp": now.Add(time.Hour).Unix(), "jti": fmt.Sprintf("jti-%d", now.UnixNano())}
	if len(scopes) > 0 {
		c["scope"] = strings.Join(scopes, " ")
	}
	return c
}

// Mint signs claims with the current key.
func (i *Issuer) Mint(claims map[string]any) string {
	i.mu.Lock()
	k := i.current
	i.mu.Unlock()
	return i.sign(k.priv, k.alg, k.kid, claims)
}

// MintWith signs claims with the key kid (published or retired).
func (i *Issuer) MintWith(kid string, claims map[string]any) string {
	i.mu.Lock()
	var k *key
	for _, c := range i.keys {
		if c.kid == kid {
			k = c
		}
	}
	i.mu.Unlock()
	if k == nil {
		i.tb.Fatalf("issuertest: no key %q", kid)
	}
	return i.sign(k.priv, k.alg, k.kid, claims)
}

// MintForged signs claims with a fresh key of alg that was never
// published, under the header kid (a published kid gives a bad signature,
// another an unknown key; "" sends no kid).
func (i *Issuer) MintForged(alg jose.SignatureAlgorithm, kid string, claims map[string]any) string {
	return i.sign(newSigner(i.tb, alg), alg, kid, claims)
}

func (i *Issuer) sign(priv crypto.Signer, alg jose.SignatureAlgorithm, kid string, claims map[string]any) string {
	i.tb.Helper()
	opts := (&jose.SignerOptions{}).WithType("at+jwt")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: priv}, opts)
	if err != nil {
		i.tb.Fatalf("issuertest: signer: %v", err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		i.tb.Fatalf("issuertest: sign: %v", err)
	}
	return tok
}
