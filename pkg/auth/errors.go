package auth

import (
	"errors"
	"strings"
)

// The refusal reasons of Verify. Every error Verify returns wraps exactly
// one of them (errors.Is); Reason names it for metrics and logs, and
// Challenge maps it to the HTTP answer. The texts never carry the token.
var (
	// ErrNoToken: the request carries no bearer token. 401 without an
	// error attribute.
	ErrNoToken = errors.New("no bearer token")
	// ErrMalformed: not a compact JWS, too large, too deeply nested, an
	// algorithm outside the allowlist (none and HS* always are), a
	// missing sub or exp claim, or claims of the wrong type.
	ErrMalformed = errors.New("malformed token")
	// ErrBadSignature: the signature does not verify with the key named
	// by the token's kid.
	ErrBadSignature = errors.New("bad token signature")
	// ErrUnknownKey: no key of the issuer's JWKS matches the token's kid
	// and algorithm, even after a refetch (or a refetch was not allowed
	// yet by the rate limit).
	ErrUnknownKey = errors.New("unknown token signing key")
	// ErrWrongIssuer: iss is not the configured issuer.
	ErrWrongIssuer = errors.New("wrong token issuer")
	// ErrWrongAudience: aud does not contain the configured audience.
	ErrWrongAudience = errors.New("wrong token audience")
	// ErrExpired: exp is past (beyond the leeway).
	ErrExpired = errors.New("token expired")
	// ErrNotYetValid: nbf or iat is in the future (beyond the leeway).
	ErrNotYetValid = errors.New("token not yet valid")
	// ErrInsufficientScope: a required scope is missing; the error is a
	// *ScopeError. 403.
	ErrInsufficientScope = errors.New("insufficient scope")
	// ErrKeysUnavailable: the issuer's keys have never been fetched
	// successfully (discovery or JWKS failed), so no token can be
	// verified. 503: the client's token may well be good.
	ErrKeysUnavailable = errors.New("token signing keys unavailable")
)

// ScopeError is the error of a token without every required scope.
type ScopeError struct {
	// Required are the scopes every token must carry (the configured
	// ones), Missing those this token lacks.
	Required, Missing []string
}

func (e *ScopeError) Error() string {
	return "insufficient scope: token lacks " + strings.Join(e.Missing, " ")
}

// Is makes errors.Is(err, ErrInsufficientScope) hold.
func (e *ScopeError) Is(target error) bool { return target == ErrInsufficientScope }

var reasons = []struct {
	err  error
	name string
}{
	{ErrNoToken, "no_token"},
	{ErrMalformed, "malformed"},
	{ErrBadSignature, "bad_signature"},
	{ErrUnknownKey, "unknown_key"},
	{ErrWrongIssuer, "wrong_issuer"},
	{ErrWrongAudience, "wrong_audience"},
	{ErrExpired, "expired"},
	{ErrNotYetValid, "not_yet_valid"},
	{ErrInsufficientScope, "insufficient_scope"},
	{ErrKeysUnavailable, "keys_unavailable"},
}

// Reason names the refusal reason of an error of Verify, a fixed label
// fit for a metric ("no_token", "malformed", "bad_signature",
// "unknown_key", "wrong_issuer", "wrong_audience", "expired",
// "not_yet_valid", "insufficient_scope", "keys_unavailable"); "ok" for
// nil and "other" for anything else.
func Reason(err error) string {
	if err == nil {
		return "ok"
	}
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.name
		}
	}
	return "other"
}
