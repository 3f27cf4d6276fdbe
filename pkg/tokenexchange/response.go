package tokenexchange

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/fleetgate/fleetgate/pkg/credential"
)

// Bounds of an answer of a token endpoint.
const (
	// MaxResponse is the largest answer body read, in bytes.
	MaxResponse = 64 << 10
	// MaxToken is the longest access token taken, in bytes.
	MaxToken = 16 << 10
	// MaxLifetime is the longest expires_in taken; a longer one is cut
	// to it.
	MaxLifetime = 24 * time.Hour
	// maxCode is the longest error code reported.
	maxCode = 64
)

// Token types of RFC 8693 (section 3).
const (
	TypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
	grantExchange   = "urn:ietf:params:oauth:grant-type:token-exchange"
	grantClient     = "client_credentials"
)

// Token is an access token a token endpoint issued.
type Token struct {
	// Value is the token; it prints as credential.Redacted.
	Value credential.Secret
	// Lifetime is the answer's expires_in; 0 when it had none.
	Lifetime time.Duration
}

// ErrRefused is matched by a *RefusedError.
var ErrRefused = errors.New("token endpoint refused the request")

// ErrBadResponse is matched by every answer that is neither a usable
// token nor an OAuth error.
var ErrBadResponse = errors.New("token endpoint answer unusable")

// RefusedError is an OAuth error answer (RFC 6749 section 5.2) of a token
// endpoint. Its text carries the `error` code, which is a registered
// ASCII word (any other is replaced by "invalid error code"), and the
// HTTP status; never the error_description, which is the endpoint's free
// text.
type RefusedError struct {
	Status int
	Code   string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%v: error %q (HTTP %d)", ErrRefused, e.Code, e.Status)
}

// Unwrap makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Unwrap() error { return ErrRefused }

// tokenAnswer is a successful answer (RFC 6749 section 5.1, RFC 8693
// section 2.2.1).
type tokenAnswer struct {
	AccessToken     *string          `json:"access_token"`
	TokenType       string           `json:"token_type"`
	ExpiresIn       *json.RawMessage `json:"expires_in"`
	IssuedTokenType string           `json:"issued_token_type"`
}

// errorAnswer is an error answer.
type errorAnswer struct {
	Error string `json:"error"`
}

// ParseResponse reads the answer of a token endpoint: status and body
// (at most MaxResponse bytes, which the caller bounds). A 200 answer must
// be a JSON object with an access_token (a visible ASCII string of at
// most MaxToken bytes), a token_type of Bearer (any case) and, when
// present, an issued_token_type of an access token and a positive
// expires_in. A 400 or 401 answer with an `error` is a *RefusedError; any
// other answer wraps ErrBadResponse. No error quotes the body.
func ParseResponse(status int, body []byte) (Token, error) {
	if len(body) > MaxResponse {
		return Token{}, fmt.Errorf("%w: body over %d bytes", ErrBadResponse, MaxResponse)
	}
	body = bytes.TrimSpace(body)
	if status != 200 {
		var ea errorAnswer
		if (status == 400 || status == 401) && len(body) > 0 && body[0] == '{' && json.Unmarshal(body, &ea) == nil && ea.Error != "" {
			return Token{}, &RefusedError{Status: status, Code: cleanCode(ea.Error)}
		}
		return Token{}, fmt.Errorf("%w: HTTP %d", ErrBadResponse, status)
	}
	if len(body) == 0 || body[0] != '{' {
		return Token{}, fmt.Errorf("%w: not a JSON object", ErrBadResponse)
	}
	var ta tokenAnswer
	if err := json.Unmarshal(body, &ta); err != nil {
		return Token{}, fmt.Errorf("%w: not a token answer", ErrBadResponse)
	}
	switch {
	case ta.AccessToken == nil || *ta.AccessToken == "":
		return Token{}, fmt.Errorf("%w: no access_token", ErrBadResponse)
	case len(*ta.AccessToken) > MaxToken:
		return Token{}, fmt.Errorf("%w: access_token over %d bytes", ErrBadResponse, MaxToken)
	case !visibleASCII(*ta.AccessToken):
		return Token{}, fmt.Errorf("%w: access_token is not visible ASCII", ErrBadResponse)
	case !strings.EqualFold(ta.TokenType, "bearer"):
		return Token{}, fmt.Errorf("%w: token_type %q is not Bearer", ErrBadResponse, clip(ta.TokenType))
	case ta.IssuedTokenType != "" && ta.IssuedTokenType != TypeAccessToken:
		return Token{}, fmt.Errorf("%w: issued_token_type %q is not an access token", ErrBadResponse, clip(ta.IssuedTokenType))
	}
	t := Token{Value: credential.NewSecret(*ta.AccessToken)}
	if ta.ExpiresIn != nil && string(*ta.ExpiresIn) != "null" {
		var secs float64
		if err := json.Unmarshal(*ta.ExpiresIn, &secs); err != nil || secs <= 0 || math.IsNaN(secs) {
			return Token{}, fmt.Errorf("%w: expires_in is not a positive number", ErrBadResponse)
		}
		t.Lifetime = MaxLifetime
		if secs < MaxLifetime.Seconds() {
			t.Lifetime = time.Duration(secs * float64(time.Second))
		}
	}
	return t, nil
}

// cleanCode is an error code as RFC 6749 allows it (%x20-21 / %x23-5B /
// %x5D-7E), at most maxCode bytes; "invalid error code" otherwise.
func cleanCode(s string) string {
	if s == "" || len(s) > maxCode {
		return "invalid error code"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return "invalid error code"
		}
	}
	return s
}

// clip bounds a value of the answer quoted in an error (a type name).
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
