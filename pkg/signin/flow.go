package signin

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// StateLifetime is how long a sign-in may take, from the authorization
// URL to the callback.
const StateLifetime = 10 * time.Minute

// Bounds of a state.
const (
	// MaxState is the longest state taken by OpenState.
	MaxState    = 8 << 10
	statePrefix = "fs1."
)

// ErrExpired: a state past its lifetime.
var ErrExpired = errors.New("sign-in state expired (sign in again)")

// Pending is a sign-in begun: who, to which backend, and what the
// callback needs to finish it (sealed into the state).
type Pending struct {
	Identity string `json:"i"`
	Backend  string `json:"b"`
	Verifier string `json:"v"` // the PKCE code verifier
	ClientID string `json:"c"`
	// TokenEndpoint and Resource are the discovered token endpoint and
	// the backend's resource identifier (RFC 8707).
	TokenEndpoint string `json:"t"`
	Resource      string `json:"r"`
	// Redirect is the redirect URI the authorization request named (the
	// code is redeemed with it, whichever edge the callback reaches).
	Redirect string `json:"u"`
	// Elicitation is the id of the URL-mode elicitation that asked the
	// user to sign in ("" for none): the client is told it completed.
	Elicitation string `json:"x,omitempty"`
	// Bind names this sign-in in the browser binding's cookie
	// (binding.go; "" for an unbound sign-in). AuthEndpoint and Scopes
	// make the backend's authorization URL once the browser is bound.
	Bind         string   `json:"n,omitempty"`
	AuthEndpoint string   `json:"a,omitempty"`
	Scopes       []string `json:"s,omitempty"`
	Expires      int64    `json:"e"` // unix seconds
}

// NewVerifier is a PKCE code verifier (RFC 7636: 43 characters of the
// unreserved set, 256 bits).
func NewVerifier() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Challenge is the S256 code challenge of verifier.
func Challenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// SealState is the state parameter carrying p.
func (k *Key) SealState(p Pending) (string, error) {
	plain, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("seal state: %w", err)
	}
	return statePrefix + base64.RawURLEncoding.EncodeToString(seal(k.state, plain, aad(labelState))), nil
}

// OpenState returns the Pending sealed in state by a Key of the same
// secret, when not expired at now.
func (k *Key) OpenState(state string, now time.Time) (Pending, error) {
	if len(state) > MaxState {
		return Pending{}, fmt.Errorf("open state: %d bytes: %w", len(state), ErrMalformed)
	}
	enc, ok := strings.CutPrefix(state, statePrefix)
	if !ok {
		return Pending{}, fmt.Errorf("open state: %w", ErrMalformed)
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return Pending{}, fmt.Errorf("open state: %w", ErrMalformed)
	}
	plain, err := open(k.state, raw, aad(labelState))
	if err != nil {
		return Pending{}, fmt.Errorf("open state: %w", err)
	}
	var p Pending
	if err := json.Unmarshal(plain, &p); err != nil || p.Identity == "" || p.Backend == "" || p.Verifier == "" || p.Redirect == "" {
		return Pending{}, fmt.Errorf("open state: %w", ErrMalformed)
	}
	if now.Unix() > p.Expires {
		return Pending{}, fmt.Errorf("open state: %w", ErrExpired)
	}
	return p, nil
}

// AuthorizationURL is the URL a user opens to sign in: the authorization
// endpoint with the code flow's parameters (RFC 6749 4.1.1, RFC 7636,
// RFC 8707 resource).
func AuthorizationURL(endpoint, clientID, redirect, state, verifier, resource string, scopes []string) (string, error) {
	u, err := absURL(endpoint, "authorization_endpoint")
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("response_type", "code")
	q.Set("client_id", clientID)
	q.Set("redirect_uri", redirect)
	q.Set("state", state)
	q.Set("code_challenge", Challenge(verifier))
	q.Set("code_challenge_method", "S256")
	if resource != "" {
		q.Set("resource", resource)
	}
	if len(scopes) > 0 {
		q.Set("scope", strings.Join(scopes, " "))
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// CallbackURL is the redirect URI of an edge whose public base URL is
// base: base + CallbackPath.
func CallbackURL(base string) string { return strings.TrimSuffix(base, "/") + CallbackPath }

// CallbackPath is the path of the sign-in callback on the MCP listener.
const CallbackPath = "/oauth/callback"
