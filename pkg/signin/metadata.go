package signin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Bounds of what discovery reads.
const (
	// MaxDocument is the largest metadata document read, in bytes.
	MaxDocument = 64 << 10
	// MaxChallenge is the longest WWW-Authenticate value parsed.
	MaxChallenge = 8 << 10
	// maxURL is the longest URL taken from a document or a challenge.
	maxURL = 2048
	// maxServers is the most authorization servers of a resource read.
	maxServers = 8
	// maxParams bounds the auth-params of one challenge.
	maxParams = 32
)

// ErrBadMetadata wraps every refusal of a challenge or a document.
var ErrBadMetadata = errors.New("unusable OAuth metadata")

// ResourceMetadata is what this package uses of an RFC 9728 protected
// resource metadata document.
type ResourceMetadata struct {
	Resource             string
	AuthorizationServers []string
}

// ServerMetadata is what this package uses of an RFC 8414 authorization
// server metadata document.
type ServerMetadata struct {
	Issuer                string
	AuthorizationEndpoint string
	TokenEndpoint         string
	RegistrationEndpoint  string // "" when the server takes no registration
}

// ParseChallenge returns the resource_metadata URL of a Bearer challenge
// in a WWW-Authenticate value (RFC 9728 section 5.1), "" when it has
// none. A value over MaxChallenge bytes or malformed is refused.
func ParseChallenge(header string) (string, error) {
	if len(header) > MaxChallenge {
		return "", fmt.Errorf("%w: challenge over %d bytes", ErrBadMetadata, MaxChallenge)
	}
	s := header
	for s != "" {
		s = strings.TrimLeft(s, " ,")
		scheme, rest, _ := strings.Cut(s, " ")
		params, after, err := authParams(rest)
		if err != nil {
			return "", err
		}
		if strings.EqualFold(scheme, "Bearer") {
			if v, ok := params["resource_metadata"]; ok {
				if _, err := absURL(v, "resource_metadata"); err != nil {
					return "", err
				}
				return v, nil
			}
		}
		if after == s {
			break
		}
		s = after
	}
	return "", nil
}

// authParams reads the auth-params (name=token or name="quoted") at the
// start of s, up to the next challenge; it returns them and the rest.
func authParams(s string) (map[string]string, string, error) {
	params := map[string]string{}
	for n := 0; ; n++ {
		s = strings.TrimLeft(s, " ,")
		eq := strings.IndexByte(s, '=')
		if eq <= 0 || strings.ContainsAny(s[:eq], " ,\"") {
			return params, s, nil // the next challenge's scheme (or the end)
		}
		if n >= maxParams {
			return nil, "", fmt.Errorf("%w: over %d challenge parameters", ErrBadMetadata, maxParams)
		}
		name := strings.ToLower(s[:eq])
		s = s[eq+1:]
		var v string
		if strings.HasPrefix(s, `"`) {
			var b strings.Builder
			i := 1
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				b.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, "", fmt.Errorf("%w: unterminated quoted challenge parameter", ErrBadMetadata)
			}
			v, s = b.String(), s[i+1:]
		} else {
			end := strings.IndexAny(s, " ,")
			if end < 0 {
				end = len(s)
			}
			v, s = s[:end], s[end:]
		}
		params[name] = v
	}
}

// ParseResourceMetadata reads a protected resource metadata document
// (at most MaxDocument bytes): its resource must be resource (the
// backend's URL as configured, RFC 9728 section 3.3) and it must name an
// authorization server (absolute https or http URLs, at most maxServers
// read).
func ParseResourceMetadata(body []byte, resource string) (ResourceMetadata, error) {
	var doc struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := decodeObject(body, &doc); err != nil {
		return ResourceMetadata{}, fmt.Errorf("protected resource metadata: %w", err)
	}
	if doc.Resource != resource {
		return ResourceMetadata{}, fmt.Errorf("%w: protected resource metadata names another resource", ErrBadMetadata)
	}
	md := ResourceMetadata{Resource: doc.Resource}
	for _, s := range doc.AuthorizationServers {
		if len(md.AuthorizationServers) == maxServers {
			break
		}
		if _, err := absURL(s, "authorization_servers"); err != nil {
			return ResourceMetadata{}, err
		}
		md.AuthorizationServers = append(md.AuthorizationServers, s)
	}
	if len(md.AuthorizationServers) == 0 {
		return ResourceMetadata{}, fmt.Errorf("%w: protected resource metadata names no authorization server", ErrBadMetadata)
	}
	return md, nil
}

// ParseServerMetadata reads an authorization server metadata document
// (at most MaxDocument bytes): its issuer must be issuer (RFC 8414
// section 3.3), its authorization and token endpoints absolute URLs, and
// it must support S256 PKCE when it lists methods (OAuth 2.1 requires
// PKCE; an absent list is taken as S256, as the MCP specification's
// clients may).
func ParseServerMetadata(body []byte, issuer string) (ServerMetadata, error) {
	var doc struct {
		Issuer                string   `json:"issuer"`
		AuthorizationEndpoint string   `json:"authorization_endpoint"`
		TokenEndpoint         string   `json:"token_endpoint"`
		RegistrationEndpoint  string   `json:"registration_endpoint"`
		CodeChallengeMethods  []string `json:"code_challenge_methods_supported"`
	}
	if err := decodeObject(body, &doc); err != nil {
		return ServerMetadata{}, fmt.Errorf("authorization server metadata: %w", err)
	}
	if doc.Issuer != issuer {
		return ServerMetadata{}, fmt.Errorf("%w: authorization server metadata names another issuer", ErrBadMetadata)
	}
	md := ServerMetadata{Issuer: doc.Issuer}
	for _, f := range []struct {
		v, name string
		dst     *string
	}{{doc.AuthorizationEndpoint, "authorization_endpoint", &md.AuthorizationEndpoint},
		{doc.TokenEndpoint, "token_endpoint", &md.TokenEndpoint}} {
		if _, err := absURL(f.v, f.name); err != nil {
			return ServerMetadata{}, err
		}
		*f.dst = f.v
	}
	if doc.RegistrationEndpoint != "" {
		if _, err := absURL(doc.RegistrationEndpoint, "registration_endpoint"); err != nil {
			return ServerMetadata{}, err
		}
		md.RegistrationEndpoint = doc.RegistrationEndpoint
	}
	if doc.CodeChallengeMethods != nil && !contains(doc.CodeChallengeMethods, "S256") {
		return ServerMetadata{}, fmt.Errorf("%w: the authorization server does not support S256 PKCE", ErrBadMetadata)
	}
	return md, nil
}

// decodeObject decodes a bounded JSON object into v.
func decodeObject(body []byte, v any) error {
	if len(body) > MaxDocument {
		return fmt.Errorf("%w: over %d bytes", ErrBadMetadata, MaxDocument)
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return fmt.Errorf("%w: not a JSON object", ErrBadMetadata)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: not a metadata document", ErrBadMetadata)
	}
	return nil
}

// absURL parses an absolute http(s) URL without user info or fragment of
// at most maxURL bytes; errors name the field, never the value.
func absURL(s, field string) (*url.URL, error) {
	if len(s) > maxURL {
		return nil, fmt.Errorf("%w: %s over %d bytes", ErrBadMetadata, field, maxURL)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Fragment != "" || u.Opaque != "" {
		return nil, fmt.Errorf("%w: %s is not an absolute http(s) URL", ErrBadMetadata, field)
	}
	return u, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
