package signin

import (
	"strings"
	"testing"
	"time"
)

func FuzzParseChallenge(f *testing.F) {
	for _, s := range []string{`Bearer resource_metadata="https://r/.well-known/oauth-protected-resource"`,
		`Basic realm="x", Bearer error="invalid_token", resource_metadata=https://r/m`, `Bearer`, `Bearer a="\`, strings.Repeat("a=b,", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseChallenge(s)
		if err == nil && u != "" {
			if _, err := absURL(u, "x"); err != nil {
				t.Fatalf("accepted %q", u)
			}
		}
	})
}

func FuzzParseMetadata(f *testing.F) {
	f.Add([]byte(`{"resource":"https://r/mcp","authorization_servers":["https://as"]}`), "https://r/mcp")
	f.Add([]byte(`{"issuer":"https://as","authorization_endpoint":"https://as/a","token_endpoint":"https://as/t","code_challenge_methods_supported":["S256"]}`), "https://as")
	f.Fuzz(func(t *testing.T, body []byte, want string) {
		if md, err := ParseResourceMetadata(body, want); err == nil && (md.Resource != want || len(md.AuthorizationServers) == 0 || len(md.AuthorizationServers) > maxServers) {
			t.Fatalf("accepted %+v", md)
		}
		if md, err := ParseServerMetadata(body, want); err == nil && (md.Issuer != want || md.TokenEndpoint == "" || md.AuthorizationEndpoint == "") {
			t.Fatalf("accepted %+v", md)
		}
	})
}

func FuzzParseTokens(f *testing.F) {
	f.Add(200, []byte(`{"access_token":"a","token_type":"Bearer","expires_in":60,"refresh_token":"r"}`))
	f.Add(400, []byte(`{"error":"invalid_grant"}`))
	f.Add(201, []byte(`{"client_id":"c"}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if tk, err := ParseTokens(status, body); err == nil && (tk.Access.Value.Reveal() == "" || len(tk.Refresh.Reveal()) > 16<<10) {
			t.Fatal("accepted an unusable answer")
		}
		if id, err := ParseRegistration(status, body); err == nil && (id == "" || len(id) > maxClientID) {
			t.Fatalf("accepted client id %q", id)
		}
	})
}

func FuzzOpenState(f *testing.F) {
	k, _ := NewKey([]byte(strings.Repeat("k", 32)))
	s, _ := k.SealState(Pending{Identity: "i s", Backend: "b", Verifier: "v", Redirect: "https://e/cb", Expires: 1 << 40})
	f.Add(s)
	f.Add("fs1.AAAA")
	f.Fuzz(func(t *testing.T, state string) {
		p, err := k.OpenState(state, time.Unix(0, 0))
		if err == nil && state != s && (p.Identity == "" || p.Backend == "") {
			t.Fatal("opened a state it did not seal")
		}
		_, _ = k.OpenRecord(KeyOf("i", "b"), []byte(state))
	})
}
