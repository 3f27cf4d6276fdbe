package tokenexchange_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/tokenexchange"
)

// FuzzParseResponse: any answer gives a usable token or an error of the
// package's kinds, never a panic, and no error quotes the body's token.
func FuzzParseResponse(f *testing.F) {
	f.Add(200, []byte(`{"access_token":"abc","token_type":"Bearer","expires_in":60}`))
	f.Add(400, []byte(`{"error":"invalid_grant","error_description":"x"}`))
	f.Add(401, []byte(`{"error":"\u0000"}`))
	f.Add(200, []byte(`{"access_token":"a","token_type":"Bearer","expires_in":1e400}`))
	f.Add(200, []byte(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		tok, err := tokenexchange.ParseResponse(status, body)
		if err == nil {
			v := tok.Value.Reveal()
			if v == "" || len(v) > tokenexchange.MaxToken || strings.ContainsAny(v, " \t\r\n") || tok.Lifetime < 0 ||
				tok.Lifetime > tokenexchange.MaxLifetime {
				t.Fatalf("accepted %q lifetime %v", v, tok.Lifetime)
			}
			return
		}
		if !errors.Is(err, tokenexchange.ErrRefused) && !errors.Is(err, tokenexchange.ErrBadResponse) {
			t.Fatalf("error of another kind: %v", err)
		}
		if len(err.Error()) > 200 {
			t.Fatalf("error text of %d bytes", len(err.Error()))
		}
	})
}
