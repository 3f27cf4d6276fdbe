package credential

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
)

// Auth is a backend's per-caller credentials (the backend's `auth`
// section): with AuthTokenExchange, each caller's calls carry a token the
// edge obtained for that caller at TokenURL (RFC 8693), for Audience and
// Scopes, as ClientID authenticated by ClientSecret. It holds references
// only, as Headers do.
type Auth struct {
	Type     string   `json:"type"`
	TokenURL string   `json:"token_url,omitempty"`
	Audience string   `json:"audience,omitempty"`
	Scopes   []string `json:"scopes,omitempty"`
	ClientID string   `json:"client_id,omitempty"`
	// ClientSecret is a reference; zero for a public client.
	ClientSecret Ref `json:"client_secret,omitzero"`
	// BeforeSignIn is, for AuthUserOAuth, what a caller who has not signed
	// in sees of the backend: BeforeSignInTool (the default) or
	// BeforeSignInHidden.
	BeforeSignIn string `json:"before_sign_in,omitempty"`
}

// Auth types.
const (
	AuthTokenExchange = "token_exchange"
	// AuthUserOAuth: each user signs in to the backend (OAuth 2.1
	// authorization code with PKCE, the edge the client); the authorization
	// server is discovered from the backend (RFC 9728), ClientID is
	// optional (absent: dynamic client registration, RFC 7591).
	AuthUserOAuth = "user_oauth"
)

// Values of Auth.BeforeSignIn.
const (
	BeforeSignInTool   = "sign_in_tool"
	BeforeSignInHidden = "hidden"
)

// Bounds of an Auth section.
const (
	MaxScopes   = 32
	maxScope    = 128
	maxAudience = 1024
	maxClientID = 256
	maxTokenURL = 2048
)

// ErrInvalidAuth is matched by every refusal of Auth.Validate.
var ErrInvalidAuth = errors.New("invalid auth section")

// AuthError is a refusal of Validate naming the field at fault
// ("token_url", "scopes[1]", ...). Its text never quotes a value that may
// be a secret (a client secret is a reference; a malformed one is not
// quoted).
type AuthError struct {
	Field, Msg string
}

func (e *AuthError) Error() string { return e.Field + ": " + e.Msg }

// Unwrap makes errors.Is(err, ErrInvalidAuth) true.
func (e *AuthError) Unwrap() error { return ErrInvalidAuth }

// Validate checks a: its type, a token URL (absolute http(s), no user
// info), a client id, bounded visible-ASCII audience and scopes (RFC 6749
// scope tokens), and a valid client secret reference when given. Errors
// are *AuthError.
func (a *Auth) Validate() error {
	if a == nil {
		return nil
	}
	fail := func(field, format string, args ...any) error {
		return &AuthError{Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	switch a.Type {
	case AuthTokenExchange:
		if a.BeforeSignIn != "" {
			return fail("before_sign_in", "is for %s only", AuthUserOAuth)
		}
	case AuthUserOAuth:
		return a.validateUserOAuth(fail)
	case "":
		return fail("type", "is required (want %s or %s)", AuthTokenExchange, AuthUserOAuth)
	default:
		return fail("type", "%q is not an auth type (want %s or %s)", clipText(a.Type), AuthTokenExchange, AuthUserOAuth)
	}
	if a.TokenURL == "" {
		return fail("token_url", "is required for %s", a.Type)
	}
	u, err := url.Parse(a.TokenURL)
	switch {
	case len(a.TokenURL) > maxTokenURL:
		return fail("token_url", "is over %d bytes", maxTokenURL)
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
		return fail("token_url", "is not an absolute http(s) URL")
	case u.User != nil:
		return fail("token_url", "must not carry user info (use client_id and client_secret)")
	case u.Fragment != "":
		return fail("token_url", "must not have a fragment")
	}
	if a.ClientID == "" {
		return fail("client_id", "is required for %s", a.Type)
	}
	if len(a.ClientID) > maxClientID || !visible(a.ClientID, true) {
		return fail("client_id", "want at most %d printable ASCII characters", maxClientID)
	}
	if len(a.Audience) > maxAudience || !visible(a.Audience, true) {
		return fail("audience", "want at most %d printable ASCII characters", maxAudience)
	}
	return a.validateClient(fail)
}

// validateUserOAuth checks a user_oauth section: no token_url or
// audience (the backend's metadata names its authorization server and
// resource), an optional client id, scopes, a client secret reference
// and before_sign_in.
func (a *Auth) validateUserOAuth(fail func(field, format string, args ...any) error) error {
	switch {
	case a.TokenURL != "":
		return fail("token_url", "is not for %s (the authorization server is discovered from the backend)", AuthUserOAuth)
	case a.Audience != "":
		return fail("audience", "is not for %s (the resource is the backend's own)", AuthUserOAuth)
	case a.BeforeSignIn != "" && a.BeforeSignIn != BeforeSignInTool && a.BeforeSignIn != BeforeSignInHidden:
		return fail("before_sign_in", "%q is not a choice (want %s or %s)", clipText(a.BeforeSignIn), BeforeSignInTool, BeforeSignInHidden)
	case len(a.ClientID) > maxClientID || !visible(a.ClientID, true):
		return fail("client_id", "want at most %d printable ASCII characters", maxClientID)
	case a.ClientID == "" && a.ClientSecret != (Ref{}):
		return fail("client_secret", "needs a client_id (a registered client gets its own)")
	}
	return a.validateClient(fail)
}

// validateClient checks the scopes and the client secret reference.
func (a *Auth) validateClient(fail func(field, format string, args ...any) error) error {
	if len(a.Scopes) > MaxScopes {
		return fail("scopes", "%d scopes, limit %d", len(a.Scopes), MaxScopes)
	}
	for i, s := range a.Scopes {
		if s == "" || len(s) > maxScope || !visible(s, false) || containsAny(s, `"\`) {
			return fail(fmt.Sprintf("scopes[%d]", i), "want a scope token of at most %d characters (no space, quote or backslash)", maxScope)
		}
		if slices.Index(a.Scopes, s) != i {
			return fail(fmt.Sprintf("scopes[%d]", i), "scope %q is given twice", s)
		}
	}
	if a.ClientSecret != (Ref{}) {
		if err := a.ClientSecret.Validate(); err != nil {
			return fail("client_secret", "%s", err.Error())
		}
	}
	return nil
}

// Equal reports whether a and o are the same section (both nil included).
func (a *Auth) Equal(o *Auth) bool {
	if a == nil || o == nil {
		return a == o
	}
	return a.Type == o.Type && a.TokenURL == o.TokenURL && a.Audience == o.Audience && slices.Equal(a.Scopes, o.Scopes) &&
		a.ClientID == o.ClientID && a.ClientSecret == o.ClientSecret && a.BeforeSignIn == o.BeforeSignIn
}

// Clone returns a copy sharing nothing with a (nil for nil).
func (a *Auth) Clone() *Auth {
	if a == nil {
		return nil
	}
	c := *a
	c.Scopes = slices.Clone(a.Scopes)
	return &c
}

// PerCaller reports whether a makes the backend's calls carry each
// caller's own credentials (a session per identity).
func (a *Auth) PerCaller() bool {
	return a != nil && (a.Type == AuthTokenExchange || a.Type == AuthUserOAuth)
}

// Exchanges reports whether each caller's token is obtained by token
// exchange (the controller probes with a client credentials grant).
func (a *Auth) Exchanges() bool { return a != nil && a.Type == AuthTokenExchange }

// SignIn reports whether each user signs in to the backend (user_oauth).
func (a *Auth) SignIn() bool { return a != nil && a.Type == AuthUserOAuth }

// HiddenBeforeSignIn reports whether a user_oauth backend shows nothing
// (not even a sign-in tool) to a caller who has not signed in.
func (a *Auth) HiddenBeforeSignIn() bool { return a.SignIn() && a.BeforeSignIn == BeforeSignInHidden }

func visible(s string, spaces bool) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || (!spaces && c == ' ') {
			return false
		}
	}
	return true
}

func containsAny(s, chars string) bool {
	for i := 0; i < len(s); i++ {
		for j := 0; j < len(chars); j++ {
			if s[i] == chars[j] {
				return true
			}
		}
	}
	return false
}

func clipText(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}
