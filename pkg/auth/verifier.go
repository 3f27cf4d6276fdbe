package auth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Defaults of Options.
const (
	DefaultLeeway             = 30 * time.Second
	DefaultMaxTokenBytes      = 16 << 10
	DefaultMaxClaimDepth      = 16
	DefaultMinRefetchInterval = 10 * time.Second
	DefaultRefresh            = 5 * time.Minute
	DefaultMaxJWKSBytes       = 1 << 20
	DefaultMaxKeys            = 64
	DefaultFetchTimeout       = 10 * time.Second
	DefaultTokenCacheSize     = 4096
	DefaultTokenCacheTTL      = time.Minute
	// The bounds a JWKS answer's Cache-Control max-age is clamped to.
	MinRefresh = time.Minute
	MaxRefresh = 24 * time.Hour
	// maxScopes bounds the scopes read from one token.
	maxScopes = 256
)

// DefaultAlgorithms are the signature algorithms accepted when
// Options.Algorithms is empty: RSA (PKCS#1 v1.5 and PSS), ECDSA and EdDSA.
var DefaultAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// ErrOptions is wrapped by the errors of NewVerifier.
var ErrOptions = errors.New("invalid auth options")

// Options configure a Verifier. Issuer and Audience are required; zero
// values of the others mean the defaults.
type Options struct {
	// Issuer is the authorization server (--auth-issuer); a token's iss
	// must equal it exactly, as must the issuer of its metadata.
	Issuer string
	// Audience must be among a token's aud (--auth-audience, by default
	// the resource URL).
	Audience string
	// Scopes must all be in a token's scope (or scp) claim.
	Scopes []string
	// JWKSURL is the key set (--auth-jwks-url); empty: discovered from
	// the issuer's metadata (RFC 8414, then OpenID configuration).
	JWKSURL string
	// Algorithms allowed in a token's alg; default DefaultAlgorithms.
	// none and HS* are refused here.
	Algorithms []jose.SignatureAlgorithm
	// Leeway for exp, nbf and iat; 0 means DefaultLeeway, negative none.
	Leeway time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// HTTPClient fetches metadata and keys; default a plain client.
	// Redirects are never followed, whatever the client says.
	HTTPClient *http.Client
	// FetchTimeout bounds one metadata or JWKS request.
	FetchTimeout time.Duration
	// MinRefetchInterval is the least time between two JWKS fetches.
	MinRefetchInterval time.Duration
	// Refresh is the keys' lifetime when the JWKS answer has no max-age.
	Refresh time.Duration
	// MaxTokenBytes, MaxClaimDepth, MaxJWKSBytes and MaxKeys bound the
	// inputs.
	MaxTokenBytes, MaxClaimDepth int
	MaxJWKSBytes                 int64
	MaxKeys                      int
	// TokenCacheSize bounds the verified tokens remembered (by SHA-256)
	// so that a token sent on every request is checked in full once per
	// TokenCacheTTL (and never past its exp); 0 means
	// DefaultTokenCacheSize, negative disables the cache.
	TokenCacheSize int
	TokenCacheTTL  time.Duration
}

// Identity is who a verified token says the caller is. Identities of a
// token seen again come from the token cache and are shared: read only.
type Identity struct {
	// Issuer and Subject (iss and sub) together are the caller's identity.
	Issuer, Subject string
	// Scopes are the token's scopes (scope and scp), deduplicated.
	Scopes []string
	// Claims are all of the token's claims as decoded JSON (nesting
	// bounded by MaxClaimDepth, size by MaxTokenBytes).
	Claims map[string]any
	// Expiry is the token's exp.
	Expiry time.Time

	memo atomic.Pointer[any] // Memo's value
	// token is the access token verified (behind a pointer: an Identity
	// printed with %+v shows an address, not the token); AccessToken.
	token *string
}

// AccessToken is the verified access token itself: for the one place
// that sends it on, as the subject_token of a token exchange (RFC 8693),
// never to a backend. "" for an Identity not made by a Verifier.
func (id *Identity) AccessToken() string {
	if id == nil || id.token == nil {
		return ""
	}
	return *id.token
}

// Memo returns the value a caller derived from id (made by mk on first
// use, once kept for good): what a server builds once per verified token
// lives exactly as long as the verifier keeps the identity in its token
// cache, and goes with it.
func (id *Identity) Memo(mk func(*Identity) any) any {
	if p := id.memo.Load(); p != nil {
		return *p
	}
	v := mk(id)
	id.memo.CompareAndSwap(nil, &v)
	return *id.memo.Load()
}

// Verifier verifies JWT access tokens. It is safe for concurrent use.
type Verifier struct {
	o     Options
	algs  []jose.SignatureAlgorithm
	keys  *keyCache
	cache *tokenCache
}

// NewVerifier checks the options and returns a Verifier. It fetches
// nothing; the first token (or Prefetch) fetches the keys.
func NewVerifier(o Options) (*Verifier, error) {
	if err := checkHTTPURL(o.Issuer); err != nil {
		return nil, fmt.Errorf("%w: issuer: %w", ErrOptions, err)
	}
	if u, _ := url.Parse(o.Issuer); u.RawQuery != "" || u.ForceQuery {
		return nil, fmt.Errorf("%w: issuer %q: a query is not allowed", ErrOptions, o.Issuer)
	}
	if o.Audience == "" {
		return nil, fmt.Errorf("%w: audience is required", ErrOptions)
	}
	if o.JWKSURL != "" {
		if err := checkHTTPURL(o.JWKSURL); err != nil {
			return nil, fmt.Errorf("%w: JWKS URL: %w", ErrOptions, err)
		}
	}
	for _, s := range o.Scopes {
		if s == "" || strings.ContainsAny(s, " \"\\") || !isVisibleASCII(s) {
			return nil, fmt.Errorf("%w: scope %q: want visible ASCII without spaces, quotes or backslashes", ErrOptions, s)
		}
	}
	algs := o.Algorithms
	if len(algs) == 0 {
		algs = DefaultAlgorithms
	}
	for _, a := range algs {
		if algFamily(string(a)) == "" {
			return nil, fmt.Errorf("%w: algorithm %q is not allowed (asymmetric signatures only)", ErrOptions, a)
		}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	switch {
	case o.Leeway == 0:
		o.Leeway = DefaultLeeway
	case o.Leeway < 0:
		o.Leeway = 0
	}
	def(&o.FetchTimeout, DefaultFetchTimeout)
	def(&o.MinRefetchInterval, DefaultMinRefetchInterval)
	def(&o.Refresh, DefaultRefresh)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxTokenBytes <= 0 {
		o.MaxTokenBytes = DefaultMaxTokenBytes
	}
	if o.MaxClaimDepth <= 0 {
		o.MaxClaimDepth = DefaultMaxClaimDepth
	}
	if o.MaxJWKSBytes <= 0 {
		o.MaxJWKSBytes = DefaultMaxJWKSBytes
	}
	if o.MaxKeys <= 0 {
		o.MaxKeys = DefaultMaxKeys
	}
	if o.TokenCacheSize == 0 {
		o.TokenCacheSize = DefaultTokenCacheSize
	}
	def(&o.TokenCacheTTL, DefaultTokenCacheTTL)
	f := &fetcher{client: newHTTPClient(o.HTTPClient), timeout: o.FetchTimeout, maxBody: o.MaxJWKSBytes,
		maxKeys: o.MaxKeys, issuer: o.Issuer, jwksFlag: o.JWKSURL}
	kc := &keyCache{f: f, now: o.Now, minInterval: o.MinRefetchInterval, refresh: o.Refresh,
		minRefresh: min(MinRefresh, o.Refresh), maxRefresh: max(MaxRefresh, o.Refresh), jwksURL: o.JWKSURL}
	return &Verifier{o: o, algs: slices.Clone(algs), keys: kc, cache: newTokenCache(o.TokenCacheSize, o.TokenCacheTTL)}, nil
}

// Prefetch fetches the issuer's keys unless fresh ones are cached (an
// edge calls it at start to report a wrong issuer early); the error is
// that of the last fetch.
func (v *Verifier) Prefetch(ctx context.Context) error { return v.keys.prefetch(ctx) }

// Issuer is the configured issuer.
func (v *Verifier) Issuer() string { return v.o.Issuer }

// Scopes are the configured required scopes.
func (v *Verifier) Scopes() []string { return slices.Clone(v.o.Scopes) }

// VerifyRequest verifies the bearer token of r's Authorization header.
func (v *Verifier) VerifyRequest(r *http.Request) (*Identity, error) {
	if vals := r.Header.Values("Authorization"); len(vals) == 1 && v.cache != nil {
		// A token verified lately is known by its exact value, which was
		// a whole b64token then: its bytes need no second look.
		if tok, err := splitBearer(vals[0]); err == nil && len(tok) <= v.o.MaxTokenBytes {
			if id := v.cache.get(tokenKey(tok), v.o.Now()); id != nil {
				return id, nil
			}
		}
	}
	tok, err := BearerToken(r.Header)
	if err != nil {
		return nil, err
	}
	return v.Verify(r.Context(), tok)
}

// tokenKey is the cache key of a token: its SHA-256. A token of up to
// 2 KiB (an access token's usual size) is hashed from a copy on the
// stack: its []byte would be allocated on every request.
func tokenKey(token string) [sha256.Size]byte {
	var buf [2 << 10]byte
	if len(token) <= len(buf) {
		return sha256.Sum256(append(buf[:0], token...))
	}
	return sha256.Sum256([]byte(token))
}

// tokenClaims are the registered claims Verify reads.
type tokenClaims struct {
	jwt.Claims
	Scope json.RawMessage `json:"scope"`
	Scp   json.RawMessage `json:"scp"`
}

// Verify verifies a compact JWS access token: size, algorithm, signature
// (keys from the issuer's JWKS, by kid), then iss, aud, nbf, exp, iat and
// the required scopes. Every error wraps one of the Err* reasons.
func (v *Verifier) Verify(ctx context.Context, token string) (*Identity, error) {
	if token == "" {
		return nil, ErrNoToken
	}
	if len(token) > v.o.MaxTokenBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrMalformed, len(token), v.o.MaxTokenBytes)
	}
	now := v.o.Now()
	var h [sha256.Size]byte
	if v.cache != nil {
		h = tokenKey(token)
		if id := v.cache.get(h, now); id != nil {
			return id, nil
		}
	}
	id, err := v.verify(ctx, token, now)
	if err == nil {
		id.token = &token
		v.cache.put(h, id, now, id.Expiry.Add(v.o.Leeway))
	}
	return id, err
}

func (v *Verifier) verify(ctx context.Context, token string, now time.Time) (*Identity, error) {
	tok, err := jwt.ParseSigned(token, v.algs)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if len(tok.Headers) != 1 {
		return nil, fmt.Errorf("%w: %d signatures, want 1", ErrMalformed, len(tok.Headers))
	}
	h := tok.Headers[0]
	keys, err := v.keys.lookup(ctx, h.KeyID, h.Algorithm)
	if err != nil {
		return nil, err
	}
	var payload json.RawMessage
	for _, k := range keys {
		if err = tok.Claims(k.Key, &payload); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: kid %.64q", ErrBadSignature, h.KeyID)
	}
	if err := checkDepth(payload, v.o.MaxClaimDepth); err != nil {
		return nil, fmt.Errorf("%w: claims: %w", ErrMalformed, err)
	}
	var c tokenClaims
	var all map[string]any
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, fmt.Errorf("%w: claims: %v", ErrMalformed, err)
	}
	if err := json.Unmarshal(payload, &all); err != nil || all == nil {
		return nil, fmt.Errorf("%w: claims are not a JSON object", ErrMalformed)
	}
	if err := v.validate(&c, now); err != nil {
		return nil, err
	}
	scopes, err := readScopes(c.Scope, c.Scp)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if missing := missingScopes(v.o.Scopes, scopes); len(missing) > 0 {
		return nil, &ScopeError{Required: slices.Clone(v.o.Scopes), Missing: missing}
	}
	return &Identity{Issuer: c.Issuer, Subject: c.Subject, Scopes: scopes, Claims: all, Expiry: c.Expiry.Time()}, nil
}

func (v *Verifier) validate(c *tokenClaims, now time.Time) error {
	err := c.ValidateWithLeeway(jwt.Expected{Issuer: v.o.Issuer, AnyAudience: jwt.Audience{v.o.Audience}, Time: now}, v.o.Leeway)
	switch {
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return fmt.Errorf("%w: iss %.200q, want %q", ErrWrongIssuer, c.Issuer, v.o.Issuer)
	case errors.Is(err, jwt.ErrInvalidAudience):
		return fmt.Errorf("%w: aud does not contain %q", ErrWrongAudience, v.o.Audience)
	case errors.Is(err, jwt.ErrNotValidYet):
		return fmt.Errorf("%w: nbf %s", ErrNotYetValid, c.NotBefore.Time().UTC().Format(time.RFC3339))
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return fmt.Errorf("%w: iat %s", ErrNotYetValid, c.IssuedAt.Time().UTC().Format(time.RFC3339))
	case errors.Is(err, jwt.ErrExpired):
		return fmt.Errorf("%w: exp %s", ErrExpired, c.Expiry.Time().UTC().Format(time.RFC3339))
	case err != nil:
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	case c.Subject == "":
		return fmt.Errorf("%w: no sub claim", ErrMalformed)
	case c.Expiry == nil:
		return fmt.Errorf("%w: no exp claim", ErrMalformed)
	}
	return nil
}
