package tokenexchange_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/tokenexchange"
)

func TestParseResponse(t *testing.T) {
	for _, tc := range []struct {
		name     string
		status   int
		body     string
		token    string
		lifetime time.Duration
		code     string // of a *RefusedError
		bad      string // in an ErrBadResponse text
	}{
		{name: "exchanged", status: 200, body: `{"access_token":"abc.def","token_type":"Bearer","expires_in":300,"issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}`,
			token: "abc.def", lifetime: 5 * time.Minute},
		{name: "bearer any case, no expiry", status: 200, body: ` {"access_token":"t","token_type":"bearer"} `, token: "t"},
		{name: "fractional expiry", status: 200, body: `{"access_token":"t","token_type":"Bearer","expires_in":1.5}`, token: "t", lifetime: 1500 * time.Millisecond},
		{name: "expiry cut", status: 200, body: `{"access_token":"t","token_type":"Bearer","expires_in":1e12}`, token: "t", lifetime: tokenexchange.MaxLifetime},
		{name: "null expiry", status: 200, body: `{"access_token":"t","token_type":"Bearer","expires_in":null}`, token: "t"},
		{name: "refused", status: 400, body: `{"error":"invalid_grant","error_description":"subject token eve-secret expired"}`, code: "invalid_grant"},
		{name: "refused client", status: 401, body: `{"error":"invalid_client"}`, code: "invalid_client"},
		{name: "hostile code", status: 400, body: `{"error":"bad\"code\n"}`, code: "invalid error code"},
		{name: "long code", status: 400, body: `{"error":"` + strings.Repeat("x", 65) + `"}`, code: "invalid error code"},
		{name: "server error", status: 500, body: `{"error":"server_error"}`, bad: "HTTP 500"},
		{name: "400 not oauth", status: 400, body: `nope`, bad: "HTTP 400"},
		{name: "no token", status: 200, body: `{"token_type":"Bearer"}`, bad: "no access_token"},
		{name: "empty token", status: 200, body: `{"access_token":"","token_type":"Bearer"}`, bad: "no access_token"},
		{name: "token with space", status: 200, body: `{"access_token":"a b","token_type":"Bearer"}`, bad: "visible ASCII"},
		{name: "token too long", status: 200, body: `{"access_token":"` + strings.Repeat("a", tokenexchange.MaxToken+1) + `","token_type":"Bearer"}`, bad: "over"},
		{name: "not bearer", status: 200, body: `{"access_token":"t","token_type":"DPoP"}`, bad: "not Bearer"},
		{name: "no type", status: 200, body: `{"access_token":"t"}`, bad: "not Bearer"},
		{name: "refresh token issued", status: 200, body: `{"access_token":"t","token_type":"Bearer","issued_token_type":"urn:ietf:params:oauth:token-type:refresh_token"}`, bad: "not an access token"},
		{name: "negative expiry", status: 200, body: `{"access_token":"t","token_type":"Bearer","expires_in":-1}`, bad: "expires_in"},
		{name: "string expiry", status: 200, body: `{"access_token":"t","token_type":"Bearer","expires_in":"60"}`, bad: "expires_in"},
		{name: "array", status: 200, body: `[{"access_token":"t"}]`, bad: "not a JSON object"},
		{name: "token not string", status: 200, body: `{"access_token":5,"token_type":"Bearer"}`, bad: "not a token answer"},
		{name: "too large", status: 200, body: strings.Repeat(" ", tokenexchange.MaxResponse+1), bad: "body over"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := tokenexchange.ParseResponse(tc.status, []byte(tc.body))
			var re *tokenexchange.RefusedError
			switch {
			case tc.token != "":
				if err != nil || tok.Value.Reveal() != tc.token || tok.Lifetime != tc.lifetime {
					t.Fatalf("got %v %v, %v; want %q %v", tok.Value.Reveal(), tok.Lifetime, err, tc.token, tc.lifetime)
				}
			case tc.code != "":
				if !errors.As(err, &re) || re.Code != tc.code || !errors.Is(err, tokenexchange.ErrRefused) || re.Status != tc.status {
					t.Fatalf("got %v, want refusal %q", err, tc.code)
				}
				if strings.Contains(err.Error(), "eve-secret") || strings.Contains(err.Error(), "issuertest") {
					t.Fatalf("the error quotes the description: %v", err)
				}
			default:
				if !errors.Is(err, tokenexchange.ErrBadResponse) || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("got %v, want a bad response with %q", err, tc.bad)
				}
			}
		})
	}
}

// A token prints as redacted whatever the verb.
func TestTokenRedacted(t *testing.T) {
	tok, err := tokenexchange.ParseResponse(200, []byte(`{"access_token":"s3cr3t","token_type":"Bearer"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{tok.Value.String(), sprintf("%v %+v %#v %s", tok, tok, tok, tok.Value)} {
		if strings.Contains(s, "s3cr3t") {
			t.Fatalf("printed: %s", s)
		}
	}
}
