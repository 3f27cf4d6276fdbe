package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Bounds of what the issuer's metadata and JWKS may be.
const (
	maxMetadataBytes = 256 << 10
	minRSABits       = 2048
	maxRSABits       = 8192
)

// errRedirect refuses every redirect of the issuer's endpoints.
var errRedirect = errors.New("redirects are not followed")

// fetcher reads the issuer's metadata and JWKS with bounds on size, count
// and time, following no redirect.
type fetcher struct {
	client   *http.Client
	timeout  time.Duration
	maxBody  int64
	maxKeys  int
	issuer   string
	jwksFlag string // --auth-jwks-url; empty: discover
}

func newHTTPClient(c *http.Client) *http.Client {
	var out http.Client
	if c != nil {
		out = *c
	}
	out.CheckRedirect = func(*http.Request, []*http.Request) error { return errRedirect }
	return &out
}

// get GETs u and returns at most limit bytes of a 200 answer's body and
// its Cache-Control max-age (0 when absent).
func (f *fetcher) get(ctx context.Context, u string, limit int64) ([]byte, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("GET %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, &statusError{url: u, code: resp.StatusCode}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, 0, fmt.Errorf("GET %s: %w: %w", u, errCutShort, err)
	}
	if int64(len(body)) > limit {
		return nil, 0, undecodable(fmt.Errorf("GET %s: body larger than %d bytes", u, limit))
	}
	// Accepted: any Content-Type whose body is JSON. Issuers mostly send
	// application/json (or a +json type); some serve their JWKS as
	// text/plain or application/octet-stream, which is fine when it
	// parses. A body that is not JSON is refused naming its type.
	if ct := resp.Header.Get("Content-Type"); !jsonMediaType(ct) && !json.Valid(body) {
		return nil, 0, undecodable(fmt.Errorf("GET %s: content type %.64q and the body is not JSON", u, ct))
	}
	return body, maxAge(resp.Header.Get("Cache-Control")), nil
}

// jsonMediaType reports whether ct names JSON (application/json or a
// +json type).
func jsonMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// maxAge reads max-age from a Cache-Control value; 0 when absent or
// when no-store/no-cache say not to keep it.
func maxAge(cc string) time.Duration {
	for _, d := range strings.Split(cc, ",") {
		d = strings.ToLower(strings.TrimSpace(d))
		if d == "no-store" || d == "no-cache" {
			return 0
		}
		if v, ok := strings.CutPrefix(d, "max-age="); ok {
			n, err := strconv.ParseInt(strings.Trim(v, `"`), 10, 64)
			if err == nil && n > 0 && n < 1<<31 {
				return time.Duration(n) * time.Second
			}
		}
	}
	return 0
}

// discoveryURLs are the metadata documents of an issuer, in the order
// tried: RFC 8414 (with the path inserted after the well-known prefix),
// then OpenID Connect Discovery (path inserted, then appended: the form
// the OpenID spec gives).
func discoveryURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	origin := u.Scheme + "://" + u.Host
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	if path == "" {
		return []string{origin + "/.well-known/oauth-authorization-server", origin + "/.well-known/openid-configuration"}
	}
	return []string{origin + "/.well-known/oauth-authorization-server" + path,
		origin + "/.well-known/openid-configuration" + path,
		origin + path + "/.well-known/openid-configuration"}
}

// discover finds the issuer's jwks_uri from its metadata; the metadata's
// issuer must be the configured one exactly.
func (f *fetcher) discover(ctx context.Context) (string, error) {
	var errs []error
	for _, u := range discoveryURLs(f.issuer) {
		body, _, err := f.get(ctx, u, maxMetadataBytes)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var md struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := json.Unmarshal(body, &md); err != nil {
			errs = append(errs, undecodable(fmt.Errorf("metadata %s: %w", u, err)))
			continue
		}
		if md.Issuer != f.issuer {
			errs = append(errs, undecodable(fmt.Errorf("metadata %s: issuer %.200q is not %q", u, md.Issuer, f.issuer)))
			continue
		}
		if err := checkHTTPURL(md.JWKSURI); err != nil {
			errs = append(errs, undecodable(fmt.Errorf("metadata %s: jwks_uri: %w", u, err)))
			continue
		}
		return md.JWKSURI, nil
	}
	return "", fmt.Errorf("discover the JWKS of issuer %s: %w", f.issuer, errors.Join(errs...))
}

// checkHTTPURL accepts an absolute http(s) URL with a host, no user info
// and no fragment.
func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return err
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("%.200q: want an http or https URL", s)
	case u.Host == "":
		return fmt.Errorf("%.200q: no host", s)
	case u.User != nil:
		return fmt.Errorf("%.200q: user info is not allowed", u.Redacted())
	case u.Fragment != "" || strings.Contains(s, "#"):
		return fmt.Errorf("%.200q: a fragment is not allowed", s)
	}
	return nil
}

// parseJWKS reads a key set: at most maxKeys entries; entries that are not
// public signature keys of a supported type are skipped (symmetric and
// private keys, weak RSA, use other than sig); none left is an error.
func parseJWKS(body []byte, maxKeys int) ([]jose.JSONWebKey, error) {
	var raw struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, undecodable(fmt.Errorf("JWKS: %w", err))
	}
	if len(raw.Keys) > maxKeys {
		return nil, undecodable(fmt.Errorf("JWKS: %d keys, at most %d", len(raw.Keys), maxKeys))
	}
	keys := make([]jose.JSONWebKey, 0, len(raw.Keys))
	for _, b := range raw.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(b); err != nil || !k.Valid() || !k.IsPublic() || (k.Use != "" && k.Use != "sig") {
			continue
		}
		if family(k.Key) == "" {
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, undecodable(fmt.Errorf("JWKS: no usable public signing key among %d", len(raw.Keys)))
	}
	return keys, nil
}

// family is the algorithm family a public key can verify: "RSA", "P-256",
// "P-384", "P-521", "Ed25519", or "" for keys this package refuses.
func family(key any) string {
	switch k := key.(type) {
	case *rsa.PublicKey:
		if n := k.N.BitLen(); n >= minRSABits && n <= maxRSABits {
			return "RSA"
		}
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256(), elliptic.P384(), elliptic.P521():
			return k.Curve.Params().Name
		}
	case ed25519.PublicKey:
		return "Ed25519"
	}
	return ""
}

// algFamily is the key family an algorithm needs.
func algFamily(alg string) string {
	switch jose.SignatureAlgorithm(alg) {
	case jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512:
		return "RSA"
	case jose.ES256:
		return "P-256"
	case jose.ES384:
		return "P-384"
	case jose.ES512:
		return "P-521"
	case jose.EdDSA:
		return "Ed25519"
	}
	return ""
}
