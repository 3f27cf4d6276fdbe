package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// WellKnownPath is the RFC 9728 well-known prefix of protected resource
// metadata.
const WellKnownPath = "/.well-known/oauth-protected-resource"

// maxAuthorizationBytes bounds an Authorization value ParseAuthorization
// reads (the verifier has its own, smaller bound on the token).
const maxAuthorizationBytes = 64 << 10

// BearerToken returns the token of h's Authorization header: ErrNoToken
// without one (or with a scheme other than Bearer), ErrMalformed for
// more than one Authorization header or a malformed value.
func BearerToken(h http.Header) (string, error) {
	vals := h.Values("Authorization")
	switch len(vals) {
	case 0:
		return "", ErrNoToken
	case 1:
		return ParseAuthorization(vals[0])
	}
	return "", fmt.Errorf("%w: %d Authorization headers", ErrMalformed, len(vals))
}

// ParseAuthorization reads an Authorization header value of the form
// "Bearer <token>" (RFC 6750: the scheme in any case, then spaces, then
// exactly one token of b64token characters).
func ParseAuthorization(v string) (string, error) {
	tok, err := splitBearer(v)
	if err != nil {
		return "", err
	}
	for i := range len(tok) {
		if !b64tokenChar[tok[i]] {
			return "", fmt.Errorf("%w: Bearer token with a byte 0x%02x at %d (exactly one b64token expected)", ErrMalformed, tok[i], i)
		}
	}
	if i := strings.IndexByte(tok, '='); i >= 0 && strings.Trim(tok[i:], "=") != "" {
		return "", fmt.Errorf("%w: Bearer token with '=' inside", ErrMalformed)
	}
	return tok, nil
}

// splitBearer is the token of an Authorization value "Bearer <token>",
// its bytes not yet checked.
func splitBearer(v string) (string, error) {
	v = strings.Trim(v, " \t")
	if v == "" {
		return "", ErrNoToken
	}
	if len(v) > maxAuthorizationBytes {
		return "", fmt.Errorf("%w: Authorization of %d bytes", ErrMalformed, len(v))
	}
	scheme, rest, _ := strings.Cut(v, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", fmt.Errorf("%w: Authorization scheme is not Bearer", ErrNoToken)
	}
	tok := strings.TrimLeft(rest, " ")
	if tok == "" {
		return "", fmt.Errorf("%w: Bearer without a token", ErrMalformed)
	}
	return tok, nil
}

// b64tokenChar tells the bytes of an RFC 6750 b64token (a table: every
// request's token is checked byte by byte).
var b64tokenChar = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/=", byte(c)) >= 0
	}
	return t
}()

// Challenge maps an error of Verify, VerifyRequest or BearerToken to the
// HTTP status and WWW-Authenticate value of the answer (metadataURL is
// the resource's RFC 9728 metadata URL, see MetadataURL):
//
//   - nil: 200 and "";
//   - ErrNoToken: 401, Bearer resource_metadata="<metadataURL>";
//   - ErrInsufficientScope: 403, Bearer resource_metadata="…",
//     error="insufficient_scope", scope="<the required scopes>";
//   - ErrKeysUnavailable: 503 and "" (the issuer's keys could not be
//     fetched; the token may be good);
//   - any other: 401, Bearer resource_metadata="…", error="invalid_token".
func Challenge(err error, metadataURL string) (status int, wwwAuthenticate string) {
	base := `Bearer resource_metadata=` + quote(metadataURL)
	var se *ScopeError
	switch {
	case err == nil:
		return http.StatusOK, ""
	case errors.Is(err, ErrNoToken):
		return http.StatusUnauthorized, base
	case errors.As(err, &se):
		return http.StatusForbidden, base + `, error="insufficient_scope", scope=` + quote(strings.Join(se.Required, " "))
	case errors.Is(err, ErrInsufficientScope):
		return http.StatusForbidden, base + `, error="insufficient_scope"`
	case errors.Is(err, ErrKeysUnavailable):
		return http.StatusServiceUnavailable, ""
	}
	return http.StatusUnauthorized, base + `, error="invalid_token"`
}

// quote is an RFC 9110 quoted-string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			// not representable; dropped
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// MetadataURL gives the RFC 9728 metadata of a resource URL: the path to
// serve it at (WellKnownPath followed by the resource's path, without a
// trailing slash) and its absolute URL. The resource must be an absolute
// http(s) URL without user info, query or fragment.
//
//	MetadataURL("https://gw.example/mcp") = "/.well-known/oauth-protected-resource/mcp",
//	                                        "https://gw.example/.well-known/oauth-protected-resource/mcp"
func MetadataURL(resourceURL string) (path, metadataURL string, err error) {
	if err := checkHTTPURL(resourceURL); err != nil {
		return "", "", fmt.Errorf("resource URL: %w", err)
	}
	u, _ := url.Parse(resourceURL)
	if u.RawQuery != "" || u.ForceQuery {
		return "", "", fmt.Errorf("resource URL %q: a query is not allowed", resourceURL)
	}
	path = WellKnownPath + strings.TrimSuffix(u.EscapedPath(), "/")
	return path, u.Scheme + "://" + u.Host + path, nil
}

// Metadata is the RFC 9728 protected resource metadata document.
type Metadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
}

// NewMetadata is the document of a resource protected by issuer's
// tokens with the given scopes; bearer tokens in the header only.
func NewMetadata(resourceURL, issuer string, scopes []string) Metadata {
	s := slices.Clone(scopes)
	if s == nil {
		s = []string{}
	}
	return Metadata{Resource: resourceURL, AuthorizationServers: []string{issuer}, ScopesSupported: s,
		BearerMethodsSupported: []string{"header"}}
}

// MetadataHandler serves m as JSON to GET and HEAD (405 otherwise), with
// CORS open to every origin (the document is public, and browser-based
// clients read it). Mount it at the path MetadataURL gives.
func MetadataHandler(m Metadata) http.Handler {
	body, _ := json.Marshal(m)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=300")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		if r.Method == http.MethodGet {
			_, _ = w.Write(body)
		}
	})
}
